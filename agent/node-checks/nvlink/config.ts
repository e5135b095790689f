/**
 * The NVLink check's settings (agent config section `nvlink` of the node checks).
 */
import { z } from 'zod';
import type { DeepReadonly } from '../../../platform/index.js';

/** The NVLink check's settings. */
export const nvlinkCheckConfigSchema = z.strictObject({
  enabled: z
    .union([z.literal('auto'), z.boolean()])
    .default('auto')
    .describe('check the GPUs’ NVLinks with nvidia-smi; auto: on nodes whose collector is nvidia-smi'),
  intervalMs: z
    .number()
    .int()
    .min(1000)
    .max(3_600_000)
    .default(30_000)
    .describe('time between two runs of `nvidia-smi nvlink --status`'),
  command: z
    .string()
    .min(1)
    .default('nvidia-smi')
    .describe('nvidia-smi (a name on PATH or a path); run as `<command> nvlink --status`'),
  timeoutMs: z
    .number()
    .int()
    .min(100)
    .max(120_000)
    .default(10_000)
    .describe('a run taking longer is killed (with its process group) and counted as a timeout'),
  comparePeers: z
    .boolean()
    .default(true)
    .describe(
      'also call a GPU’s inactive link down when every other GPU (two at least) has that link up, so a link down before the agent started is found; turn off on boards whose GPUs are wired differently',
    ),
});

/** The NVLink check's settings after defaults. */
export type NvlinkCheckConfig = DeepReadonly<z.output<typeof nvlinkCheckConfigSchema>>;

/**
 * Whether the agent should run the NVLink check: when enabled, or on `auto` when the node's
 * collector (as resolved from `--collector auto`) is nvidia-smi.
 */
export function nvlinkCheckWanted(config: Pick<NvlinkCheckConfig, 'enabled'>, collector: string): boolean {
  return config.enabled === true || (config.enabled === 'auto' && collector === 'nvidia-smi');
}

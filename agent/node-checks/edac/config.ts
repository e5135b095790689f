/**
 * The host memory ECC check's settings (agent config section `edac`).
 */
import { z } from 'zod';
import type { DeepReadonly } from '../../../platform/index.js';
import { absolutePath } from '../config-fields.js';

export const edacCheckConfigSchema = z.strictObject({
  enabled: z.boolean().default(true).describe("watch host memory ECC through the kernel's EDAC counters"),
  intervalMs: z
    .number()
    .int()
    .min(1000)
    .max(3_600_000)
    .default(10000)
    .describe('time between two reads of the EDAC counters'),
  sysfsRoot: absolutePath()
    .default('/sys')
    .describe('where sysfs is seen (devices/system/edac/mc/mc<N>/ce_count|ue_count are read under it)'),
  correctablePerHour: z
    .number()
    .int()
    .min(1)
    .default(100)
    .describe(
      'correctable errors of one memory controller within the last hour that make a problem (a storm; a slow trickle is for the metric and DIMM replacement policy)',
    ),
  holdSeconds: z
    .number()
    .int()
    .min(60)
    .max(30 * 86400)
    .default(86400)
    .describe('an uncorrectable error stays a problem this long after it was counted'),
});

/** The host memory ECC check's settings after defaults. */
export type EdacCheckConfig = DeepReadonly<z.output<typeof edacCheckConfigSchema>>;

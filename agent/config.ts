/**
 * The node agent's configuration: flags > NPU_FAULT_* environment > a YAML/JSON file
 * (--config) > these defaults (platform/config.ts). Each collector has its own section
 * (node-problem-detector's per-monitor shape); only the chosen one is used.
 */
import { z } from 'zod';
import { FAMILIES } from '../families/index.js';
import { listenAddressSchema, logLevelSchema, type DeepReadonly } from '../platform/index.js';
import {
  hdcCollectorConfigSchema,
  npuSmiCollectorConfigSchema,
  nvidiaSmiCollectorConfigSchema,
} from './collectors/index.js';
import { canaryConfigSchema } from './canary/index.js';
import { edacCheckConfigSchema } from './node-checks/edac/index.js';
import { filesystemsCheckConfigSchema } from './node-checks/filesystems/index.js';
import { kernelCheckConfigSchema } from './node-checks/kernel/index.js';
import { linksCheckConfigSchema } from './node-checks/links/index.js';
import { networkCheckConfigSchema } from './node-checks/network/index.js';
import { nvlinkCheckConfigSchema } from './node-checks/nvlink/index.js';
import { podResourcesConfigSchema } from './pod-resources/index.js';

/** The collectors `--collector` chooses from. */
export const COLLECTOR_KINDS = ['auto', 'hdc', 'npu-smi', 'nvidia-smi', 'sim'] as const;
/** One of COLLECTOR_KINDS. */
export type CollectorKind = (typeof COLLECTOR_KINDS)[number];

/** Kinds of simulated node `--collector sim` can be: every family's (`910B`, `A3`, `310P`, `nvidia`). */
export const SIM_NODE_KINDS = FAMILIES.simKinds;

/** Where the kubelet projects the agent's pod-bound token in the shipped DaemonSet. */
export const DEFAULT_TOKEN_FILE = '/var/run/secrets/npu-fault/token';

const NODE_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * What is wrong with a library search path (`/a:/b`), or undefined. Every entry must be an
 * absolute directory: an empty entry (`::`, a leading or trailing `:`) or a relative one makes
 * the dynamic loader search the tool's working directory.
 */
export function libraryPathProblem(value: string): string | undefined {
  if (value.trim() === '') return 'must name at least one absolute directory';
  if (/[\0\r\n]/.test(value)) return 'must be one line';
  for (const dir of value.split(':')) {
    if (dir === '') return 'has an empty entry (the loader would search the working directory)';
    if (!dir.startsWith('/')) return `"${dir.slice(0, 80)}" is not an absolute directory`;
  }
  return undefined;
}

/** Whether a listen host is a loopback address (none: every interface, so not). */
export function isLoopback(host: string | undefined): boolean {
  if (host === undefined) return false;
  const bare = host.toLowerCase().replace(/^::ffff:/, '');
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** The agent's settings. */
export const agentConfigSchema = z
  .strictObject({
    node: z
      .string()
      .max(253)
      .regex(NODE_NAME, 'must be a Kubernetes node name (lower-case DNS subdomain)')
      .describe('this node’s name (the DaemonSet sets it from spec.nodeName)'),
    functionUrl: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
      .describe('the ingest function’s base URL (POST <url>/v1/snapshots)'),
    tokenFile: z
      .string()
      .min(1)
      .default(DEFAULT_TOKEN_FILE)
      .describe('the pod-bound ServiceAccount token (audience npu-fault), re-read for every push'),
    toolLibraryPath: z
      .string()
      .optional()
      .superRefine((value, ctx) => {
        const problem = value === undefined ? undefined : libraryPathProblem(value);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .describe(
        "the drivers' library directories (/a:/b), put first in LD_LIBRARY_PATH of the tools only (hdc, npu-smi, nvidia-smi), never of the agent",
      ),
    collector: z
      .enum(COLLECTOR_KINDS)
      .default('auto')
      .describe(
        'how the devices are read; auto: nvidia-smi on NVIDIA nodes, hdc where installed else npu-smi on Ascend nodes',
      ),
    listen: listenAddressSchema
      .prefault(':8081')
      .describe('node-local HTTP: /v1/health, /v1/fault, /v1/fault/stream, /healthz, /readyz, /metrics'),
    logLevel: logLevelSchema.default('info').describe('log level'),
    shutdownGraceSeconds: z
      .number()
      .positive()
      .default(12)
      .describe('on SIGTERM, how long the last push (up to twice push.timeoutMs) may take'),
    heapTrimSeconds: z
      .number()
      .min(0)
      .max(3600)
      .default(60)
      .describe('run a full garbage collection this often, so memory stays near live data (0: never)'),
    sampling: z.strictObject({
      intervalMs: z.number().int().min(100).default(1000).describe('time between samples'),
      jitterMs: z
        .number()
        .int()
        .nonnegative()
        .default(100)
        .describe('each interval varies by up to this, so agents do not sample in lock-step'),
      keepAliveMs: z
        .number()
        .int()
        .min(100)
        .default(1500)
        .describe(
          'a sample waits on a slow or hanging tool at most this long after the last snapshot; then the cached or a liveness snapshot goes (the controllers call a node silent after 5 s)',
        ),
    }),
    probe: z.strictObject({
      timeoutMs: z.number().int().positive().default(3000).describe('a tool run taking longer is killed'),
      retries: z.number().int().min(0).max(10).default(2).describe('extra attempts when a tool run fails'),
      cacheTtlSeconds: z
        .number()
        .nonnegative()
        .default(30)
        .describe('while the tool fails, resend the last good sample (cached: true) for this long'),
      warmupSeconds: z
        .number()
        .nonnegative()
        .default(5)
        .describe('discard the first sample read within this of the start'),
    }),
    hdc: hdcCollectorConfigSchema,
    npuSmi: npuSmiCollectorConfigSchema,
    nvidiaSmi: nvidiaSmiCollectorConfigSchema,
    sim: z.strictObject({
      enabled: z
        .boolean()
        .default(false)
        .describe('allow --collector sim and its fault-injection API (never in production)'),
      kind: z.enum(SIM_NODE_KINDS).default('910B').describe('the simulated node’s accelerators'),
      seed: z.string().min(1).default('1').describe('seed of the simulated readings'),
      faultTokenFile: z
        .string()
        .min(1)
        .optional()
        .describe(
          'a file holding the bearer token the fault-injection API requires (16+ characters); required unless --listen is a loopback address',
        ),
    }),
    inventory: z.strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe('report installed devices the tool leaves out as present: false'),
      sysPciDevices: z.string().min(1).default('/sys/bus/pci/devices').describe('sysfs PCI devices'),
      dev: z.string().min(1).default('/dev').describe('device nodes (davinciN, nvidiaN)'),
    }),
    events: z.strictObject({
      kmsg: z.boolean().default(true).describe('follow the kernel log for XIDs, PCIe AER and device removal'),
      kmsgPath: z.string().min(1).default('/dev/kmsg').describe('the kernel log (or a file, for tests)'),
      deviceNodes: z.boolean().default(true).describe('watch for device nodes disappearing'),
    }),
    push: z.strictObject({
      timeoutMs: z.number().int().positive().default(5000).describe('one push may take this long'),
      maxQueue: z
        .number()
        .int()
        .positive()
        .default(60)
        .describe('snapshots waiting while the function is unreachable; the oldest is dropped'),
      backoffInitialMs: z.number().int().positive().default(200).describe('first retry delay'),
      backoffMaxMs: z.number().int().positive().default(10000).describe('longest retry delay'),
    }),
    canary: canaryConfigSchema,
    // Which pods hold which device (docs/pod-resources.md); a simulated node never reads it.
    podResources: podResourcesConfigSchema,
    // The node checks (docs/node-checks.md), one section each; a simulated node runs none of them.
    nodeChecks: z.strictObject({
      network: networkCheckConfigSchema,
      links: linksCheckConfigSchema,
      nvlink: nvlinkCheckConfigSchema,
      edac: edacCheckConfigSchema,
      kernel: kernelCheckConfigSchema,
      filesystems: filesystemsCheckConfigSchema,
    }),
    local: z.strictObject({
      heartbeatSeconds: z
        .number()
        .positive()
        .default(15)
        .describe('SSE heartbeat comment interval on /v1/fault/stream'),
      maxConnections: z
        .number()
        .int()
        .positive()
        .default(512)
        .describe('most connections open at once on the node-local port (streams included); more are closed'),
      staleAfterSeconds: z
        .number()
        .positive()
        .default(10)
        .describe(
          'no answer from the ingest function this long: /v1/fault says stale (its entry may be old)',
        ),
    }),
  })
  .superRefine((config, ctx) => {
    const { intervalMs, jitterMs, keepAliveMs } = config.sampling;
    if (keepAliveMs <= intervalMs + jitterMs)
      ctx.addIssue({
        code: 'custom',
        path: ['sampling', 'keepAliveMs'],
        message: `must exceed the interval and its jitter (${intervalMs + jitterMs} ms): a sample would never wait on the tool`,
      });
    if (config.collector === 'sim' && !config.sim.enabled) {
      ctx.addIssue({
        code: 'custom',
        path: ['collector'],
        message: 'sim is a simulator with a fault-injection API: also set --sim-enabled to use it',
      });
    }
    // The fault API reports whatever it is told as the node's devices: beyond loopback, only
    // with a token (on loopback, only this host's processes can reach it).
    if (
      config.collector === 'sim' &&
      config.sim.faultTokenFile === undefined &&
      !isLoopback(config.listen.host)
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['sim', 'faultTokenFile'],
        message: `required: the fault API would listen beyond loopback (${config.listen.host ?? 'every interface'}), where anyone reaching the port could inject faults`,
      });
    }
    if (config.push.backoffMaxMs < config.push.backoffInitialMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['push', 'backoffMaxMs'],
        message: 'must be at least push.backoffInitialMs',
      });
    }
    if (config.sampling.jitterMs * 2 >= config.sampling.intervalMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['sampling', 'jitterMs'],
        message: 'must be less than half of sampling.intervalMs',
      });
    }
  });

/** The agent's settings after defaults. */
export type AgentConfig = DeepReadonly<z.output<typeof agentConfigSchema>>;

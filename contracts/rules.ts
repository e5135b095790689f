/**
 * The rules file (CONTRACT §2): every threshold, window, duration and reason list of the
 * detection engine, with its default declared here. The file may be YAML or JSON; it is
 * hot-reloadable, and an invalid file never replaces a valid one (core/rules/).
 *
 * Every object is strict: an unknown or misspelt field is an error naming it, not a setting
 * silently ignored. `{}` (or an empty file) yields exactly the contract's defaults.
 */
import { z } from 'zod';
import {
  REASON_BITS,
  REASON_NAME_PATTERN,
  REASONS,
  fixedDeviceBits,
  fixedNodeBits,
  latchVocabulary,
  reasonSections,
  type LatchVocabulary,
  type ReasonSpec,
} from './reasons.js';
import { NODE_PROBLEM_REASONS, type NodeProblemReason } from './fields/index.js';

/** Severity of a reason: critical fails a device in the same sample, warning degrades it after a while. */
export const severitySchema = z.enum(['critical', 'warning']);

/**
 * The built-in Ascend fault-code table (MindCluster's public fault levels). The rules file's
 * `fault_codes` entries extend or override it; any code in neither is `fault_codes_default`.
 */
export const DEFAULT_FAULT_CODES: Readonly<Record<string, 'critical' | 'warning'>> = Object.freeze({
  '80E01801': 'critical', // HBM multi-bit ECC
  '80E18402': 'critical', // ECC isolated rows full
  '80E0020B': 'critical', // HBM fatal over-temperature
  '80B98000': 'critical', // PCIe exception
  '40F84E00': 'critical', // card dropped
  '80E00209': 'warning', // HBM high temperature
  '80E20207': 'warning', // SoC high temperature
  '80DE0207': 'warning', // DDR high temperature
  '81078603': 'warning', // RoCE port down
});

/** GPU XIDs watched by default (each becomes reason `xid-<n>`). */
export const DEFAULT_XIDS = [48, 63, 64, 74, 79, 92, 94, 95, 119, 120] as const;
/** The critical subset of the watched XIDs; the rest are warnings. */
export const DEFAULT_CRITICAL_XIDS = [48, 74, 79, 95, 119, 120] as const;
/** Reasons that keep a device failed until a new agent boot (reset counters) or an operator clear. */
export const DEFAULT_LATCHED = [
  'ecc-uncorrectable',
  'xid-48',
  'xid-79',
  'xid-95',
  'xid-119',
  'xid-120',
] as const;

/**
 * The most XIDs that may be watched: the bits the catalogue's fixed reasons leave free (32 − 12).
 * The engine keeps each device's active reasons in one 32-bit mask (reasons.ts), which keeps
 * the per-sample path allocation-free.
 */
export const MAX_WATCHED_XIDS = REASON_BITS - fixedDeviceBits(REASONS);
/** The longest smoothing window, for the same reason (a window is a bit mask). */
export const MAX_WINDOW_SAMPLES = 30;

/**
 * The most `node_conditions` entries: each is a bit of the node's 32-bit reason mask beside
 * the catalogue's fixed node reasons (15 with this catalogue), and each condition type named is
 * cached per Node by the controller's node watch, so the list stays short.
 */
export const MAX_NODE_CONDITIONS: number = REASON_BITS - fixedNodeBits(REASONS);
/** Node condition types the rules may not map: `Ready` is `node-not-ready`, `NPUHealthy` is the controller's own. */
export const RESERVED_CONDITION_TYPES: readonly string[] = ['Ready', 'NPUHealthy'];

/** One Node condition mapped to a node reason: raised while the Node has `type` with `status`. */
export interface NodeConditionRule {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly severity: 'critical' | 'warning';
}

/**
 * The kubelet's pressure conditions and node-problem-detector's default ones (when NPD runs):
 * a kernel deadlock or a read-only root file system makes the node's devices unusable
 * (critical); pressure and restarting runtimes are warnings.
 */
export const DEFAULT_NODE_CONDITIONS: readonly NodeConditionRule[] = [
  { type: 'KernelDeadlock', status: 'True', reason: 'kernel-deadlock', severity: 'critical' },
  { type: 'ReadonlyFilesystem', status: 'True', reason: 'readonly-filesystem', severity: 'critical' },
  { type: 'MemoryPressure', status: 'True', reason: 'node-memory-pressure', severity: 'warning' },
  { type: 'DiskPressure', status: 'True', reason: 'node-disk-pressure', severity: 'warning' },
  { type: 'PIDPressure', status: 'True', reason: 'node-pid-pressure', severity: 'warning' },
  { type: 'FrequentKubeletRestart', status: 'True', reason: 'frequent-kubelet-restart', severity: 'warning' },
  { type: 'FrequentDockerRestart', status: 'True', reason: 'frequent-docker-restart', severity: 'warning' },
  {
    type: 'FrequentContainerdRestart',
    status: 'True',
    reason: 'frequent-containerd-restart',
    severity: 'warning',
  },
];

/**
 * Devices (chips) one node may hold by default: twice the largest real node in the project's
 * samples of tool output, 16 chips (a 16× 910B2C host; the A3's 8 NPUs × 2 chips), so a
 * 32-chip host (8 four-chip Ascend 310 cards) fits too.
 */
export const DEFAULT_MAX_DEVICES_PER_NODE = 32;
/** The highest `max_devices_per_node` a rules file may set (a payload's own limit: 512 cards × 8 chips). */
export const MAX_DEVICES_PER_NODE = 4096;

const seconds = z.number().finite().nonnegative();
const positiveSeconds = z.number().finite().positive();
const celsius = z.number().finite();
/**
 * A fault code as written in the rules file: 1 to 16 hex digits, optionally after `0x`.
 * Codes are case-insensitive and stored in the tools' spelling, upper-case without `0x`
 * (`0x80e01801` → `80E01801`); leading zeros are kept, since a code is matched as text
 * and the tools print 8 digits (`00001234` is not `1234`). In YAML a code needs no quotes:
 * keys are read as the text written (core/rules), so `80E01801`, `0x80E0` and `00001234`
 * stay those codes instead of becoming numbers.
 */
const faultCodeText = z
  .string()
  .regex(/^(0[xX])?[0-9A-Fa-f]{1,16}$/, 'must be a hex fault code such as "80E01801"');

/** The canonical spelling of a valid fault code: upper-case, without `0x`. */
export function canonicalFaultCode(code: string): string {
  return code.replace(/^0x/i, '').toUpperCase();
}

/**
 * The `fault_codes` table, keys made canonical. Two keys that name the same code
 * (`80e01801` and `0x80E01801`) are an error at the second, never a silent last-wins.
 */
const faultCodeTable = z.record(faultCodeText, severitySchema).transform((codes, ctx) => {
  const table: Record<string, Severity> = {};
  const writtenAs = new Map<string, string>();
  for (const [written, severity] of Object.entries(codes)) {
    const code = canonicalFaultCode(written);
    const first = writtenAs.get(code);
    if (first !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [written],
        input: written,
        message: `names the same code as '${first}' (codes ignore case and 0x)`,
      });
      continue;
    }
    writtenAs.set(code, written);
    table[code] = severity;
  }
  return table;
});
const xid = z.number().int().nonnegative();

/**
 * The severity of each node problem the agent's checks report (CONTRACT §1.8, §3.7). Critical:
 * the node is unusable for a job that needs every device whatever its cards say (the network,
 * NIC, RDMA and NVLink links, machine checks, soft lockups, a read-only filesystem); warning:
 * worth a look, the devices still serve (host ECC, hung tasks, OOM kills, filesystem errors, a
 * full disk).
 */
export const DEFAULT_NODE_PROBLEM_SEVERITIES: Readonly<Record<NodeProblemReason, 'critical' | 'warning'>> = {
  'network-unreachable': 'critical',
  'nic-link-down': 'critical',
  'rdma-port-down': 'critical',
  'nvlink-down': 'critical',
  'host-memory-ecc': 'warning',
  'kernel-machine-check': 'critical',
  'kernel-soft-lockup': 'critical',
  'kernel-hung-task': 'warning',
  'oom-kill-storm': 'warning',
  'filesystem-readonly': 'critical',
  'filesystem-error': 'warning',
  'filesystem-full': 'warning',
  'host-hardware-fault': 'critical',
  'host-hardware-warning': 'warning',
};

const nodeProblemSeverities = z
  .strictObject(
    Object.fromEntries(
      NODE_PROBLEM_REASONS.map((name) => [
        name,
        severitySchema.default(DEFAULT_NODE_PROBLEM_SEVERITIES[name]),
      ]),
    ) as Record<NodeProblemReason, z.ZodDefault<typeof severitySchema>>,
  )
  .prefault({});

/** One `node_conditions` entry. */
const nodeCondition = z.strictObject({
  /** The Node condition type (`KernelDeadlock`), as written on the Node (case matters). */
  type: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$/, 'must be a Node condition type (KernelDeadlock)')
    .refine((type) => !RESERVED_CONDITION_TYPES.includes(type), {
      message: `may not be ${RESERVED_CONDITION_TYPES.join(' or ')} (Ready is node-not-ready)`,
    }),
  /** The status that raises the reason; any other (or the condition absent) lifts it. */
  status: z.enum(['True', 'False', 'Unknown']).default('True'),
  /** The node reason published while it holds. */
  reason: z.string().max(63).regex(new RegExp(REASON_NAME_PATTERN), `must match ${REASON_NAME_PATTERN}`),
  /** critical: the node's devices are published unknown (unusable); warning: a signal on each. */
  severity: severitySchema.default('critical'),
});

/**
 * The rules file of a reason catalogue (reasons.ts): `latched` takes its reasons' names, and
 * `xids.watched` as many XIDs as its fixed reasons leave bits for. Every field has its
 * CONTRACT §2 default. Throws when a reason names a rules field (`section`) that does not exist.
 */
export function rulesSchemaFor(reasons: readonly ReasonSpec[]) {
  const vocabulary = latchVocabulary(reasons);
  const fields = {
    /** Smoothing: the sliding window of the last N samples per device (CONTRACT §2.1). */
    window_samples: z.number().int().min(1).max(MAX_WINDOW_SAMPLES).default(5),
    /** `high-temp` when at least `min_samples` of the window are strictly above `threshold_c`. */
    high_temp: z
      .strictObject({
        threshold_c: celsius.default(85.0),
        min_samples: z.number().int().min(1).default(3),
      })
      .prefault({}),
    /** `ecc-error` with a temperature strictly above this in the same sample is `ecc-thermal`. */
    ecc_thermal_c: celsius.default(75.0),
    /** A link `down` with power below this (or unknown) is `npu-offline`, else `pcie-link-down`. */
    offline_power_w: z.number().finite().default(5.0),
    /** A warning reason active without a gap this long degrades a device (60 s). */
    degrade_after_s: seconds.default(60),
    /** A device degraded this long (with a reason still active) fails (180 s). */
    fail_after_degraded_s: seconds.default(180),
    /** Consecutive samples with no active reason that bring degraded|failed back to healthy. */
    recover_after_samples: z.number().int().min(1).default(5),
    /** Node overlays, on the receiver's clock (CONTRACT §2.5). */
    overlays: z
      .strictObject({
        /** No snapshot from the node this long: `agent-unreachable` (agent `stale`). */
        agent_unreachable_s: positiveSeconds.default(5),
        /** Only cached snapshots this long: `collector-error`. */
        collector_error_s: positiveSeconds.default(10),
      })
      .prefault({}),
    /** A snapshot whose collected_at is further than this ahead of the receiver's clock is rejected. */
    future_skew_s: seconds.default(5),
    /**
     * Most devices (chips) one node may hold: a snapshot listing more is dropped
     * (`too-many-devices`), and devices a node no longer lists are forgotten, those missing
     * longest first, when its new ones would pass it (CONTRACT §1.2). Bounds what one agent can
     * make every replica keep and publish. Twice the largest real node (16 chips).
     */
    max_devices_per_node: z
      .number()
      .int()
      .min(1)
      .max(MAX_DEVICES_PER_NODE)
      .default(DEFAULT_MAX_DEVICES_PER_NODE),
    /** GPU XIDs: which are watched and which of them are critical. */
    xids: z
      .strictObject({
        watched: z
          .array(xid)
          .max(REASON_BITS - fixedDeviceBits(reasons))
          .default([...DEFAULT_XIDS]),
        critical: z.array(xid).default([...DEFAULT_CRITICAL_XIDS]),
      })
      .prefault({}),
    /** Reasons that latch a device failed (see DEFAULT_LATCHED); `xid-<n>` of an unwatched XID is inert. */
    latched: z.array(latchableName(vocabulary)).default([...DEFAULT_LATCHED]),
    /**
     * The node agent's inference canary (vLLM nodes): `inference-canary-failed` on every device
     * of a node whose snapshot reports at least `min_failures` failed requests in a row. The
     * canary says serving is broken, not which chip, so by default it is a warning that
     * degrades the node's devices (after `degrade_after_s`) and holds them degraded while it
     * lasts, but never fails (and so never drains) them on the 180 s clock alone.
     */
    inference_canary: z
      .strictObject({
        /** Failed requests in a row that raise the reason. */
        min_failures: z.number().int().min(1).default(2),
        /** `critical` fails every device of the node at once; `warning` degrades them. */
        severity: severitySchema.default('warning'),
        /** true: like other warnings, it fails a device degraded `fail_after_degraded_s`. */
        fail_after_degraded: z.boolean().default(false),
      })
      .prefault({}),
    /**
     * The node problems the agent's node checks report (payload `node_problems`), each a node
     * reason: critical publishes the node's devices unknown, warning is a signal on each.
     */
    node_problems: nodeProblemSeverities,
    /**
     * Node conditions (the kubelet's, node-problem-detector's, an operator's) mapped to node
     * reasons: each raised while the Node has that condition with that status (CONTRACT §3.7).
     */
    node_conditions: z
      .array(nodeCondition)
      .max(MAX_NODE_CONDITIONS)
      .default(() => DEFAULT_NODE_CONDITIONS.map((c) => ({ ...c }))),
    /** Ascend fault codes extending or overriding DEFAULT_FAULT_CODES (see faultCodeText). */
    fault_codes: faultCodeTable.default({}),
    /** Severity of a fault code in neither table. */
    fault_codes_default: severitySchema.default('warning'),
    /** The published document (CONTRACT §3). */
    publish: z
      .strictObject({
        /** More than this fraction of nodes stale at once is an ingest outage: `ingest_degraded`. */
        ingest_degraded_fraction: z.number().min(0).max(1).default(0.2),
        /**
         * ...and at least this many nodes: one silent agent among four nodes is a broken node
         * to list, not an ingest outage (a refinement of CONTRACT §3, which names only 20%).
         */
        ingest_degraded_min_nodes: z.number().int().min(1).default(3),
        /** Byte budget of fault.json (900 KiB, under the 1 MiB ConfigMap limit). */
        max_bytes: z
          .number()
          .int()
          .min(1024)
          .default(900 * 1024),
      })
      .prefault({}),
  };
  return z.strictObject(describeSections(fields, reasonSections(reasons))).superRefine((rules, ctx) => {
    if (rules.high_temp.min_samples > rules.window_samples) {
      ctx.addIssue({
        code: 'custom',
        path: ['high_temp', 'min_samples'],
        message: `must not exceed window_samples (${rules.window_samples})`,
      });
    }
    const watched = new Set(rules.xids.watched);
    rules.xids.critical.forEach((n, i) => {
      if (!watched.has(n))
        ctx.addIssue({
          code: 'custom',
          path: ['xids', 'critical', i],
          message: `XID ${n} is not in xids.watched`,
        });
    });
    rules.latched.forEach((name, i) => {
      if (!isLatchable(vocabulary, name))
        ctx.addIssue({
          code: 'custom',
          path: ['latched', i],
          message: `unknown reason '${name}' (a reason name or xid-<n>)`,
        });
    });
    const taken = new Set(reasons.filter((r) => r.family === undefined).map((r) => r.name));
    const patterns = reasons.flatMap((r) => (r.scope === 'device' && r.family ? [r.family.pattern] : []));
    const seen = new Map<string, number>();
    const conditions = new Set<string>();
    rules.node_conditions.forEach((c, i) => {
      const at = ['node_conditions', i, 'reason'];
      if (taken.has(c.reason) || patterns.some((p) => new RegExp(p).test(c.reason)))
        ctx.addIssue({ code: 'custom', path: at, message: `'${c.reason}' is a reason of the catalogue` });
      else if (seen.has(c.reason))
        ctx.addIssue({
          code: 'custom',
          path: at,
          message: `'${c.reason}' is also node_conditions[${seen.get(c.reason)}]'s reason`,
        });
      seen.set(c.reason, seen.get(c.reason) ?? i);
      const key = `${c.type}=${c.status}`;
      if (conditions.has(key))
        ctx.addIssue({
          code: 'custom',
          path: ['node_conditions', i, 'type'],
          message: `${key} is mapped twice`,
        });
      conditions.add(key);
    });
  });
}

/** The rules file. Every field has its CONTRACT §2 default. */
export const rulesSchema = rulesSchemaFor(REASONS);

/** A device reason's name, or a family member's (`xid-<n>`: an XID that is not watched never fires, so latching it is harmless). */
function isLatchable(vocabulary: LatchVocabulary, name: string): boolean {
  return vocabulary.names.includes(name) || vocabulary.patterns.some((p) => new RegExp(p).test(name));
}

/** A `latched` entry: the names spelt out for the JSON Schema; the superRefine above gives the error. */
function latchableName(vocabulary: LatchVocabulary) {
  return z
    .string()
    .min(1)
    .meta({
      anyOf: [{ enum: [...vocabulary.names] }, ...vocabulary.patterns.map((pattern) => ({ pattern }))],
    });
}

/** Names, in the JSON Schema, the reasons each top-level rules field configures. */
function describeSections<T extends Record<string, z.ZodType>>(
  fields: T,
  sections: Map<string, string[]>,
): T {
  const out: Record<string, z.ZodType> = { ...fields };
  for (const [field, names] of sections) {
    const schema = out[field];
    if (schema === undefined)
      throw new Error(`a reason names the rules field '${field}', which does not exist`);
    const reasons = names.length === 1 ? 'reason' : 'reasons';
    out[field] = schema.meta({ description: `Configures the ${reasons} ${names.join(', ')}.` });
  }
  return out as T;
}

/** Validated rules, every default filled in. */
export type Rules = z.infer<typeof rulesSchema>;
/** The rules file as written, before defaults. */
export type RulesInput = z.input<typeof rulesSchema>;
/** `critical` or `warning`. */
export type Severity = z.infer<typeof severitySchema>;

/** The contract's defaults. */
export const DEFAULT_RULES: Rules = rulesSchema.parse({});

/**
 * The `hdc.health/v1` snapshot: one sample of every accelerator on one node, as an agent
 * POSTs it (CONTRACT §1). The three payload families keep the shapes their tools print;
 * normalisation into one device model lives in core/normalise.ts.
 *
 * Unknown keys are stripped, not rejected, so newer agents can add fields without breaking
 * older ingest functions. Any numeric metric may be null (the tool printed NA/N/A/ERR!/-),
 * and a metric an agent omits is read as null.
 *
 * Fields added after the first release are optional and change nothing when left out, so
 * older agents' snapshots keep their meaning: `readable` on every device and `canary` in
 * every payload.
 */
import { z } from 'zod';

/** Times past this cannot be written back as ISO-8601 (year 10000 in UTC after an offset). */
const LATEST_TIME = Date.UTC(9999, 0, 1);

/**
 * The schema's bounds, named once: the schemas below and the hot path's hand-written reader
 * (snapshot-fast-path.ts) both read them.
 */
export const SNAPSHOT_LIMITS = {
  /** Longest node name (a DNS subdomain). */
  node: 253,
  /** Longest boot_id, device name, GPU uuid. */
  id: 128,
  /** Longest collector and driver_version. */
  label: 64,
  /** Longest health word. */
  health: 32,
  /** Longest PCI bus id. */
  busId: 64,
  /** Most fault codes of one device. */
  errorCodes: 256,
  /** Most XID events of one GPU. */
  xidEvents: 1024,
  /** Most chips of one 310P card. */
  chips: 8,
  /** Most devices (NPUs, cards, GPUs) of one payload. */
  devices: 512,
  /** Largest consecutive_failures of a canary. */
  canaryFailures: 1_000_000_000,
} as const;

/** A Kubernetes node name (lower-case DNS subdomain). */
export const NODE_NAME_PATTERN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** One fault code: 1 to 16 hex digits. */
export const FAULT_CODE_PATTERN = /^[0-9A-Fa-f]{1,16}$/;

/** True when `text` (an ISO-8601 time) is between 1970 and 9999, as `collected_at` must be. */
export function withinSnapshotTimes(text: string): boolean {
  const t = Date.parse(text);
  return t >= 0 && t < LATEST_TIME;
}

/** The only schema identifier this version accepts. */
export const SNAPSHOT_SCHEMA = 'hdc.health/v1';

/** A numeric metric: a finite number, or null when the tool could not read it. */
export const metric = z.number().finite().nullable().default(null);
/** A cumulative counter (ECC): a non-negative number, or null. */
export const counter = z.number().finite().nonnegative().nullable().default(null);

const healthText = z.string().max(SNAPSHOT_LIMITS.health).default('UNKNOWN');
const errorCodes = z
  .array(z.string().regex(FAULT_CODE_PATTERN, 'must be a hex fault code such as "80E01801"'))
  .max(SNAPSHOT_LIMITS.errorCodes)
  .default([]);
const busId = z.string().min(1).max(SNAPSHOT_LIMITS.busId);

/**
 * `false`: the tool lists the device but could read none of its metrics (every value N/A, as
 * nvidia-smi prints in some vGPU guests). The device is there, its readings are unknown:
 * normalisation reads every metric, the health word and the link as unknown, so it is not
 * taken for a device off the bus. Left out (or `true`): the metrics are the tool's readings.
 * Optional rather than defaulted, so snapshots without it print and validate as before.
 */
const readable = z.boolean().optional();

/** One chip of a 910B-family device (910B, 910/910A, A3 Ascend910 with two chips per NPU). */
export const npu910Schema = z.object({
  npu: z.number().int().nonnegative(),
  chip: z.number().int().nonnegative().default(0),
  phy_id: z.number().int().nonnegative().nullable().optional(),
  name: z.string().max(SNAPSHOT_LIMITS.id).default(''),
  health: healthText,
  temp_c: metric,
  power_w: metric,
  aicore_pct: metric,
  hbm: z
    .object({
      used_mb: metric,
      total_mb: metric,
      temp_c: metric,
      ecc: z.object({ single_bit: counter, double_bit: counter }).prefault({}),
    })
    .prefault({}),
  pcie: z
    .object({
      bus_id: busId.nullable().default(null),
      link: z.enum(['up', 'down']).nullable().default(null),
    })
    .prefault({}),
  error_codes: errorCodes,
  present: z.boolean().default(true),
  readable,
});

/** One chip of a 310P-family card. */
export const chip310Schema = z.object({
  chip: z.number().int().nonnegative(),
  device_id: z.number().int().nonnegative(),
  health: healthText,
  temperature: metric,
  power_w: metric,
  ddr: z.object({ used_mb: metric, total_mb: metric, ecc_sbe: counter, ecc_dbe: counter }).prefault({}),
  error_codes: errorCodes,
  present: z.boolean().default(true),
  readable,
});

/** One 310P-family card (one to four chips, card-level MCU power). */
export const card310Schema = z.object({
  card: z.number().int().nonnegative(),
  name: z.string().max(SNAPSHOT_LIMITS.id).default(''),
  bus_id: busId.nullable().default(null),
  pcie_link: z
    .union([z.literal(0), z.literal(1)])
    .nullable()
    .default(null),
  mcu_power_w: metric,
  chips: z.array(chip310Schema).max(SNAPSHOT_LIMITS.chips),
});

/**
 * One NVIDIA GPU. A GPU that fell off the bus reports null metrics; one the tool lists but
 * cannot read (`readable: false`) reports null metrics too, and is not off the bus.
 */
export const gpuSchema = z.object({
  index: z.number().int().nonnegative(),
  uuid: z.string().max(SNAPSHOT_LIMITS.id).nullable().default(null),
  bus_id: busId.nullable().default(null),
  name: z.string().max(SNAPSHOT_LIMITS.id).default(''),
  temperature_gpu: metric,
  power_draw_w: metric,
  ecc_corrected_volatile: counter,
  ecc_uncorrected_volatile: counter,
  pcie_link_gen: metric,
  pcie_link_width: metric,
  xid_events: z
    .array(
      z.object({
        xid: z.number().int().nonnegative(),
        at: z.iso.datetime({ offset: true }).nullable().default(null),
      }),
    )
    .max(SNAPSHOT_LIMITS.xidEvents)
    .default([]),
  present: z.boolean().default(true),
  readable,
});

/**
 * The node's inference canary (optional, any family): the agent's periodic fixed request to a
 * local inference endpoint (vLLM), read beside the tool like any other reading of the node.
 * `ok` is the last request's verdict and `consecutive_failures` the failed requests in a row
 * up to it (0 exactly when `ok`); `at` is when that request ended. The engine raises
 * `inference-canary-failed` on every device of the node while `consecutive_failures` is at
 * least the rules' `inference_canary.min_failures` (2): the canary says serving is broken,
 * not which chip. Left out: no canary runs on the node.
 */
export const canarySchema = z
  .object({
    ok: z.boolean(),
    consecutive_failures: z.number().int().nonnegative().max(SNAPSHOT_LIMITS.canaryFailures),
    at: z.iso.datetime({ offset: true }).nullable().default(null),
  })
  .refine((canary) => canary.ok === (canary.consecutive_failures === 0), {
    path: ['consecutive_failures'],
    message: 'must be 0 when ok is true and at least 1 when ok is false',
  });

export const payload910Schema = z.object({
  family: z.literal('910B'),
  driver_version: z.string().max(SNAPSHOT_LIMITS.label).optional(),
  npus: z.array(npu910Schema).max(SNAPSHOT_LIMITS.devices),
  canary: canarySchema.optional(),
});
export const payload310Schema = z.object({
  family: z.literal('310P'),
  driver_version: z.string().max(SNAPSHOT_LIMITS.label).optional(),
  cards: z.array(card310Schema).max(SNAPSHOT_LIMITS.devices),
  canary: canarySchema.optional(),
});
export const payloadNvidiaSchema = z.object({
  family: z.literal('nvidia'),
  driver_version: z.string().max(SNAPSHOT_LIMITS.label).optional(),
  gpus: z.array(gpuSchema).max(SNAPSHOT_LIMITS.devices),
  canary: canarySchema.optional(),
});

/** The family-specific body of a snapshot, discriminated by `family`. */
export const payloadSchema = z.discriminatedUnion('family', [
  payload910Schema,
  payload310Schema,
  payloadNvidiaSchema,
]);

/** The snapshot envelope (CONTRACT §1). */
export const snapshotSchema = z.object({
  schema: z.literal(SNAPSHOT_SCHEMA),
  node: z
    .string()
    .min(1)
    .max(SNAPSHOT_LIMITS.node)
    .regex(NODE_NAME_PATTERN, 'must be a Kubernetes node name (lower-case DNS subdomain)'),
  /** New at every start of the agent process; absent in hand-made samples (one anonymous boot). */
  boot_id: z.string().max(SNAPSHOT_LIMITS.id).default(''),
  seq: z.number().int().nonnegative(),
  collected_at: z.iso
    .datetime({ offset: true })
    .refine(withinSnapshotTimes, 'must be a time between 1970 and 9999'),
  collector: z.string().min(1).max(SNAPSHOT_LIMITS.label),
  cached: z.boolean().default(false),
  payload: payloadSchema,
});

/** A validated snapshot, defaults filled in. */
export type Snapshot = z.infer<typeof snapshotSchema>;
/** A snapshot as written on the wire, before defaults. */
export type SnapshotInput = z.input<typeof snapshotSchema>;
export type Payload = z.infer<typeof payloadSchema>;
export type Npu910 = z.infer<typeof npu910Schema>;
export type Card310 = z.infer<typeof card310Schema>;
export type Chip310 = z.infer<typeof chip310Schema>;
export type Gpu = z.infer<typeof gpuSchema>;
export type CanaryReading = z.infer<typeof canarySchema>;
export type AcceleratorFamily = Payload['family'];

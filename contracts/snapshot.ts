/**
 * The `hdc.health/v1` snapshot: one sample of every accelerator on one node, as an agent
 * POSTs it (CONTRACT §1). The three payload families keep the shapes their tools print;
 * normalisation into one device model lives in core/normalise.ts.
 *
 * Unknown keys are stripped, not rejected, so newer agents can add fields without breaking
 * older ingest functions. Any numeric metric may be null (the tool printed NA/N/A/ERR!/-),
 * and a metric an agent omits is read as null. A metric outside what hardware can report
 * (READING_BOUNDS: a temperature of 1e300 °C, a power of -1 W) is refused, naming the field:
 * it is a glitch, never a reading (the agent's parsers read such a value as null).
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

/**
 * Text a tool prints (names, uuids, bus ids, health words, boot ids): no control characters
 * (C0, DEL, C1) and no lone UTF-16 surrogate. They never appear in real tool output, and they
 * would reach terminals (`npu-fault status`), logs and the published document, where each
 * control character or lone surrogate is written as a 6-byte escape.
 */
export const PRINTABLE_TEXT_PATTERN = /^[^\p{Cc}\p{Cs}]*$/u;
const PRINTABLE_MESSAGE = 'must be printable text (no control characters)';

/** PRINTABLE_TEXT_PATTERN by hand, for the hot path (snapshot-fast-path.ts); the two agree (tested). */
export function isPrintableText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return false;
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = text.charCodeAt(i + 1);
      if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    }
  }
  return true;
}

/** A string of at most `max` code points (zod's count) of printable text. */
function text(max: number, min = 0): z.ZodString {
  return z.string().min(min).max(max).regex(PRINTABLE_TEXT_PATTERN, PRINTABLE_MESSAGE);
}

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

/** The bounds of one kind of reading (inclusive), and the unit they are in. */
export interface ReadingBound {
  readonly min: number;
  readonly max: number;
  /** As errors and docs print it after a number (`°C`), or '' for a bare count. */
  readonly unit: string;
}

/**
 * What hardware can report, per kind of reading, inclusive: a value outside is no reading but
 * a glitch (an unread sensor printed as 65535 or -1, a number corrupted on the way), and a
 * snapshot carrying one is refused, naming the field, rather than read as a device at
 * 1e300 °C that remediation would drain. Generous on purpose: a real device in trouble (a GPU
 * at 120 °C) is a reading, and a newer device must not have its snapshots refused by an
 * older function. The agent's parsers read a value outside as null (core/parsers/common.ts).
 */
export const READING_BOUNDS = {
  /**
   * Every temperature (chip, HBM, GPU). Silicon is rated to a junction temperature of 150 to
   * 175 °C at most and accelerators shut down near 100 °C, so 200 is beyond any real reading
   * and still below 255, what an unread 8-bit sensor prints. -55 °C is the floor of the
   * widest (military) sensor ratings; edge stations with Ascend chips are rated to -40 °C.
   */
  temperature: { min: -55, max: 200, unit: '°C' },
  /**
   * Every power draw (chip, 310P card MCU, GPU). A sensor never reads below 0 (-1 is the
   * tools' "cannot read"); the largest devices draw 1.2 to 1.4 kW (NVIDIA B200, GB300) and
   * those announced a few kW, so 10 kW leaves room for generations to come.
   */
  power: { min: 0, max: 10_000, unit: 'W' },
  /**
   * HBM and DDR used and total, in MB. The largest device memory announced is 1 TB of HBM
   * (NVIDIA Rubin Ultra); 16 TiB is sixteen times that and still refuses 2^32 - 1.
   */
  memory: { min: 0, max: 16 * 1024 * 1024, unit: 'MB' },
  /** AI-core utilisation: a share of the cores' time, 0 to 100 %. */
  utilisation: { min: 0, max: 100, unit: '%' },
  /**
   * PCIe link generation. 0 is a link that has not trained (as sysfs reads it); 7.0 is the
   * newest specification (2025) and 8.0 is announced, so 16 leaves room for generations not
   * yet drafted while refusing 255 and 65535.
   */
  pcieGeneration: { min: 0, max: 16, unit: '' },
  /** PCIe link width in lanes: 0 (not trained) to x32, the widest link PCIe defines. */
  pcieWidth: { min: 0, max: 32, unit: '' },
  /**
   * ECC error counters: counts, so never negative, and at most the largest integer a double
   * holds exactly (beyond it a count cannot be told from the next one: it is no count).
   */
  errorCount: { min: 0, max: Number.MAX_SAFE_INTEGER, unit: '' },
  /**
   * An NVIDIA XID number. The driver's XIDs are small numbers (its catalogue ends in the low
   * hundreds today); 9999 leaves room for ten times as many, and still refuses 65535 and a
   * pid or an address misread as an XID.
   */
  xid: { min: 0, max: 9_999, unit: '' },
} as const satisfies Record<string, ReadingBound>;

/** A kind of reading: a key of READING_BOUNDS. */
export type ReadingKind = keyof typeof READING_BOUNDS;

/**
 * Every bounded reading of a device, by its key path within the device (as in the schema
 * below), and the kind of its bounds. The key paths are the agent's metric label `field`.
 */
export const READING_FIELDS = {
  // 910B NPU
  temp_c: 'temperature',
  power_w: 'power',
  aicore_pct: 'utilisation',
  'hbm.used_mb': 'memory',
  'hbm.total_mb': 'memory',
  'hbm.temp_c': 'temperature',
  'hbm.ecc.single_bit': 'errorCount',
  'hbm.ecc.double_bit': 'errorCount',
  // 310P card and chip (a chip's `power_w` is the 910B NPU's name too)
  mcu_power_w: 'power',
  temperature: 'temperature',
  'ddr.used_mb': 'memory',
  'ddr.total_mb': 'memory',
  'ddr.ecc_sbe': 'errorCount',
  'ddr.ecc_dbe': 'errorCount',
  // NVIDIA GPU
  temperature_gpu: 'temperature',
  power_draw_w: 'power',
  ecc_corrected_volatile: 'errorCount',
  ecc_uncorrected_volatile: 'errorCount',
  pcie_link_gen: 'pcieGeneration',
  pcie_link_width: 'pcieWidth',
} as const satisfies Record<string, ReadingKind>;

/** A bounded reading of a device: a key of READING_FIELDS. */
export type ReadingField = keyof typeof READING_FIELDS;

/** True when `value` is a number within the bounds of `kind` (NaN and ±Infinity never are). */
export function withinReadingBounds(kind: ReadingKind, value: number): boolean {
  const bound: ReadingBound = READING_BOUNDS[kind];
  return value >= bound.min && value <= bound.max;
}

/** `-55 to 200 °C`: a kind's bounds as errors and docs print them. */
export function describeReadingBounds(kind: ReadingKind): string {
  const bound: ReadingBound = READING_BOUNDS[kind];
  return `${bound.min} to ${bound.max}${bound.unit === '' ? '' : ` ${bound.unit}`}`;
}

/** The schema's error for a number outside `kind`'s bounds: the value and the bounds. */
function outOfBounds(kind: ReadingKind): (issue: { input?: unknown }) => string {
  const bounds = describeReadingBounds(kind);
  return (issue) => `${String(issue.input)} is outside what hardware can report (${bounds})`;
}

/** A number within `kind`'s bounds (what a reading or an XID must be). */
function bounded(kind: ReadingKind): z.ZodNumber {
  const { min, max } = READING_BOUNDS[kind];
  const error = outOfBounds(kind);
  return z.number().min(min, { error }).max(max, { error });
}

/**
 * A reading of `kind`: a number within its bounds, or null when the tool could not read it
 * (also when left out).
 */
function reading(kind: ReadingKind): z.ZodDefault<z.ZodNullable<z.ZodNumber>> {
  return bounded(kind).nullable().default(null);
}

const healthText = text(SNAPSHOT_LIMITS.health).default('UNKNOWN');
const errorCodes = z
  .array(z.string().regex(FAULT_CODE_PATTERN, 'must be a hex fault code such as "80E01801"'))
  .max(SNAPSHOT_LIMITS.errorCodes)
  .default([]);
const busId = text(SNAPSHOT_LIMITS.busId, 1);

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
  name: text(SNAPSHOT_LIMITS.id).default(''),
  health: healthText,
  temp_c: reading('temperature'),
  power_w: reading('power'),
  aicore_pct: reading('utilisation'),
  hbm: z
    .object({
      used_mb: reading('memory'),
      total_mb: reading('memory'),
      temp_c: reading('temperature'),
      ecc: z.object({ single_bit: reading('errorCount'), double_bit: reading('errorCount') }).prefault({}),
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
  temperature: reading('temperature'),
  power_w: reading('power'),
  ddr: z
    .object({
      used_mb: reading('memory'),
      total_mb: reading('memory'),
      ecc_sbe: reading('errorCount'),
      ecc_dbe: reading('errorCount'),
    })
    .prefault({}),
  error_codes: errorCodes,
  present: z.boolean().default(true),
  readable,
});

/** One 310P-family card (one to four chips, card-level MCU power). */
export const card310Schema = z.object({
  card: z.number().int().nonnegative(),
  name: text(SNAPSHOT_LIMITS.id).default(''),
  bus_id: busId.nullable().default(null),
  pcie_link: z
    .union([z.literal(0), z.literal(1)])
    .nullable()
    .default(null),
  mcu_power_w: reading('power'),
  chips: z.array(chip310Schema).max(SNAPSHOT_LIMITS.chips),
});

/**
 * One NVIDIA GPU. A GPU that fell off the bus reports null metrics; one the tool lists but
 * cannot read (`readable: false`) reports null metrics too, and is not off the bus.
 */
export const gpuSchema = z.object({
  index: z.number().int().nonnegative(),
  uuid: text(SNAPSHOT_LIMITS.id).nullable().default(null),
  bus_id: busId.nullable().default(null),
  name: text(SNAPSHOT_LIMITS.id).default(''),
  temperature_gpu: reading('temperature'),
  power_draw_w: reading('power'),
  ecc_corrected_volatile: reading('errorCount'),
  ecc_uncorrected_volatile: reading('errorCount'),
  pcie_link_gen: reading('pcieGeneration'),
  pcie_link_width: reading('pcieWidth'),
  xid_events: z
    .array(
      z.object({
        xid: bounded('xid').int(),
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
  driver_version: text(SNAPSHOT_LIMITS.label).optional(),
  npus: z.array(npu910Schema).max(SNAPSHOT_LIMITS.devices),
  canary: canarySchema.optional(),
});
export const payload310Schema = z.object({
  family: z.literal('310P'),
  driver_version: text(SNAPSHOT_LIMITS.label).optional(),
  cards: z.array(card310Schema).max(SNAPSHOT_LIMITS.devices),
  canary: canarySchema.optional(),
});
export const payloadNvidiaSchema = z.object({
  family: z.literal('nvidia'),
  driver_version: text(SNAPSHOT_LIMITS.label).optional(),
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
  boot_id: text(SNAPSHOT_LIMITS.id).default(''),
  seq: z.number().int().nonnegative(),
  collected_at: z.iso
    .datetime({ offset: true })
    .refine(withinSnapshotTimes, 'must be a time between 1970 and 9999'),
  collector: text(SNAPSHOT_LIMITS.label, 1),
  cached: z.boolean().default(false),
  /**
   * `true`: new kernel events (XIDs, a removal) on the last good reading, sent while the tool is
   * failing. The controllers apply it as a sample (its events count) but, as for a cached one,
   * the tool is still failing: it does not end `collector-error`. Left out: the readings are
   * new. Optional, so older snapshots keep their meaning.
   */
  stale_readings: z.boolean().optional(),
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

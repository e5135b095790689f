/**
 * The `hdc.health/v1` snapshot: one sample of every accelerator on one node, as an agent
 * POSTs it (CONTRACT §1). The envelope is here; the payload is one family's, discriminated by
 * `family`, each family keeping the shape its tools print (families/<id>/schema.ts), and the
 * union is composed from the product's registry of families (families/index.ts). Normalisation
 * into one device model is each family's too (core/normalise.ts reads it through the registry).
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
import {
  FAMILIES,
  card310Schema,
  chip310Schema,
  gpuSchema,
  npu910Schema,
  payload310Schema,
  payload910Schema,
  payloadNvidiaSchema,
} from '../families/index.js';
import {
  NODE_NAME_PATTERN,
  SNAPSHOT_LIMITS,
  text,
  withinSnapshotTimes,
  type AnyFamilyPayload,
} from './fields/index.js';

export {
  DNS_LABEL_PATTERN,
  DNS_SUBDOMAIN_PATTERN,
  deviceHolderPodSchema,
  deviceHolderSchema,
  deviceHoldersSchema,
  type DeviceHolderPod,
  type DeviceHolderReading,
  FAULT_CODE_PATTERN,
  NODE_NAME_PATTERN,
  NODE_PROBLEM_NAME_PATTERN,
  AGENT_NODE_PROBLEM_REASONS,
  MINDCLUSTER_NODE_PROBLEM_REASONS,
  NODE_PROBLEM_REASONS,
  nodeProblemSchema,
  nodeProblemsSchema,
  type NodeProblemReading,
  type NodeProblemReason,
  PRINTABLE_TEXT_PATTERN,
  READING_BOUNDS,
  SNAPSHOT_LIMITS,
  canarySchema,
  describeReadingBounds,
  isPrintableText,
  withinReadingBounds,
  withinSnapshotTimes,
  type AnyFamilyPayload,
  type CanaryReading,
  type FamilyPayloadSchema,
  type ReadingBound,
  type ReadingKind,
} from './fields/index.js';
// The product families' own schemas, for the tools that build their payloads.
export {
  card310Schema,
  chip310Schema,
  gpuSchema,
  npu910Schema,
  payload310Schema,
  payload910Schema,
  payloadNvidiaSchema,
};

/** The only schema identifier this version accepts. */
export const SNAPSHOT_SCHEMA = 'hdc.health/v1';

/**
 * Every bounded reading of a device of any family, by its key path within the device (as in
 * the families' schemas), and the kind of its bounds. The key paths are the agent's metric
 * label `field`.
 */
export const READING_FIELDS = FAMILIES.readingFields;

/** A bounded reading of a device: a key of READING_FIELDS. */
export type ReadingField = keyof typeof READING_FIELDS & string;

/** The family-specific body of a snapshot, discriminated by `family`: one of the product's families. */
export const payloadSchema = FAMILIES.payloadSchema;

/**
 * The snapshot envelope (CONTRACT §1) around `payload`: the product's snapshotSchema is this
 * around the product's payload union; a registry with another family gets its own.
 */
export function snapshotEnvelope<Payload extends z.ZodType<AnyFamilyPayload>>(payload: Payload) {
  return z.object({
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
    payload,
  });
}

/** The snapshot envelope (CONTRACT §1) of the product's families. */
export const snapshotSchema = snapshotEnvelope(payloadSchema);

/** A validated snapshot, defaults filled in. */
export type Snapshot = z.infer<typeof snapshotSchema>;
/** A snapshot as written on the wire, before defaults. */
export type SnapshotInput = z.input<typeof snapshotSchema>;
export type Payload = z.infer<typeof payloadSchema>;
export type Npu910 = z.infer<typeof npu910Schema>;
export type Card310 = z.infer<typeof card310Schema>;
export type Chip310 = z.infer<typeof chip310Schema>;
export type Gpu = z.infer<typeof gpuSchema>;
/** The product's families: a payload's `family`. */
export type AcceleratorFamily = Payload['family'];

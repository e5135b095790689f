/**
 * What every family's payload is built from (families/<id>/schema.ts): the fields its devices
 * share (health word, fault codes, bus id, `readable`), and the payload's own frame around the
 * family's device lists: `family`, `driver_version`, then the lists, then the node's `canary`,
 * `node_problems` and `device_holders`.
 */
import { z } from 'zod';
import { SNAPSHOT_LIMITS } from './limits.js';
import { deviceHoldersSchema, type DeviceHolderReading } from './device-holders.js';
import { nodeProblemsSchema, type NodeProblemReading } from './node-problems.js';
import { FAULT_CODE_PATTERN, text } from './text.js';

/** A device's health word as the tool printed it; `UNKNOWN` when left out. */
export const healthText = text(SNAPSHOT_LIMITS.health).default('UNKNOWN');

/** A device's fault codes (hex strings such as `80E01801`); none when left out. */
export const errorCodes = z
  .array(z.string().regex(FAULT_CODE_PATTERN, 'must be a hex fault code such as "80E01801"'))
  .max(SNAPSHOT_LIMITS.errorCodes)
  .default([]);

/** A PCI bus id as the tool printed it. */
export const busId = text(SNAPSHOT_LIMITS.busId, 1);

/**
 * `false`: the tool lists the device but could read none of its metrics (every value N/A, as
 * nvidia-smi prints in some vGPU guests). The device is there, its readings are unknown:
 * normalisation reads every metric, the health word and the link as unknown, so it is not
 * taken for a device off the bus. Left out (or `true`): the metrics are the tool's readings.
 * Optional rather than defaulted, so snapshots without it print and validate as before.
 */
export const readable = z.boolean().optional();

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

/** The node's inference canary as validated. */
export type CanaryReading = z.infer<typeof canarySchema>;

/** The frame of a family's payload around its device lists `Lists`. */
export type FamilyPayloadShape<Id extends string, Lists extends z.ZodRawShape> = {
  family: z.ZodLiteral<Id>;
  driver_version: z.ZodOptional<z.ZodString>;
} & Lists & {
    canary: z.ZodOptional<typeof canarySchema>;
    node_problems: z.ZodOptional<typeof nodeProblemsSchema>;
    device_holders: z.ZodOptional<typeof deviceHoldersSchema>;
  };

/** The schema of one family's payload: what `snapshotSchema`'s `payload` is, for that family. */
export type FamilyPayloadSchema<
  Id extends string = string,
  Lists extends z.ZodRawShape = z.ZodRawShape,
> = z.ZodObject<FamilyPayloadShape<Id, Lists>>;

/**
 * A family's payload schema: `family` (the discriminator), `driver_version`, the family's
 * device lists `lists` (each bounded by SNAPSHOT_LIMITS.devices), the node's `canary` and its
 * `node_problems` (CONTRACT §1.8), then `device_holders` (§1.9), in that key order (the order a validated payload prints in).
 */
export function familyPayloadSchema<Id extends string, Lists extends z.ZodRawShape>(
  family: Id,
  lists: Lists,
): FamilyPayloadSchema<Id, Lists> {
  return z.object({
    family: z.literal(family),
    driver_version: text(SNAPSHOT_LIMITS.label).optional(),
    ...lists,
    canary: canarySchema.optional(),
    node_problems: nodeProblemsSchema.optional(),
    device_holders: deviceHoldersSchema.optional(),
  }) as FamilyPayloadSchema<Id, Lists>;
}

/** What every payload is, whatever its family: what code that serves any family reads. */
export interface AnyFamilyPayload {
  family: string;
  driver_version?: string | undefined;
  canary?: CanaryReading | undefined;
  node_problems?: NodeProblemReading[] | undefined;
  device_holders?: DeviceHolderReading[] | undefined;
}

/**
 * The observations API, version 1: what an ingest function POSTs to every controller replica
 * at `/v1/observations`, and what a replica answers. The ingest function imports these same
 * schemas, so both ends of the wire agree by construction.
 *
 * Request: `{ "observations": [ { "snapshot": <hdc.health/v1 snapshot> }, … ] }`, 1 to
 * `maxBatch` (1000) items: the function micro-batches the snapshots of up to 20 ms. Unknown
 * keys are stripped, as in the snapshot itself, so a newer function can add fields.
 *
 * Response (200): `results[i]` answers `observations[i]`.
 * - leader: `{ leader: true, identity, term, results: [{ node, accepted, dropped?, entry }] }`,
 *   `entry` being the node's current published entry, or null when the node is healthy
 *   (not listed);
 * - follower (hot standby: it accepted too): `{ leader: false, identity, leader_identity,
 *   results: [{ node, accepted, dropped? }] }`, `leader_identity` null when none is known.
 *
 * `accepted: true` means the observation is in that replica's engine; `dropped` says why it was
 * not applied (a resend already applied, an older `seq`, a `collected_at` in the future, or a
 * previous agent process). Errors (4xx/5xx): `{ "error": { "code", "message" } }`, one line.
 */
import { z } from 'zod';
import { publishedNodeSchema } from './published.js';
import { snapshotSchema } from './snapshot.js';

/** The API's path; its version is the first segment. */
export const OBSERVATIONS_PATH = '/v1/observations';

/**
 * The audience of the token an ingest function sends to the controllers (a projected
 * ServiceAccount token, k8s/functions): the controllers take no other, so a token meant for the
 * apiserver (the function's automounted one, `kubectl create token`) is refused there.
 */
export const CONTROLLER_TOKEN_AUDIENCE = 'npu-fault-controller';

/** Most observations in one request by default (a function's 20 ms batch at 50,000 snapshots/s). */
export const DEFAULT_MAX_BATCH = 1000;

/** One observation: a validated snapshot. (An object, so fields can be added beside it.) */
export const observationSchema = z.object({ snapshot: snapshotSchema });

/** The schema of a request body. */
export type ObservationsRequestSchema = z.ZodObject<{ observations: z.ZodArray<typeof observationSchema> }>;

/** The request body, with at most `maxBatch` observations. */
export function observationsRequestSchema(maxBatch: number = DEFAULT_MAX_BATCH): ObservationsRequestSchema {
  if (!Number.isInteger(maxBatch) || maxBatch < 1) {
    throw new RangeError(`observations maxBatch: expected a positive integer, got ${maxBatch}`);
  }
  return z.object({ observations: z.array(observationSchema).min(1).max(maxBatch) });
}

/** A request body as validated (defaults filled in). */
export type ObservationsRequest = z.output<ObservationsRequestSchema>;
/** A request body as written on the wire. */
export type ObservationsRequestInput = z.input<ObservationsRequestSchema>;

/** Why an observation was not applied (the engine's DropReason). */
export const dropReasonSchema = z.enum([
  'duplicate',
  'out-of-order',
  'future',
  'old-boot',
  'too-many-devices',
]);

const followerResultSchema = z.object({
  node: z.string().min(1),
  accepted: z.boolean(),
  dropped: dropReasonSchema.optional(),
});

const leaderResultSchema = followerResultSchema.extend({
  /** The node's current published entry; null when it is healthy (not listed). */
  entry: publishedNodeSchema.nullable(),
});

const identity = z.string().min(1);

/** The leader's answer. */
export const leaderResponseSchema = z.object({
  leader: z.literal(true),
  identity,
  term: z.number().int().nonnegative(),
  results: z.array(leaderResultSchema),
});

/** A follower's answer: it accepted too, and names the leader it knows of. */
export const followerResponseSchema = z.object({
  leader: z.literal(false),
  identity,
  leader_identity: identity.nullable(),
  results: z.array(followerResultSchema),
});

/** Any 200 answer, told apart by `leader`. */
export const observationsResponseSchema = z.discriminatedUnion('leader', [
  leaderResponseSchema,
  followerResponseSchema,
]);

/** The body of every error answer. */
export const observationsErrorSchema = z.object({
  error: z.object({ code: z.string().min(1), message: z.string() }),
});

export type ObservationDropReason = z.infer<typeof dropReasonSchema>;
export type LeaderObservationResult = z.infer<typeof leaderResultSchema>;
export type FollowerObservationResult = z.infer<typeof followerResultSchema>;
export type LeaderObservationsResponse = z.infer<typeof leaderResponseSchema>;
export type FollowerObservationsResponse = z.infer<typeof followerResponseSchema>;
export type ObservationsResponse = z.infer<typeof observationsResponseSchema>;
export type ObservationsError = z.infer<typeof observationsErrorSchema>;

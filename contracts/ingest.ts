/**
 * The ingest API, version 1: what a node agent POSTs to an ingest function at `/v1/snapshots`,
 * and what the function answers once the leading controller has accepted the snapshots.
 *
 * Request, in one of three forms (each validated whole before anything is forwarded):
 * - `application/json`: one hdc.health/v1 snapshot, or a batch `{ "snapshots": [ … ] }` of 1
 *   to `maxBatch` (500) snapshots;
 * - a CloudEvent in binary mode (`ce-*` headers, `Content-Type: application/json`, the body
 *   being the snapshot or batch), or in structured mode (`application/cloudevents+json`, the
 *   snapshot or batch as `data`); `type` is SNAPSHOT_EVENT_TYPE, `specversion` 1.0.
 *
 * Response (200): `{ "leader": <identity>, "term": n, "results": [ { "node", "accepted",
 * "dropped"?, "entry" } ] }`, `results[i]` answering the i-th snapshot, `entry` being the
 * node's current published entry as the leader sees it after accepting, or null when the node
 * is healthy (not listed): what the agent serves to the pods on its node. Errors (4xx/5xx):
 * `{ "error": { "code", "message" } }`, one line; a 400 names the field as a JSON pointer.
 */
import { z } from 'zod';
import { leaderResponseSchema, observationsErrorSchema } from './observations.js';
import { snapshotSchema } from './snapshot.js';

/** The API's path; its version is the first segment. */
export const SNAPSHOTS_PATH = '/v1/snapshots';

/** Most snapshots in one request by default (an agent sends one; a relay may batch). */
export const DEFAULT_MAX_SNAPSHOTS = 500;

/** The CloudEvents `type` of a snapshot (or batch) event. */
export const SNAPSHOT_EVENT_TYPE = 'io.npu-fault.snapshot.v1';

/** The schema of a batch body. */
export type SnapshotBatchSchema = z.ZodObject<{ snapshots: z.ZodArray<typeof snapshotSchema> }>;

/** A batch body `{ "snapshots": [ … ] }` of 1 to `maxBatch` snapshots. */
export function snapshotBatchSchema(maxBatch: number = DEFAULT_MAX_SNAPSHOTS): SnapshotBatchSchema {
  if (!Number.isInteger(maxBatch) || maxBatch < 1) {
    throw new RangeError(`snapshots maxBatch: expected a positive integer, got ${maxBatch}`);
  }
  return z.object({ snapshots: z.array(snapshotSchema).min(1).max(maxBatch) });
}

/** One snapshot's result: the leader's, as the observations API answered it. */
export const ingestResultSchema = leaderResponseSchema.shape.results.element;

/** The 200 answer to the agent. */
export const ingestResponseSchema = z.object({
  /** The identity of the leading controller replica that accepted the snapshots. */
  leader: z.string().min(1),
  /** Its leadership term. */
  term: z.number().int().nonnegative(),
  results: z.array(ingestResultSchema),
});

/** The body of every error answer (the same shape as the observations API's). */
export const ingestErrorSchema = observationsErrorSchema;

/** A batch body as validated (defaults filled in). */
export type SnapshotBatch = z.output<SnapshotBatchSchema>;
/** A batch body as written on the wire. */
export type SnapshotBatchInput = z.input<SnapshotBatchSchema>;
export type IngestResult = z.infer<typeof ingestResultSchema>;
export type IngestResponse = z.infer<typeof ingestResponseSchema>;
export type IngestError = z.infer<typeof ingestErrorSchema>;

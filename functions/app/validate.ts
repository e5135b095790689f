/**
 * Validation of what an agent sent, all of it before anything is forwarded, with one-line
 * errors that name the field as a JSON pointer (RFC 6901) from the root of the body:
 * `/snapshots/3/payload/gpus/0/temperature_gpu: expected number, got string` (a structured
 * CloudEvent's data sits under `/data`).
 *
 * JSON.parse never pollutes a prototype (it defines `__proto__` as an own key), but a body
 * carrying `__proto__` (or `constructor.prototype`) is an attack or a bug, and the CloudEvents
 * SDK copies envelope keys by assignment, so such a body is refused before anything reads it.
 * The pointer, the key search and the short zod messages are platform/json-body.ts, shared
 * with the controller's observation endpoint.
 */
import type { z } from 'zod';
import { excerpt } from '../../core/errors.js';
import {
  AppError,
  describeZodIssue,
  findPollutingKey,
  isPlainObject,
  jsonPointer,
  kindOf,
  mayHoldPollutingKey,
} from '../../platform/index.js';
import {
  fastParseSnapshot,
  fastParseSnapshotBatch,
  snapshotBatchSchema,
  snapshotSchema,
  type Snapshot,
  type SnapshotBatchSchema,
} from '../../contracts/index.js';

/** Longest error message, so a pointer through long unknown keys stays one readable line. */
const MAX_MESSAGE = 300;

/** Why a body was refused with 400 (the `code` of the answer and the metric's `reason`). */
export type InvalidReason = 'invalid_body' | 'forbidden_key' | 'invalid_cloudevent';

/** The body is not valid: answer 400 with this message. */
export class InvalidBodyError extends AppError {
  /** The JSON pointer (or `ce-*` header) of the offending field ('' for the whole body). */
  readonly pointer: string;
  declare readonly code: InvalidReason;
  constructor(pointer: string, problem: string, code: InvalidReason = 'invalid_body') {
    super(code, excerpt(`${pointer || 'body'}: ${problem}`, MAX_MESSAGE), { status: 400 });
    this.pointer = pointer;
  }
}

/** The most snapshots a batch may hold, and the batch schema that says so. */
export interface SnapshotBatchLimit {
  readonly max: number;
  readonly schema: SnapshotBatchSchema;
}

/** The limit of batches of 1 to `max` snapshots. */
export function batchLimit(max: number): SnapshotBatchLimit {
  return { max, schema: snapshotBatchSchema(max) };
}

/**
 * The snapshots of `data`, which is one snapshot or a batch `{ "snapshots": [ … ] }` (told
 * apart by an own `snapshots` key), validated with defaults filled in; InvalidBodyError
 * naming the first offending field, its pointer prefixed with `at` (where `data` sits in the
 * body). Prototype keys are checked on the whole body beforehand (findPollutingKey).
 *
 * A valid body is read by the contract's fast path (contracts/snapshot-fast-path.ts, the
 * schema's result at a fraction of its CPU); anything it is not sure of goes to the schema,
 * which decides and names the field.
 */
export function parseSnapshots(data: unknown, at: string, batch: SnapshotBatchLimit): Snapshot[] {
  if (isPlainObject(data) && Object.hasOwn(data, 'snapshots')) {
    const fast = fastParseSnapshotBatch(data, batch.max);
    if (fast !== undefined) return fast;
    const result = batch.schema.safeParse(data, { error: describeZodIssue });
    if (result.success) return result.data.snapshots;
    throw invalid(result.error, at);
  }
  const fast = fastParseSnapshot(data);
  if (fast !== undefined) return [fast];
  const result = snapshotSchema.safeParse(data, { error: describeZodIssue });
  if (result.success) return [result.data];
  throw invalid(result.error, at);
}

/** How many snapshots `data` claims to carry (for counting refused ones): a batch's length, else 1. */
export function claimedCount(data: unknown): number {
  const snapshots = isPlainObject(data) ? (data as { snapshots?: unknown }).snapshots : undefined;
  return Array.isArray(snapshots) ? Math.max(snapshots.length, 1) : 1;
}

function invalid(error: z.ZodError, at: string): InvalidBodyError {
  const issue = error.issues[0];
  return new InvalidBodyError(at + jsonPointer(issue?.path ?? []), issue?.message ?? 'invalid');
}

/** Collectors whose readings are made up (`npu-fault agent --collector sim`). */
export const SIMULATED_COLLECTORS: ReadonlySet<string> = new Set(['sim']);

/**
 * 422 `simulated_collector` naming the first snapshot whose `collector` is simulated: a demo
 * agent left running (or started) in a real cluster must not report made-up failures that
 * cordon and drain nodes. It stops an accident, not a liar: any agent can name another collector.
 */
export function refuseSimulatedCollectors(snapshots: readonly Snapshot[], at: string, batch: boolean): void {
  snapshots.forEach((snapshot, i) => {
    if (!SIMULATED_COLLECTORS.has(snapshot.collector)) return;
    const pointer = `${at}${batch ? `/snapshots/${i}` : ''}/collector`;
    throw new AppError(
      'simulated_collector',
      `${pointer}: "${snapshot.collector}" is a simulated collector, refused unless the function runs with --allow-simulated-collectors`,
      { status: 422 },
    );
  });
}

/** Throws InvalidBodyError (`forbidden_key`) when `body` holds a prototype-polluting key. */
export function refusePollutingKeys(body: unknown): void {
  const polluting = findPollutingKey(body);
  if (polluting !== undefined) throw new InvalidBodyError(polluting, 'forbidden key', 'forbidden_key');
}

export { findPollutingKey, isPlainObject, jsonPointer, kindOf, mayHoldPollutingKey };

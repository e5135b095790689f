/**
 * A batch: the snapshots of concurrent forward() calls sent together, and the callers waiting
 * for the leader's answer to them. It keeps them only serialised, never the snapshot objects:
 * those die young, with their request, rather than living on in the heap while the batch
 * waits for the leader.
 */
import type { LeaderObservationResult, Snapshot } from '../../contracts/index.js';
import type { Cancel } from '../../platform/index.js';
import type { ForwardResult } from './forwarder.js';

/** One forward() call waiting in a batch: its snapshots are `count` from `offset`. */
export interface Caller {
  readonly offset: number;
  readonly count: number;
  resolve(result: ForwardResult): void;
  reject(error: Error): void;
}

/** Snapshots sent together; each replica gets it once (plus retries to the leader). */
export interface Batch {
  readonly id: number;
  /** How many snapshots it holds. */
  count: number;
  readonly callers: Caller[];
  /** The callers' observations as JSON array items (no brackets), until flushed. */
  parts: ObservationsJson[];
  /** The observations as JSON array items (no brackets) in UTF-8, encoded once at flush for every replica. */
  json: Buffer;
  /** The snapshots' JSON size as the callers measured it (0 when not told). */
  bytes: number;
  flushed: boolean;
  /** When it was flushed (the clock's monotonic ms): a follower's window runs from then. */
  flushedAt: number;
  settled: boolean;
  /** A retry request is in flight. */
  retrying: boolean;
  /** The pause before the next evaluation, when one is scheduled. */
  retryTimer: Cancel | undefined;
  cancelDeadline: Cancel;
  /** Takes it out of the unsettled batches. */
  leaveUnsettled: () => void;
  /** Per replica identity: its request for this batch is pending, or done (answered, failed, dropped). */
  readonly status: Map<string, 'pending' | 'done'>;
}

const EMPTY = Buffer.alloc(0);
const OPEN = Buffer.from('{"observations":[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']}');

/** An empty, open batch. */
export function newBatch(id: number): Batch {
  return {
    id,
    count: 0,
    callers: [],
    parts: [],
    json: EMPTY,
    bytes: 0,
    flushed: false,
    flushedAt: 0,
    settled: false,
    retrying: false,
    retryTimer: undefined,
    cancelDeadline: () => undefined,
    leaveUnsettled: () => undefined,
    status: new Map(),
  };
}

/**
 * Observations already serialised as JSON array items (`{"snapshot":…}`, no brackets): text,
 * UTF-8 bytes, or UTF-8 parts that are sent one after another (the ingest app's
 * `{"snapshot":`, the body as received, `}`), so bytes received are never decoded and re-encoded.
 */
export type ObservationsJson = string | Buffer | readonly Buffer[];

/** One forward() call joining `batch`. */
export interface Call {
  readonly snapshots: readonly Snapshot[];
  /** The snapshots' JSON size, 0 when not told. */
  readonly bytes: number;
  /** The snapshots as observation items already serialised, when the caller has them. */
  readonly json: ObservationsJson | undefined;
  resolve(result: ForwardResult): void;
  reject(error: Error): void;
}

/** Adds `call`'s snapshots to `batch`, serialised (unless they came so), after those it holds. */
export function addCall(batch: Batch, call: Call): void {
  const count = call.snapshots.length;
  batch.callers.push({ offset: batch.count, count, resolve: call.resolve, reject: call.reject });
  batch.parts.push(
    call.json ?? JSON.stringify(call.snapshots.map((snapshot) => ({ snapshot }))).slice(1, -1),
  );
  batch.count += count;
  batch.bytes += call.bytes;
}

/** Closes `batch` to new calls at `now` (monotonic ms): its parts encoded once, for every replica. */
export function sealBatch(batch: Batch, now: number): void {
  batch.json = encodeParts(batch.parts);
  batch.parts = [];
  batch.flushed = true;
  batch.flushedAt = now;
}

/** `parts` joined by commas in one UTF-8 Buffer: text parts encoded together, byte parts copied as they are. */
function encodeParts(parts: readonly ObservationsJson[]): Buffer {
  if (parts.every((part) => typeof part === 'string')) return Buffer.from(parts.join(','));
  const buffers: Buffer[] = [];
  for (const [i, part] of parts.entries()) {
    if (i > 0) buffers.push(COMMA);
    if (typeof part === 'string') buffers.push(Buffer.from(part));
    else if (Buffer.isBuffer(part)) buffers.push(part);
    else buffers.push(...part);
  }
  return Buffer.concat(buffers);
}

/** The ObservationsRequest body of `batches`: their encoded observations copied together. */
export function requestBody(batches: readonly Batch[]): Buffer {
  const parts: Buffer[] = [OPEN];
  for (const [i, batch] of batches.entries()) {
    if (i > 0) parts.push(COMMA);
    parts.push(batch.json);
  }
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

/**
 * Answers every caller of `batch` with its slice of the leader's `results` (one per snapshot
 * of the batch, in order), then lets go of them.
 */
export function resolveCallers(
  batch: Batch,
  answer: { leader: string; term: number; results: LeaderObservationResult[] },
): void {
  const { leader, term, results } = answer;
  for (const caller of batch.callers) {
    caller.resolve({ leader, term, results: results.slice(caller.offset, caller.offset + caller.count) });
  }
  // A batch may wait on in followers' queues: it must not keep its callers' requests alive.
  batch.callers.length = 0;
}

/** Rejects every caller of `batch` with `error`, then lets go of them. */
export function rejectCallers(batch: Batch, error: Error): void {
  for (const caller of batch.callers) caller.reject(error);
  batch.callers.length = 0;
}

/**
 * Replay (the pure heart of `npu-fault replay`, CONTRACT §4): snapshots in arrival order
 * through the same normalisation and detection engine the controller runs, with
 * collected_at as the clock; out come the changes of published status and the final
 * document.
 *
 * Semantics, the same as the controller's with a recorded stream:
 * - The file's order is the arrival order. Snapshots are pushed one at a time and never
 *   kept, so memory is bounded by the fleet (engine state, admission per node) plus the
 *   transitions printed, not by the length of the trace.
 * - `now`, the receiver's clock, is the largest collected_at of an admitted snapshot so
 *   far (nothing arrives before it was collected). A snapshot the engine will drop
 *   (duplicate, older seq, retired boot) moves no clock: its admission is decided here
 *   first, with the engine's own rule.
 * - Every snapshot counts as received at that `now`. This matters for a `cached` one (the
 *   agent's resend of its last good sample while its tool fails), which keeps its original
 *   collected_at (CONTRACT §1): it keeps its node alive at the current clock, and 10 s of
 *   nothing but cached snapshots is collector-error, as on a live controller, instead of
 *   the node's clock stopping and other nodes' time making it agent-unreachable.
 * - Before the clock moves to T, every deadline before T fires, stamped at the deadline
 *   (last_seen + 5 s), so a snapshot at exactly the deadline is in time; at the end, the
 *   deadlines up to the final `now` fire.
 * - Transitions are ordered by (at, node, npu).
 */
import {
  type PublishedDocument,
  DEFAULT_RULES,
  type Rules,
  snapshotSchema,
  type Snapshot,
} from '../../contracts/index.js';
import { ParseError, fromZodError } from '../errors.js';
import { devicesIn } from '../normalise.js';
import {
  admit,
  admitted,
  compareText,
  createEngine,
  newBootTrack,
  parseTimestamp,
  type BootTrack,
  type ReloadableEngine,
  type Transition,
} from '../engine/index.js';
import type { Line } from './lines.js';

/** What a replay produced. */
export interface ReplayResult {
  /** Every change of published status, sorted by (at, node, npu). */
  transitions: Transition[];
  /** The final document (publisher `replay`, term 0, timestamp = final now). */
  document: PublishedDocument;
  /** The final `now` (epoch ms); NaN for an empty input. */
  now: number;
  /** Snapshots pushed, and how many the engine applied. */
  snapshots: number;
  accepted: number;
}

/** An incremental replay: push snapshots in arrival order, then finish. */
export class Replay {
  readonly #engine: ReloadableEngine;
  readonly #admission = new Map<string, BootTrack>();
  readonly #transitions: Transition[] = [];
  #now = Number.NaN;
  #snapshots = 0;
  #accepted = 0;

  constructor(rules: Rules = DEFAULT_RULES) {
    this.#engine = createEngine(rules);
  }

  /** Applies one validated snapshot, received now. */
  push(snapshot: Snapshot): void {
    this.#snapshots++;
    const t = parseTimestamp(snapshot.collected_at);
    if (Number.isNaN(this.#now)) this.#now = t;
    const admitted = this.#admits(snapshot);
    if (admitted && t > this.#now) {
      // Deadlines strictly before the new time fire first (stamped at the deadline).
      this.#transitions.push(...this.#engine.tick(t - 1));
      this.#now = t;
    }
    const result = this.#engine.observe(snapshot, this.#now);
    if (result.accepted) this.#accepted++;
    this.#transitions.push(...result.transitions);
  }

  /** Fires the deadlines due by the final clock and returns everything. */
  finish(): ReplayResult {
    const now = this.#now;
    if (!Number.isNaN(now)) this.#transitions.push(...this.#engine.tick(now));
    const transitions = this.#transitions.sort(compareTransitions);
    const document = this.#engine.document(Number.isNaN(now) ? 0 : now, { identity: 'replay', term: 0 });
    return { transitions, document, now, snapshots: this.#snapshots, accepted: this.#accepted };
  }

  /** The engine's admission rule, run ahead on a copy of its per-node record. */
  #admits(snapshot: Snapshot): boolean {
    // Dropped before admission (too-many-devices): it takes no seq and moves no clock.
    if (devicesIn(snapshot.payload) > this.#engine.rules().max_devices_per_node) return false;
    let track = this.#admission.get(snapshot.node);
    if (!track) this.#admission.set(snapshot.node, (track = newBootTrack()));
    const verdict = admit(track, snapshot.boot_id, snapshot.seq);
    return admitted(verdict);
  }
}

/** Replays snapshots already in memory (tests, the demo, the benchmark). */
export function runReplay(snapshots: Iterable<Snapshot>, rules: Rules = DEFAULT_RULES): ReplayResult {
  const replay = new Replay(rules);
  for (const snapshot of snapshots) replay.push(snapshot);
  return replay.finish();
}

/**
 * Replays a stream of JSON lines (blank lines skipped). The first bad line stops it with
 * an error naming `<file>:<line>` and the field; nothing is returned then, so a caller
 * prints nothing partial.
 */
export async function replayLines(
  lines: AsyncIterable<Line>,
  file: string,
  rules: Rules = DEFAULT_RULES,
): Promise<ReplayResult> {
  const replay = new Replay(rules);
  for await (const { text, line } of lines) {
    const snapshot = parseSnapshotLine(text, file, line);
    if (snapshot !== undefined) replay.push(snapshot);
  }
  return replay.finish();
}

/** Parses one line of a trace: a snapshot, undefined for a blank line, or a one-line error. */
export function parseSnapshotLine(text: string, file: string, line: number): Snapshot | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (error) {
    const reason = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
    throw new ParseError(`${file}:${line}: invalid JSON: ${shorten(reason)}`);
  }
  const result = snapshotSchema.safeParse(value);
  if (!result.success) throw new ParseError(`${file}:${line}: ${fromZodError(result.error).message}`);
  return result.data;
}

/** V8 quotes the input in JSON errors; a hostile line must not come back whole. */
function shorten(message: string): string {
  return message.length > 120 ? `${message.slice(0, 120)}…` : message;
}

/** The replay line of a transition (the stable key is not printed). */
export function formatTransition(t: Transition): string {
  return JSON.stringify({ at: t.at, node: t.node, npu: t.npu, from: t.from, to: t.to, reason: t.reason });
}

/** Order of printed transitions: time, then node, then device. */
export function compareTransitions(a: Transition, b: Transition): number {
  return (
    parseTimestamp(a.at) - parseTimestamp(b.at) || compareText(a.node, b.node) || compareText(a.npu, b.npu)
  );
}

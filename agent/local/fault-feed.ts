/**
 * This node's published status as the ingest function last answered it: what the agent
 * serves to the pods of its node (`/v1/fault`, `/v1/fault/stream`), so they learn of a
 * change one push after it happens, with no API credentials and no watch.
 *
 * **What is a change.** Every answer carries the node's entry as the leader sees it; its
 * `observed_at` and each listed device's `temperature_c` and `power_w` move with every
 * sample, so they are left out when telling whether the entry changed (the newest entry is
 * still what is served). Anything else, a status, a reason, a signal, an ECC count, a link,
 * is a change and gets a new event id.
 *
 * **An old answer is said to be old.** With no answer for `staleAfterMs` (the function or the
 * controllers unreachable), and before the first answer, the state is `stale`: a pod must not
 * read an old "healthy" as current, since the controllers publish such a node `unknown`
 * after 5 s without a snapshot (CONTRACT §3.7). Turning stale, and fresh again, is a change.
 *
 * **No pod names.** The entry is served to every pod on the node, so the pods on its devices
 * (CONTRACT §1.9: who holds a device, other tenants' pods among them) are left out of it; the
 * main status ConfigMap and explain keep them.
 *
 * **Event ids** are the epoch milliseconds of the change (one more than the last id when two
 * changes share a millisecond), so they increase across agent restarts too: a pod resuming a
 * stream with the id it saw from the previous agent process never matches a new process's
 * state by accident and is sent the current state at once. 0 means no answer yet.
 */

import type { Clock } from '../../platform/index.js';

/** The feed's current state. */
export interface FaultState {
  /** The event id of the last change; 0 before the first answer. */
  id: number;
  /** The node's published entry; null when the node is healthy (not listed), or before the first answer. */
  entry: unknown;
  /** The leader whose answer this is; null before the first answer. */
  leader: string | null;
  term: number | null;
  /** When the entry last changed (ISO); null before the first answer. */
  at: string | null;
  /** When the last answer came (ISO), change or not; null before the first. */
  answeredAt: string | null;
  /** No answer yet, or none for `staleAfterMs`: the entry may be old. */
  stale: boolean;
}

/** How the feed tells an old answer. */
export interface FaultFeedOptions {
  /** Schedules the stale check; without it the feed turns stale only before its first answer. */
  clock?: Pick<Clock, 'now' | 'schedule'>;
  /** No answer this long: stale, ms (default 10 000: twice the controllers' 5 s agent-unreachable). */
  staleAfterMs?: number;
}

/** Default time without an answer before the feed says its entry is old. */
export const DEFAULT_FEED_STALE_AFTER_MS = 10_000;

/** The node's status as last answered, with change notifications. */
export interface FaultFeed {
  /** The node's current published entry (null = healthy), its event id, when it last changed. */
  current(): FaultState;
  /** Records an answer; bumps id (and notifies) only when the entry changed. */
  update(answer: { entry: unknown; leader: string; term: number }, at: string): void;
  /** Calls `listener` after every change; returns its removal. */
  subscribe(listener: () => void): () => void;
  /** Cancels the stale check (at shutdown). */
  close(): void;
}

/** Keys whose values move with every sample: not a change of status. */
const READINGS = new Set(['observed_at', 'temperature_c', 'power_w']);

/** A feed with no answer yet (stale). */
export function createFaultFeed(options: FaultFeedOptions = {}): FaultFeed {
  const { clock } = options;
  const staleAfterMs = options.staleAfterMs ?? DEFAULT_FEED_STALE_AFTER_MS;
  if (!(staleAfterMs > 0)) throw new RangeError(`fault feed staleAfterMs: expected > 0, got ${staleAfterMs}`);
  let state: FaultState = {
    id: 0,
    entry: null,
    leader: null,
    term: null,
    at: null,
    answeredAt: null,
    stale: true,
  };
  let key: string | undefined;
  let cancelCheck: (() => void) | undefined;
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };
  const turnStale = (): void => {
    if (clock === undefined || state.stale) return;
    const at = new Date(clock.now()).toISOString();
    state = { ...state, id: nextId(state.id, at), at, stale: true };
    notify();
  };
  return {
    current: () => state,
    update(answer, at) {
      const entry = withoutHolders(answer.entry ?? null);
      const next = changeKey(entry);
      const changed = next !== key || state.stale;
      key = next;
      state = {
        id: changed ? nextId(state.id, at) : state.id,
        entry,
        leader: answer.leader,
        term: answer.term,
        at: changed ? at : state.at,
        answeredAt: at,
        stale: false,
      };
      cancelCheck?.();
      cancelCheck = clock?.schedule(staleAfterMs, turnStale);
      if (changed) notify();
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close() {
      cancelCheck?.();
      cancelCheck = undefined;
    },
  };
}

function nextId(previous: number, at: string): number {
  const ms = Date.parse(at);
  return Number.isFinite(ms) && ms > previous ? ms : previous + 1;
}

/** The entry as canonical JSON (keys sorted), readings left out. */
function changeKey(entry: unknown): string {
  return JSON.stringify(entry, (name, value: unknown) => {
    if (READINGS.has(name)) return undefined;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** The entry without `pods` on its devices (the feed goes to every pod on the node). */
function withoutHolders(entry: unknown): unknown {
  if (entry === null || typeof entry !== 'object' || !('npus' in entry) || !Array.isArray(entry.npus))
    return entry;
  const npus: unknown[] = entry.npus;
  if (!npus.some((d) => d !== null && typeof d === 'object' && 'pods' in d)) return entry;
  return {
    ...entry,
    npus: npus.map((d) => {
      if (d === null || typeof d !== 'object' || !('pods' in d)) return d;
      const { pods: _pods, ...device } = d as Record<string, unknown>;
      return device;
    }),
  };
}

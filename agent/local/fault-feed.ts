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
 * **Event ids** are the epoch milliseconds of the change (one more than the last id when two
 * changes share a millisecond), so they increase across agent restarts too: a pod resuming a
 * stream with the id it saw from the previous agent process never matches a new process's
 * state by accident and is sent the current state at once. 0 means no answer yet.
 */

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
}

/** The node's status as last answered, with change notifications. */
export interface FaultFeed {
  /** The node's current published entry (null = healthy), its event id, when it last changed. */
  current(): FaultState;
  /** Records an answer; bumps id (and notifies) only when the entry changed. */
  update(answer: { entry: unknown; leader: string; term: number }, at: string): void;
  /** Calls `listener` after every change; returns its removal. */
  subscribe(listener: () => void): () => void;
}

/** Keys whose values move with every sample: not a change of status. */
const READINGS = new Set(['observed_at', 'temperature_c', 'power_w']);

/** A feed with no answer yet. */
export function createFaultFeed(): FaultFeed {
  let state: FaultState = { id: 0, entry: null, leader: null, term: null, at: null, answeredAt: null };
  let key: string | undefined;
  const listeners = new Set<() => void>();
  return {
    current: () => state,
    update(answer, at) {
      const next = changeKey(answer.entry ?? null);
      const changed = next !== key;
      key = next;
      state = {
        id: changed ? nextId(state.id, at) : state.id,
        entry: answer.entry ?? null,
        leader: answer.leader,
        term: answer.term,
        at: changed ? at : state.at,
        answeredAt: at,
      };
      if (!changed) return;
      for (const listener of [...listeners]) listener();
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
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

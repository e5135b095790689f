/**
 * Misses in a row, per target: `misses` in a row make the target unreachable, one answer
 * clears it. Pure: each probe's result and its time go in, the state comes out.
 */
import { SNAPSHOT_LIMITS } from '../../../contracts/fields/index.js';
import { formatEndpoint, type Target } from './targets.js';

/** One target's run of misses. */
export interface MissState {
  /** Probes missed in a row (0: the last one was answered, or none ran yet). */
  readonly consecutive: number;
  /** When the first miss of the run was seen (epoch ms); null while there is none. */
  readonly since: number | null;
  /** Why the last probe missed; null while the target answers. */
  readonly lastError: string | null;
}

/** No probe missed. */
export const ANSWERING: MissState = { consecutive: 0, since: null, lastError: null };

/** A probe's verdict: answered, or missed and why (one line). */
export type ProbeVerdict = { readonly answered: true } | { readonly answered: false; readonly error: string };

/** The state after a probe at `now`. */
export function afterProbe(state: MissState, verdict: ProbeVerdict, now: number): MissState {
  if (verdict.answered) return ANSWERING;
  return { consecutive: state.consecutive + 1, since: state.since ?? now, lastError: verdict.error };
}

/** Whether the target counts as unreachable: `misses` probes or more missed in a row. */
export function isUnreachable(state: MissState, misses: number): boolean {
  return state.consecutive >= misses;
}

/**
 * The problem's message for the unreachable targets, one line within the contract's bound:
 * `gateway 10.0.0.1:53: 3 probes missed in a row over 10 s (timeout after 2000 ms); …`.
 */
export function unreachableMessage(
  unreachable: readonly { readonly target: Target; readonly state: MissState }[],
  now: number,
  limit = SNAPSHOT_LIMITS.problemMessage,
): string {
  const parts = unreachable.map(({ target, state }) => {
    const over = state.since === null ? 0 : Math.max(0, Math.round((now - state.since) / 1000));
    return `${target.kind} ${formatEndpoint(target)}: ${state.consecutive} probes missed in a row over ${over} s (${state.lastError ?? 'no answer'})`;
  });
  const message = parts.join('; ');
  return message.length <= limit ? message : `${message.slice(0, limit - 1)}…`;
}

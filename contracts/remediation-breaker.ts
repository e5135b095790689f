/**
 * Self-healing's circuit breaker, kept in the ConfigMap `<namespace>/npu-fault-remediation-state`
 * (the controller's namespace), key `breaker.json`: open or closed, why, and which nodes a
 * person acknowledged when closing it. The controller's leader writes it; `npu-fault
 * remediation reset|status` reads it and closes it. Reads validate (anyone with update rights
 * on the ConfigMap may write it) and fail with one line naming the key and the field.
 */
import { z } from 'zod';
import { decodeJson, type Decoded } from './decoded.js';

/** The ConfigMap (in the controller's namespace) holding the breaker's state. */
export const BREAKER_CONFIGMAP = 'npu-fault-remediation-state';
/** Its data key. */
export const BREAKER_KEY = 'breaker.json';

const isoTime = z.iso.datetime({ offset: true });
const nodeName = z.string().min(1).max(253);

/** The breaker's state. */
export const breakerStateSchema = z.strictObject({
  state: z.enum(['open', 'closed']),
  /** When it last opened (null: never). */
  openedAt: isoTime.nullable(),
  /** Why it opened, in one line. */
  reason: z.string().max(1024).nullable(),
  /** The unhealthy nodes counted when it opened. */
  unhealthy: z.array(nodeName).max(10_000),
  /** Nodes a person acknowledged when closing it: they no longer count toward the limit. */
  acknowledged: z.array(nodeName).max(10_000),
  /** When it was last closed, and by whom (`npu-fault remediation reset`, or `auto`). */
  closedAt: isoTime.nullable(),
  closedBy: z.string().max(253).nullable(),
});
export type BreakerState = z.infer<typeof breakerStateSchema>;

/** The state when nothing is stored: closed, never opened. */
export const CLOSED_BREAKER: BreakerState = Object.freeze({
  state: 'closed',
  openedAt: null,
  reason: null,
  unhealthy: [],
  acknowledged: [],
  closedAt: null,
  closedBy: null,
}) as BreakerState;

/** Reads `breaker.json` (absent: closed). */
export function decodeBreaker(text: string | undefined): Decoded<BreakerState> {
  if (text === undefined) return { value: CLOSED_BREAKER };
  return decodeJson(breakerStateSchema, text, `${BREAKER_CONFIGMAP}/${BREAKER_KEY}`);
}

/** The `breaker.json` value of a state. */
export function encodeBreaker(state: BreakerState): string {
  return JSON.stringify(breakerStateSchema.parse(state));
}

/**
 * The breaker closed by a person: every node counted when it opened is acknowledged (they
 * may now be remediated), and it opens again only for nodes beyond those.
 */
export function resetBreaker(state: BreakerState, at: string, by: string): BreakerState {
  const acknowledged = [...new Set([...state.acknowledged, ...state.unhealthy])].sort();
  return { ...state, state: 'closed', acknowledged, closedAt: at, closedBy: by };
}

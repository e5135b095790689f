/**
 * Self-healing's state, kept in the API so that it survives a failover or a restart of every
 * replica (pure: encoding and validation only).
 *
 * - **On each Node it cordoned**, the annotation `npu-fault.io/remediation` (compact JSON):
 *   ownership (only nodes carrying it are ever uncordoned or drained), the phase, and the
 *   times the next step depends on (drain delay, recovery hold, cooldown).
 * - **The circuit breaker**, the ConfigMap `<namespace>/npu-fault-remediation-state`, key
 *   `breaker.json`: open or closed, why, and which nodes a person acknowledged when closing
 *   it (`npu-fault remediation reset`).
 *
 * Both are boundaries (anyone with patch rights may write them), so reads validate and fail
 * with one line naming the annotation or key and the field.
 */
import { z } from 'zod';
import { MAINTENANCE_ANNOTATION, REMEDIATION_ANNOTATION, REMEDIATION_CONFIGMAP } from '../watch/index.js';

export { MAINTENANCE_ANNOTATION, REMEDIATION_ANNOTATION, REMEDIATION_CONFIGMAP };
/** The taint added with the cordon (effect NoSchedule). */
export const UNHEALTHY_TAINT_KEY = 'npu-fault.io/unhealthy';
/** The ConfigMap (in the controller's namespace) holding the breaker's state. */
export const BREAKER_CONFIGMAP = 'npu-fault-remediation-state';
/** Its data key. */
export const BREAKER_KEY = 'breaker.json';
/** Its data key (YAML, a superset of JSON). */
export const REMEDIATION_CONFIG_KEY = 'remediation.yaml';

const isoTime = z.iso.datetime({ offset: true });
const nodeName = z.string().min(1).max(253);

/**
 * Where a node this controller owns stands:
 * - `cordoned`: unschedulable (and tainted) by us; in mode drain, waiting for the drain delay;
 * - `draining`: pods being evicted (a new leader resumes it);
 * - `drained`: every pod that had to go is gone;
 * - `blocked`: the last drain timed out (blocking pods listed); retried later;
 * - `overridden`: a person uncordoned it: left alone until it recovers;
 * - `released`: uncordoned by us after recovery, or recovered after an override; kept for
 *   the cooldown, then the annotation is removed.
 */
export const REMEDIATION_PHASES = [
  'cordoned',
  'draining',
  'drained',
  'blocked',
  'overridden',
  'released',
] as const;
export type RemediationPhase = (typeof REMEDIATION_PHASES)[number];

/** The `npu-fault.io/remediation` record. */
export const nodeRecordSchema = z.strictObject({
  phase: z.enum(REMEDIATION_PHASES),
  /** The replica and term that cordoned it. */
  by: z.string().min(1).max(253),
  term: z.number().int().nonnegative(),
  /** When it was cordoned. */
  since: isoTime,
  /** Why, in one line (`npu3: pcie-link-down`). */
  reason: z.string().max(1024),
  /** The failed devices' resource ids when it was cordoned (per-device eviction). */
  devices: z.array(z.string().min(1).max(256)).max(256),
  /** Whether we added the taint (so only ours is removed). */
  tainted: z.boolean(),
  drainStartedAt: isoTime.nullable(),
  drainFinishedAt: isoTime.nullable(),
  /** Pods that blocked the last drain (`namespace/name: why`), at most 20. */
  blocking: z.array(z.string().max(512)).max(20),
  /** When its devices were first seen healthy again (the uncordon hold runs from here). */
  recoveredAt: isoTime.nullable(),
  /** When it was released or overridden (the cooldown runs from here). */
  releasedAt: isoTime.nullable(),
});
export type NodeRecord = z.infer<typeof nodeRecordSchema>;

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

/** Decoded, or one line saying what is wrong. */
export type Decoded<T> = { value: T; error?: undefined } | { value?: undefined; error: string };

function decode<T>(schema: z.ZodType<T>, text: string, where: string): Decoded<T> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { error: `${where}: not JSON` };
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { value: parsed.data };
  const issue = parsed.error.issues[0];
  const path = issue?.path.length ? `/${issue.path.map(String).join('/')}` : '';
  return { error: `${where}${path}: ${issue?.message ?? 'invalid'}` };
}

/** Reads `npu-fault.io/remediation`. */
export function decodeNodeRecord(text: string): Decoded<NodeRecord> {
  return decode(nodeRecordSchema, text, REMEDIATION_ANNOTATION);
}

/** The annotation value of a record. */
export function encodeNodeRecord(record: NodeRecord): string {
  return JSON.stringify(nodeRecordSchema.parse(record));
}

/** Reads `breaker.json` (absent: closed). */
export function decodeBreaker(text: string | undefined): Decoded<BreakerState> {
  if (text === undefined) return { value: CLOSED_BREAKER };
  return decode(breakerStateSchema, text, `${BREAKER_CONFIGMAP}/${BREAKER_KEY}`);
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

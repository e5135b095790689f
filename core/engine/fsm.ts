/**
 * The device state machine (CONTRACT §2.4). Pure: `advance` reads one sample's active
 * reasons and its collected_at and moves the state; it never reads a clock.
 *
 *            clean sample                     5 clean samples
 *   unknown ───────────────▶ healthy ◀──────────────────────── degraded | failed
 *   unknown | healthy ── a warning active without a gap for 60 s ──▶ degraded
 *   degraded ── degraded for 180 s, a reason still active ──▶ failed
 *   any state ── a critical reason, in the same sample ──▶ failed
 *   (latched reasons never leave the active set: no clean sample until a new boot with reset
 *   counters, or an operator clear)
 *
 * | from            | condition (evaluated on each sample, in this order)        | to       |
 * |-----------------|-------------------------------------------------------------|----------|
 * | any but failed  | a critical reason is active                                 | failed   |
 * | unknown         | no reason is active                                         | healthy  |
 * | unknown|healthy | some warning active in every sample for ≥ degrade (60 s)    | degraded |
 * | degraded        | `clean` ≥ recover (5) consecutive samples without a reason  | healthy  |
 * | degraded        | degraded for ≥ fail (180 s) and a reason active now (*)     | failed   |
 * | failed          | `clean` ≥ recover (5)                                       | healthy  |
 *
 * (*) a reason other than the `degradeOnly` ones (the inference canary, by default), which
 * hold a device degraded for as long as they last but never fail it on the clock.
 *
 * Degraded → failed needs a reason active in the sample that reaches 180 s (a deliberate
 * reading of CONTRACT §2.4's "degraded for 180 s"): a device whose warnings went quiet and
 * that is waiting out its 5 clean samples is recovering, and the clock alone must not fail
 * it. It stays degraded (published with the warning that degraded it) and turns healthy on
 * its 5th clean sample; if a reason returns first, it never stopped being degraded, so that
 * sample fails it at once when 180 s have passed.
 *
 * "Without a gap": `warnSince` is the collected_at of the first sample of the current run
 * of samples that each had *some* warning reason (they may take turns); a sample without
 * any warning ends the run. Latched reasons stay in the active mask until a new boot or an
 * operator clear, so a latched device can never count a clean sample.
 */
import type { DeviceStatus } from './api.js';

/** The state machine's part of a device's state. */
export interface FsmState {
  state: DeviceStatus;
  /** collected_at (ms) when `state` began. */
  since: number;
  /** collected_at (ms) of the first sample of the current warning run; NaN when none. */
  warnSince: number;
  /** Consecutive samples without an active reason. */
  clean: number;
}

/** The state machine's durations, and the reasons that may not run out its 180 s. */
export interface FsmTiming {
  degradeMs: number;
  failMs: number;
  recoverSamples: number;
  /**
   * Warning reasons that hold a device degraded but never fail it through `failMs` (the
   * inference canary by default: it says serving is broken, not which chip). Default none.
   */
  degradeOnly?: number;
}

/** A fresh state machine: `unknown` since `t`. */
export function initialFsm(t: number): FsmState {
  return { state: 'unknown', since: t, warnSince: Number.NaN, clean: 0 };
}

/**
 * Applies one sample at collected_at `t` with `active` reasons (`critical` marks the
 * critical bits). Returns true when the state changed.
 */
export function advance(
  fsm: FsmState,
  active: number,
  critical: number,
  t: number,
  timing: FsmTiming,
): boolean {
  const hasCritical = (active & critical) !== 0;
  if ((active & ~critical) !== 0) {
    if (Number.isNaN(fsm.warnSince)) fsm.warnSince = t;
  } else {
    fsm.warnSince = Number.NaN;
  }
  fsm.clean = active === 0 ? fsm.clean + 1 : 0;
  const next = nextState(fsm, active, hasCritical, t, timing);
  if (next === fsm.state) return false;
  fsm.state = next;
  fsm.since = t;
  return true;
}

function nextState(
  fsm: FsmState,
  active: number,
  hasCritical: boolean,
  t: number,
  timing: FsmTiming,
): DeviceStatus {
  const warnedLongEnough = t - fsm.warnSince >= timing.degradeMs; // false while warnSince is NaN
  switch (fsm.state) {
    case 'unknown':
      if (hasCritical) return 'failed';
      if (active === 0) return 'healthy';
      return warnedLongEnough ? 'degraded' : 'unknown';
    case 'healthy':
      if (hasCritical) return 'failed';
      return warnedLongEnough ? 'degraded' : 'healthy';
    case 'degraded':
      if (hasCritical) return 'failed';
      if (fsm.clean >= timing.recoverSamples) return 'healthy';
      return (active & ~(timing.degradeOnly ?? 0)) !== 0 && t - fsm.since >= timing.failMs
        ? 'failed'
        : 'degraded';
    case 'failed':
      return fsm.clean >= timing.recoverSamples ? 'healthy' : 'failed';
  }
}

/**
 * Long-running parts and how a component runs them (controller-runtime's Runnable and
 * Manager). A component's main builds its Runnables, then:
 *
 * ```ts
 * const result = await runAll([server, loop], { signal: onTerminationSignals(process), gracePeriodMs: 10_000, log });
 * process.exit(result.exitCode);
 * ```
 *
 * The group stops as a whole: on SIGTERM/SIGINT, or as soon as any member fails or returns
 * on its own (a component missing a part is broken; exiting lets Kubernetes restart it).
 */
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import { runGroupsAs } from './start-groups.js';

/** A long-running part of a component (a server, a watch, a loop). */
export interface Runnable {
  /** Names it in logs and results; unique within a group. */
  readonly name: string;
  /**
   * Runs until `signal` aborts, then stops and resolves. Rejects when it fails. Resolving
   * before the signal aborts means it ended on its own (the group then stops).
   */
  start(signal: AbortSignal): Promise<void>;
}

/** How `runAll` runs a group. */
export interface RunOptions {
  /** Aborting it stops the group (see onTerminationSignals). */
  signal: AbortSignal;
  /**
   * How long members get to stop once stopping begins, in ms. Keep it below the pod's
   * terminationGracePeriodSeconds (default 30 s) so the process exits before it is killed.
   */
  gracePeriodMs: number;
  log: Logger;
  /** Times the grace period (default systemClock). */
  clock?: Clock;
}

/** How one member ended. */
export type RunnableOutcome =
  | { name: string; state: 'stopped' }
  | { name: string; state: 'exited' }
  | { name: string; state: 'failed'; error: unknown }
  | { name: string; state: 'timed-out' };

/** How the group ended. */
export interface RunResult {
  /** What started the stop: the signal, a member's failure, or a member ending on its own. */
  trigger: 'signal' | 'failure' | 'exit';
  /** One outcome per member, in the order given. */
  outcomes: RunnableOutcome[];
  /** Members still running when the grace period ran out. */
  notStopped: string[];
  /** 0 when stopped by the signal and every member stopped cleanly in time; otherwise 1. */
  exitCode: number;
}

/**
 * Starts every runnable and stops all of them when `signal` aborts or any one fails or
 * returns. Waits at most `gracePeriodMs` for them to stop, then reports (logs and result)
 * those that did not: the caller should exit the process then, as they may still hold it.
 * When `signal` has already aborted, nothing is started.
 */
export async function runAll(runnables: readonly Runnable[], options: RunOptions): Promise<RunResult> {
  const result = await runGroupsAs('runAll', [{ name: 'all', runnables }], options);
  // Its one group goes unstarted only when the signal had already aborted: runAll reports 'stopped'.
  const outcomes = result.outcomes.map((o): RunnableOutcome =>
    o.state === 'not-started' ? { name: o.name, state: 'stopped' } : o,
  );
  return { ...result, outcomes };
}

/** The minimal process surface onTerminationSignals needs (injectable for tests). */
export interface SignalSource {
  once(event: NodeJS.Signals, listener: () => void): unknown;
  off(event: NodeJS.Signals, listener: () => void): unknown;
}

/**
 * An AbortSignal aborted by the first SIGTERM or SIGINT (the reason names it). Its listeners
 * are removed then, so a second signal gets the runtime's default (immediate exit): a stuck
 * shutdown can still be interrupted by pressing Ctrl-C twice.
 */
export function onTerminationSignals(
  source: SignalSource,
  signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'],
): AbortSignal {
  const controller = new AbortController();
  const listeners = signals.map((name) => {
    const listener = (): void => {
      for (const [other, l] of listeners) source.off(other, l);
      controller.abort(new Error(`received ${name}`));
    };
    source.once(name, listener);
    return [name, listener] as const;
  });
  return controller.signal;
}

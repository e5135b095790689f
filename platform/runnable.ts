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
import { systemClock, type Clock } from './clock.js';
import { describeError } from './errors.js';
import type { Logger } from './logger.js';

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
  assertUniqueNames(runnables);
  const { log, gracePeriodMs } = options;
  const clock = options.clock ?? systemClock;
  const stop = new AbortController();
  let trigger: RunResult['trigger'] = 'signal';
  const requestStop = (why: RunResult['trigger'], reason: unknown): void => {
    if (stop.signal.aborted) return;
    trigger = why;
    stop.abort(reason);
  };
  if (options.signal.aborted) {
    log.info({ reason: describeError(options.signal.reason) }, 'stopped before starting');
    return {
      trigger: 'signal',
      outcomes: runnables.map(({ name }) => ({ name, state: 'stopped' })),
      notStopped: [],
      exitCode: 0,
    };
  }
  const onSignal = (): void => requestStop('signal', options.signal.reason);
  options.signal.addEventListener('abort', onSignal, { once: true });

  const outcomes = new Map<string, RunnableOutcome>();
  const finished = runnables.map(async (runnable) => {
    try {
      await runnable.start(stop.signal);
      const state = stop.signal.aborted ? 'stopped' : 'exited';
      outcomes.set(runnable.name, { name: runnable.name, state });
      if (state === 'exited') log.error({ runnable: runnable.name }, 'runnable ended on its own; stopping');
      requestStop('exit', new Error(`${runnable.name} ended on its own`));
    } catch (error) {
      outcomes.set(runnable.name, { name: runnable.name, state: 'failed', error });
      log.error({ runnable: runnable.name, err: error }, 'runnable failed; stopping');
      requestStop('failure', error);
    }
  });
  const allFinished = Promise.all(finished);

  await Promise.race([allFinished, aborted(stop.signal)]);
  options.signal.removeEventListener('abort', onSignal);
  log.info({ trigger, reason: describeError(stop.signal.reason), gracePeriodMs }, 'stopping');
  await withinGrace(allFinished, gracePeriodMs, clock);

  const notStopped = runnables.filter((r) => !outcomes.has(r.name)).map((r) => r.name);
  for (const name of notStopped) outcomes.set(name, { name, state: 'timed-out' });
  if (notStopped.length > 0)
    log.error({ notStopped, gracePeriodMs }, 'runnables did not stop within the grace period');
  const ordered = runnables.map((r) => outcomes.get(r.name) as RunnableOutcome);
  const clean = trigger === 'signal' && ordered.every((o) => o.state === 'stopped');
  log.info({ exitCode: clean ? 0 : 1 }, 'stopped');
  return { trigger, outcomes: ordered, notStopped, exitCode: clean ? 0 : 1 };
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

/** Resolves when `done` settles or `ms` pass, whichever is first; never leaves a timer behind. */
async function withinGrace(done: Promise<unknown>, ms: number, clock: Clock): Promise<void> {
  const timer = new AbortController();
  const expired = clock.sleep(ms, timer.signal).catch(() => undefined);
  await Promise.race([done, expired]);
  timer.abort();
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

function assertUniqueNames(runnables: readonly Runnable[]): void {
  if (runnables.length === 0) throw new RangeError('runAll: nothing to run');
  const seen = new Set<string>();
  for (const { name } of runnables) {
    if (seen.has(name)) throw new RangeError(`runAll: two runnables are named "${name}"`);
    seen.add(name);
  }
}

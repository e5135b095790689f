/**
 * Start groups (controller-runtime's manager, which starts its Runnables by kind: HTTP servers,
 * then caches, then the rest, then leader-election work, and stops them the other way round).
 * A component declares its groups in order; `runGroups` starts each group's runnables once the
 * group before it is ready (its caches synced, its state seeded), and on SIGTERM, or as soon as
 * any runnable fails or returns on its own, stops the started groups in reverse order: a group
 * is told to stop once every group started after it has stopped. One grace period covers the
 * whole stop; past it, every group still running is told to stop and named in the result.
 *
 * ```ts
 * const result = await runGroups(
 *   [
 *     { name: 'servers', runnables: [metricsServer] },
 *     { name: 'caches', runnables: [nodes], ready: () => nodes.whenSynced() },
 *     { name: 'leaderOnly', runnables: [leaderWork] },
 *   ],
 *   { signal: onTerminationSignals(process), gracePeriodMs: 10_000, log },
 * );
 * ```
 */
import { untilAborted } from './abort.js';
import { systemClock } from './clock.js';
import { describeError } from './errors.js';
import type { RunOptions, RunResult, Runnable, RunnableOutcome } from './runnable.js';

/** Runnables started together, after the group before them is ready. */
export interface StartGroup {
  /** Names it in logs; unique among the groups. */
  readonly name: string;
  readonly runnables: readonly Runnable[];
  /**
   * Resolves when the next group may start (caches synced, state seeded); absent: at once.
   * A rejection stops everything, as a failing runnable does. `signal` aborts when stopping begins.
   */
  ready?(signal: AbortSignal): Promise<void>;
}

/** How one runnable of a group ended: as in runAll, or never started (an earlier group failed). */
export type GroupOutcome = RunnableOutcome | { name: string; state: 'not-started' };

/** How the groups ended. */
export interface GroupsResult extends Omit<RunResult, 'outcomes'> {
  /** One outcome per runnable, groups in order, runnables in the order given. */
  outcomes: GroupOutcome[];
}

/** A started group; `runs` fills as its runnables start. */
interface Started {
  readonly group: StartGroup;
  readonly stop: AbortController;
  readonly runs: Promise<void>[];
}

/**
 * Runs `groups` in order until `options.signal` aborts or a runnable fails or returns, then
 * stops them in reverse order within `gracePeriodMs`. Exit code 0 only when stopped by the
 * signal with every started runnable stopped in time. When the signal has already aborted,
 * nothing is started.
 */
export function runGroups(groups: readonly StartGroup[], options: RunOptions): Promise<GroupsResult> {
  return runGroupsAs('runGroups', groups, options);
}

/** runGroups naming `caller` in its errors (runAll runs its runnables as one group). */
export async function runGroupsAs(
  caller: string,
  groups: readonly StartGroup[],
  options: RunOptions,
): Promise<GroupsResult> {
  const runnables = groups.flatMap((group) => group.runnables);
  assertUniqueNames(caller, groups, runnables);
  const { log, gracePeriodMs } = options;
  const clock = options.clock ?? systemClock;
  if (options.signal.aborted) {
    log.info({ reason: describeError(options.signal.reason) }, 'stopped before starting');
    return {
      trigger: 'signal',
      outcomes: runnables.map(({ name }) => ({ name, state: 'not-started' })),
      notStopped: [],
      exitCode: 0,
    };
  }
  const stopping = new AbortController();
  const started: Started[] = [];
  let trigger: GroupsResult['trigger'] = 'signal';
  const requestStop = (why: GroupsResult['trigger'], reason: unknown): void => {
    if (stopping.signal.aborted) return;
    trigger = why;
    stopping.abort(reason);
    // The newest group stops first anyway; telling it at once keeps runAll's one group told in step.
    started.at(-1)?.stop.abort(reason);
  };
  const onSignal = (): void => requestStop('signal', options.signal.reason);
  options.signal.addEventListener('abort', onSignal, { once: true });

  const outcomes = new Map<string, GroupOutcome>();
  const run = async (runnable: Runnable, signal: AbortSignal): Promise<void> => {
    try {
      await runnable.start(signal);
      const state = signal.aborted ? 'stopped' : 'exited';
      outcomes.set(runnable.name, { name: runnable.name, state });
      if (state === 'exited') log.error({ runnable: runnable.name }, 'runnable ended on its own; stopping');
      requestStop('exit', new Error(`${runnable.name} ended on its own`));
    } catch (error) {
      outcomes.set(runnable.name, { name: runnable.name, state: 'failed', error });
      log.error({ runnable: runnable.name, err: error }, 'runnable failed; stopping');
      requestStop('failure', error);
    }
  };

  for (const group of groups) {
    if (stopping.signal.aborted) break;
    // Listed before its runnables start, so a start that throws at once stops this group too.
    const entry: Started = { group, stop: new AbortController(), runs: [] };
    started.push(entry);
    for (const runnable of group.runnables) entry.runs.push(run(runnable, entry.stop.signal));
    log.debug({ group: group.name }, 'group started');
    if (!group.ready) continue;
    try {
      await untilAborted(group.ready(stopping.signal), stopping.signal);
    } catch (error) {
      log.error({ group: group.name, err: error }, 'group did not become ready; stopping');
      requestStop('failure', error);
    }
  }

  await aborted(stopping.signal);
  options.signal.removeEventListener('abort', onSignal);
  log.info({ trigger, reason: describeError(stopping.signal.reason), gracePeriodMs }, 'stopping');
  const timer = new AbortController();
  const expired = clock.sleep(gracePeriodMs, timer.signal).then(
    () => 'expired' as const,
    () => 'expired' as const,
  );
  for (const { group, stop, runs } of [...started].reverse()) {
    stop.abort(stopping.signal.reason);
    const first = await Promise.race([Promise.all(runs).then(() => 'stopped' as const), expired]);
    if (first === 'expired') break;
    log.debug({ group: group.name }, 'group stopped');
  }
  // Past the grace period the groups not told yet are told now; they are not waited for.
  for (const { stop } of started) stop.abort(stopping.signal.reason);
  timer.abort();

  const begun = new Set(started.flatMap(({ group }) => group.runnables.map((r) => r.name)));
  const notStopped = runnables.filter((r) => begun.has(r.name) && !outcomes.has(r.name)).map((r) => r.name);
  for (const name of notStopped) outcomes.set(name, { name, state: 'timed-out' });
  if (notStopped.length > 0)
    log.error({ notStopped, gracePeriodMs }, 'runnables did not stop within the grace period');
  const ordered = runnables.map(
    ({ name }): GroupOutcome => outcomes.get(name) ?? { name, state: 'not-started' },
  );
  const clean =
    trigger === 'signal' && ordered.every((o) => o.state === 'stopped' || o.state === 'not-started');
  log.info({ exitCode: clean ? 0 : 1 }, 'stopped');
  return { trigger, outcomes: ordered, notStopped, exitCode: clean ? 0 : 1 };
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

function assertUniqueNames(
  caller: string,
  groups: readonly StartGroup[],
  runnables: readonly Runnable[],
): void {
  if (runnables.length === 0) throw new RangeError(`${caller}: nothing to run`);
  for (const [kind, names] of [
    ['groups', groups.map((g) => g.name)],
    ['runnables', runnables.map((r) => r.name)],
  ] as const) {
    const seen = new Set<string>();
    for (const name of names) {
      if (seen.has(name)) throw new RangeError(`${caller}: two ${kind} are named "${name}"`);
      seen.add(name);
    }
  }
}

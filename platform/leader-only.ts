/**
 * Work that runs only while this replica leads (controller-runtime's leader-election
 * runnables), kept across terms: a replica that loses the lease stays a hot standby and may
 * lead again later, so its leader work starts afresh with each term instead of the process
 * exiting.
 *
 * `createLeaderOnly` gives a Runnable to put in the last start group (start-groups.ts): idle
 * until the elector reports a term (`lead`, from its onStartedLeading), it then prepares the
 * term and runs the term's runnables until the term ends (lease lost or given up) or the group
 * stops (shutdown), whichever comes first. Its own stop waits for them, so the groups before it
 * (the elector, the caches) stop only after the leader work has. A runnable of a term that
 * fails is logged and the others go on: the lease, not one part, says when leading ends.
 */
import { describeError } from './errors.js';
import type { Logger } from './logger.js';
import type { Runnable } from './runnable.js';

/** What one term runs. */
export interface LeaderTerm {
  readonly runnables: readonly Runnable[];
  /** Called once every runnable of the term has stopped (or when there were none). */
  ended?(): void;
}

/** How the leader-only work is built. */
export interface LeaderOnlyOptions {
  /** Names the Runnable (unique in its group). */
  name: string;
  log: Logger;
  /**
   * Prepares `term` (reads what the leader needs before it writes) and gives what to run.
   * `signal` aborts when the term ends; the term's runnables are started with it.
   */
  prepare(term: number, signal: AbortSignal): Promise<LeaderTerm>;
}

/** The leader-only work: a Runnable, fed with terms. */
export interface LeaderOnly extends Runnable {
  /**
   * This replica leads with `term` until `termSignal` aborts. Before the Runnable started, the
   * term waits for the start; once it is stopping, terms are ignored.
   */
  lead(term: number, termSignal: AbortSignal): void;
}

/** Creates the leader-only work. */
export function createLeaderOnly(options: LeaderOnlyOptions): LeaderOnly {
  const { log } = options;
  let runSignal: AbortSignal | undefined;
  let waiting: { term: number; termSignal: AbortSignal } | undefined;
  const terms = new Set<Promise<void>>();

  const runTerm = async (term: number, signal: AbortSignal): Promise<void> => {
    let prepared: LeaderTerm | undefined;
    try {
      prepared = await options.prepare(term, signal);
      const results = await Promise.allSettled(prepared.runnables.map(async (r) => r.start(signal)));
      for (const result of results)
        if (result.status === 'rejected')
          log.error({ term, err: describeError(result.reason) }, 'leader part failed');
    } catch (error) {
      log.error({ term, err: describeError(error) }, 'leader session failed');
    } finally {
      prepared?.ended?.();
    }
  };

  const begin = (term: number, termSignal: AbortSignal, run: AbortSignal): void => {
    if (termSignal.aborted) return;
    const done = runTerm(term, AbortSignal.any([termSignal, run])).finally(() => terms.delete(done));
    terms.add(done);
  };

  return {
    name: options.name,
    lead(term, termSignal) {
      if (runSignal === undefined) waiting = { term, termSignal };
      else if (!runSignal.aborted) begin(term, termSignal, runSignal);
      else log.debug({ term }, 'stopping: term ignored');
    },
    async start(signal) {
      if (runSignal !== undefined) throw new Error(`${options.name}: already started`);
      runSignal = signal;
      if (waiting && !signal.aborted) begin(waiting.term, waiting.termSignal, signal);
      waiting = undefined;
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener('abort', () => resolve(), { once: true });
      });
      while (terms.size > 0) await Promise.all([...terms]);
    },
  };
}

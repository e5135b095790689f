/**
 * Drains one node through the Eviction API, as `kubectl drain --ignore-daemonsets
 * --delete-emptydir-data` does, for self-healing:
 *
 * - lists the node's pods once and selects them (pods-to-evict.ts; per device when asked: the
 *   pods asking for accelerators that the kubelet's PodResources names as holding a failed
 *   device, or, where that is not known, whose allocation names one or cannot be read);
 * - evicts every selected pod at once; a refusal (429: a PodDisruptionBudget) or an API
 *   failure is retried with exponential backoff and full jitter, until the pod goes, the
 *   drain ends, or `forceDeleteAfterSeconds` (when set) has passed since the first attempt:
 *   then the pod is deleted, disruption budgets notwithstanding, and reported as forced;
 * - waits for each evicted pod to be gone (one list of the node per poll, whatever the
 *   number of pods), up to `podTimeoutSeconds`; a pod still there then blocks the drain;
 * - ends after `timeoutSeconds` as `timed-out`, listing the blocking pods and why, without
 *   forcing anything; an abort of the caller's signal ends it at once as `aborted`.
 *
 * Every wait runs on the injected Clock. Idempotent: run again on a half-drained node it
 * carries on (pods already gone are no error; an eviction of a pod already terminating is
 * not repeated, the drain waits for it). The drain does not cordon and does not wait for
 * `delaySeconds`: the caller does both first.
 */
import type { z } from 'zod';
import { describeError, type Clock, type Logger } from '../../platform/index.js';
import type { drainConfigSchema } from './config.js';
import { podKey, type PodClient, type PodSummary } from './pod-client.js';
import { podsToEvict, type EvictionScope, type SkippedPod } from './pods-to-evict.js';

/** The drain section of the remediation settings, after defaults. */
export type DrainConfig = z.output<typeof drainConfigSchema>;

/** Defaults of the request's tuning knobs. */
export const DRAIN_DEFAULTS = Object.freeze({ backoffInitialMs: 1000, backoffMaxMs: 10_000, pollMs: 500 });

/** Reasons longer than this are cut (the node record keeps `pod: reason` in 512 characters). */
const MAX_REASON_LENGTH = 400;

/** What a drain works with. */
export interface DrainDeps {
  readonly pods: PodClient;
  readonly clock: Clock;
  readonly log: Logger;
  /** Uniform in [0, 1): the backoff's jitter (default Math.random). */
  readonly random?: () => number;
}

/** One drain. */
export interface DrainRequest {
  readonly node: string;
  /** Failed devices' resource ids (`Ascend910-3`): evict only pods that may hold them when `config.perDevice`. */
  readonly devices?: readonly string[];
  /**
   * Who holds each failed device whose holders the agent reported (resource id →
   * `namespace/name`, the kubelet's PodResources): those pods are evicted, not the ones the
   * annotations point at. Failed devices left out fall back to the annotations.
   */
  readonly holders?: ReadonlyMap<string, readonly string[]>;
  readonly config: DrainConfig;
  /** Retry delays after a refused or failed eviction (defaults 1000 and 10 000 ms). */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
  /** How often the node's pods are listed while evicted pods are going (default 500 ms). */
  readonly pollMs?: number;
}

/** `drained`: every selected pod is gone; `timed-out`: some pod blocked; `aborted`: the caller stopped it. */
export type DrainOutcome = 'drained' | 'timed-out' | 'aborted';

/** A pod still there when the drain ended, and why (`eviction refused: …`, `did not terminate within 120 s`). */
export interface BlockingPod {
  /** `namespace/name`. */
  readonly pod: string;
  readonly reason: string;
}

/** What a drain did. Pods are `namespace/name`, sorted. */
export interface DrainReport {
  readonly outcome: DrainOutcome;
  /** `devices` when only pods that may hold the failed devices were selected (`config.perDevice`). */
  readonly scope: 'node' | 'devices';
  /** Pods whose eviction was accepted. */
  readonly evicted: string[];
  /** Pods deleted after `forceDeleteAfterSeconds` of refusals. */
  readonly forced: string[];
  /** Pods selected that were gone before the drain got them out (404, or replaced under their name). */
  readonly alreadyGone: string[];
  /** Pods left alone, with why. */
  readonly skipped: SkippedPod[];
  /** Pods that kept the drain from completing; on `aborted`, where each unfinished pod stood. */
  readonly blocking: BlockingPod[];
  /** Wall-clock epoch ms. */
  readonly startedAt: number;
  readonly finishedAt: number;
}

/** The state one drain shares between its pods. */
interface Run {
  readonly deps: DrainDeps;
  readonly request: DrainRequest;
  /** Aborts when the drain ends (caller's abort, overall timeout, or done). */
  readonly stop: AbortSignal;
  readonly watcher: GoneWatcher;
  /** Pods not finished yet, with where they stand. */
  readonly pending: Map<string, string>;
  readonly evicted: string[];
  readonly forced: string[];
  readonly alreadyGone: string[];
  readonly blocking: BlockingPod[];
}

/**
 * Drains `request.node`. Rejects only when the first list of the node's pods fails (a
 * K8sApiError; the drain is safe to run again); everything after that is in the report.
 */
export async function drainNode(
  deps: DrainDeps,
  request: DrainRequest,
  signal: AbortSignal,
): Promise<DrainReport> {
  const { clock, log } = deps;
  const startedAt = clock.now();
  const stopper = new AbortController();
  let ended: 'timed-out' | 'aborted' | undefined;
  const end = (why: 'timed-out' | 'aborted'): void => {
    ended ??= why;
    stopper.abort(new Error(`drain of ${request.node} ${why}`));
  };
  const onAbort = (): void => end('aborted');
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  const cancelDeadline = clock.schedule(request.config.timeoutSeconds * 1000, () => end('timed-out'));

  const run: Run = {
    deps,
    request,
    stop: stopper.signal,
    watcher: new GoneWatcher(deps, request.node, request.pollMs ?? DRAIN_DEFAULTS.pollMs, stopper.signal),
    pending: new Map(),
    evicted: [],
    forced: [],
    alreadyGone: [],
    blocking: [],
  };
  let scope: 'node' | 'devices' = 'node';
  let skipped: SkippedPod[] = [];
  try {
    const pods = await listPods(run);
    if (pods) {
      const selection = podsToEvict(pods, scopeOf(request));
      scope = selection.scope;
      skipped = selection.skipped;
      log.info(
        {
          node: request.node,
          scope,
          // Failed devices whose holders the kubelet named (the rest fall back to annotations).
          ...(scope === 'devices' && request.holders ? { holdersKnown: request.holders.size } : {}),
          evict: selection.evict.length,
          terminating: selection.waitFor.length,
          skipped: skipped.length,
          // Evicted because they ask for accelerators and say not which: worth a look.
          ...(selection.unknownAllocation.length > 0
            ? { unknownAllocation: selection.unknownAllocation.slice(0, 20) }
            : {}),
        },
        'drain started',
      );
      await Promise.all([
        ...selection.evict.map((pod) => evictPod(run, pod)),
        ...selection.waitFor.map((pod) => awaitGone(run, pod, 'already terminating')),
      ]);
    }
  } finally {
    cancelDeadline();
    signal.removeEventListener('abort', onAbort);
    stopper.abort(new Error(`drain of ${request.node} over`));
  }

  const blocking = [...run.blocking, ...[...run.pending].map(([pod, reason]) => ({ pod, reason }))];
  blocking.sort((a, b) => compare(a.pod, b.pod));
  const outcome: DrainOutcome =
    ended === 'aborted' ? 'aborted' : ended === 'timed-out' || blocking.length > 0 ? 'timed-out' : 'drained';
  const report: DrainReport = {
    outcome,
    scope,
    evicted: run.evicted.sort(compare),
    forced: run.forced.sort(compare),
    alreadyGone: run.alreadyGone.sort(compare),
    skipped,
    blocking,
    startedAt,
    finishedAt: clock.now(),
  };
  const summary = {
    node: request.node,
    outcome,
    scope,
    evicted: report.evicted.length,
    forced: report.forced.length,
  };
  if (outcome === 'drained') log.info({ ...summary, ms: report.finishedAt - startedAt }, 'drain finished');
  else log.warn({ ...summary, blocking: blocking.slice(0, 20) }, 'drain ended with pods left');
  return report;
}

/** The node's pods, or undefined when the drain ended while listing. */
async function listPods(run: Run): Promise<PodSummary[] | undefined> {
  if (run.stop.aborted) return undefined;
  try {
    return await run.deps.pods.list(run.request.node, run.stop);
  } catch (error) {
    if (run.stop.aborted) return undefined;
    throw error;
  }
}

function scopeOf(request: DrainRequest): EvictionScope {
  if (!request.config.perDevice || !request.devices?.length) return { kind: 'node' };
  return {
    kind: 'devices',
    devices: request.devices,
    annotationKeys: request.config.allocationAnnotations,
    ...(request.holders ? { holders: request.holders } : {}),
  };
}

/** Evicts one pod until it is out (then waits for it to go), or the drain ends. */
async function evictPod(run: Run, pod: PodSummary): Promise<void> {
  const { pods, clock, log } = run.deps;
  const { config } = run.request;
  const key = podKey(pod);
  run.pending.set(key, 'not evicted yet');
  const forceAt =
    config.forceDeleteAfterSeconds === undefined
      ? undefined
      : clock.monotonic() + config.forceDeleteAfterSeconds * 1000;
  for (let attempt = 0; !run.stop.aborted; attempt++) {
    const forcing = forceAt !== undefined && clock.monotonic() >= forceAt;
    let retryBecause: string;
    try {
      if (forcing) {
        if ((await pods.delete(pod.namespace, pod.name, pod.uid, run.stop)) === 'gone')
          return wentBefore(run, key);
        run.forced.push(key);
        log.warn(
          { node: run.request.node, pod: key, reason: run.pending.get(key) },
          'pod deleted: eviction refused too long',
        );
        return await awaitGone(run, pod, 'deleted');
      }
      const answer = await pods.evict(pod.namespace, pod.name, pod.uid, run.stop);
      if (answer.result === 'gone') return wentBefore(run, key);
      if (answer.result === 'evicted') {
        run.evicted.push(key);
        log.info({ node: run.request.node, pod: key, attempts: attempt + 1 }, 'pod evicted');
        return await awaitGone(run, pod, 'evicted');
      }
      retryBecause = `eviction refused: ${answer.message}`;
    } catch (error) {
      if (run.stop.aborted) return;
      retryBecause = `${forcing ? 'delete' : 'eviction'} failed: ${describeError(error)}`;
    }
    run.pending.set(key, clip(retryBecause));
    log.debug({ node: run.request.node, pod: key, attempt, reason: retryBecause }, 'eviction to be retried');
    let delay = backoffDelay(run, attempt);
    // Wake for the force deadline rather than sleep past it.
    if (forceAt !== undefined && !forcing) delay = Math.min(delay, Math.max(1, forceAt - clock.monotonic()));
    try {
      await clock.sleep(delay, run.stop);
    } catch {
      return;
    }
  }
}

/** A selected pod that was gone before the drain got it out. */
function wentBefore(run: Run, key: string): void {
  run.pending.delete(key);
  run.alreadyGone.push(key);
}

/** Waits for an evicted, deleted or terminating pod to be gone, up to podTimeoutSeconds. */
async function awaitGone(
  run: Run,
  pod: PodSummary,
  what: 'evicted' | 'deleted' | 'already terminating',
): Promise<void> {
  const key = podKey(pod);
  const { podTimeoutSeconds } = run.request.config;
  run.pending.set(key, `${what}, waiting for it to terminate`);
  const result = await run.watcher.until(pod.uid, podTimeoutSeconds * 1000);
  if (result === 'stopped') return;
  run.pending.delete(key);
  if (result === 'timeout') {
    run.blocking.push({ pod: key, reason: `${what}, but did not terminate within ${podTimeoutSeconds} s` });
  }
}

/** Exponential backoff with full jitter: uniform in (0, min(max, initial·2^attempt)]. */
function backoffDelay(run: Run, attempt: number): number {
  const initial = run.request.backoff?.initialMs ?? DRAIN_DEFAULTS.backoffInitialMs;
  const max = run.request.backoff?.maxMs ?? DRAIN_DEFAULTS.backoffMaxMs;
  const ceiling = Math.min(max, initial * 2 ** Math.min(attempt, 30));
  // At least 1 ms, so that an unlucky draw never turns into a busy loop.
  return Math.max(1, Math.floor((run.deps.random ?? Math.random)() * ceiling));
}

/**
 * Tells pods waiting to be gone when they are: lists the node every `pollMs` while anyone
 * waits, one list for all of them; a pod is gone when its uid is no longer listed.
 */
class GoneWatcher {
  readonly #waiters = new Map<object, { uid: string; finish: (result: 'gone') => void }>();
  #polling = false;

  constructor(
    private readonly deps: DrainDeps,
    private readonly node: string,
    private readonly pollMs: number,
    private readonly stop: AbortSignal,
  ) {}

  /** Resolves `gone`, `timeout` after `timeoutMs`, or `stopped` when the drain ends first. */
  until(uid: string, timeoutMs: number): Promise<'gone' | 'timeout' | 'stopped'> {
    return new Promise((resolve) => {
      if (this.stop.aborted) {
        resolve('stopped');
        return;
      }
      const token = {};
      const finish = (result: 'gone' | 'timeout' | 'stopped'): void => {
        cancelTimeout();
        this.stop.removeEventListener('abort', onStop);
        this.#waiters.delete(token);
        resolve(result);
      };
      const onStop = (): void => finish('stopped');
      const cancelTimeout = this.deps.clock.schedule(timeoutMs, () => finish('timeout'));
      this.stop.addEventListener('abort', onStop, { once: true });
      this.#waiters.set(token, { uid, finish });
      if (!this.#polling) {
        this.#polling = true;
        void this.#poll();
      }
    });
  }

  async #poll(): Promise<void> {
    for (;;) {
      // Checked and cleared in one step, so a waiter added now is never left without a poller.
      if (this.#waiters.size === 0 || this.stop.aborted) {
        this.#polling = false;
        return;
      }
      try {
        await this.deps.clock.sleep(this.pollMs, this.stop);
        const present = new Set((await this.deps.pods.list(this.node, this.stop)).map((pod) => pod.uid));
        for (const waiter of [...this.#waiters.values()]) if (!present.has(waiter.uid)) waiter.finish('gone');
      } catch (error) {
        // A failed list is tried again at the next poll; the pods' own timeouts still run.
        if (!this.stop.aborted)
          this.deps.log.debug({ node: this.node, err: describeError(error) }, 'pod list failed');
      }
    }
  }
}

function clip(text: string): string {
  return text.length > MAX_REASON_LENGTH ? `${text.slice(0, MAX_REASON_LENGTH - 1)}…` : text;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

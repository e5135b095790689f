/**
 * The hardened probe around a collector: what the sampler calls once per tick.
 *
 * - Each attempt gets its own deadline (timeoutMs, on the injected clock); when it passes,
 *   the attempt's signal aborts, the collector kills its tool's process group, and the probe
 *   moves on without waiting for a collector that does not honour the signal.
 * - A failed attempt (timeout, non-zero exit, garbage, spawn failure) is retried at once, up
 *   to `retries` more times: a tool that failed once (a busy driver, a lock) usually answers
 *   the next call, and the sample is still due now.
 * - A tick does not wait on the tool past the time the sampler gives it (`answerBy`): a run of
 *   up to three attempts of 3 s goes on in the background, and the tick is answered at once
 *   with a stand-in, so a hanging tool never spaces the node's snapshots past its liveness
 *   (CONTRACT §1.4). One run at a time: the next tick joins it, and a fresh sample a run
 *   brings after its tick gave up is the next tick's answer.
 * - The stand-in, and the answer when every attempt fails: the last good sample again, marked
 *   cached with the time it was read, while it is younger than cacheTtlMs; after that (or with
 *   none yet) a liveness sample: cached, no device, the time of now. The controller reads
 *   either as "the agent is up, its tool is not answering" (collector-error after 10 s),
 *   never as a silent node.
 * - The first good sample within warmupMs of the probe's start is discarded (see WARM-UP).
 *
 * `sample` never throws: every failure is counted, logged and turned into one of the above.
 */
import { payloadSchema, type AcceleratorFamily, type Payload } from '../../contracts/index.js';
import { parseWith } from '../../core/errors.js';
import { FAMILIES } from '../../families/index.js';
import { ToolError } from '../../core/parsers/index.js';
import { rejectOnAbort, type Clock, type Logger, type Registry } from '../../platform/index.js';
import type { Collector, Reading } from '../collectors/index.js';
import { ExecToolError, firstLine } from './exec.js';
import { createProbeMetrics, type ProbeFailureKind, type ProbeMetrics } from './metrics.js';

/** How the probe runs its collector (all durations in milliseconds). */
export interface ProbeOptions {
  /** One attempt may take this long before it is killed (3000). */
  timeoutMs: number;
  /** Extra attempts after a failed one (2). */
  retries: number;
  /** How long the last good sample may be resent while the tool fails (30000). */
  cacheTtlMs: number;
  /** The first good sample read within this of the start is discarded (5000). */
  warmupMs: number;
}

/** The defaults of issue 10: a 3 s timeout, 2 retries, a 30 s cache, a 5 s warm-up. */
export const DEFAULT_PROBE_OPTIONS: Readonly<ProbeOptions> = Object.freeze({
  timeoutMs: 3000,
  retries: 2,
  cacheTtlMs: 30_000,
  warmupMs: 5000,
});

/** One sample as the probe answers it. */
export interface ProbeSample {
  payload: Payload;
  cached: boolean;
  /** epoch ms the payload was read (for a cached one: the original time; liveness: now) */
  collectedAt: number;
  /** Why this is not a fresh reading (a cached or liveness sample): the tool's failure, one line. */
  failure?: string;
}

/** How the node's tool is doing, for the agent's /v1/health. */
export interface ToolStatus {
  /** The last run gave a reading (false while failing, and before any answer). */
  ok: boolean;
  /** The last failure, one line; null while ok. */
  error: string | null;
  /** ISO time the current failing spell began; null while ok. */
  failingSince: string | null;
  /** ISO time of the last good reading; null before the first. */
  lastSuccessAt: string | null;
}

/** The hardened probe around one collector. */
export interface Probe {
  /**
   * One probe, answered by `answerBy` (monotonic ms; default: when the run ends): a fresh
   * sample; else, while the tool fails or is still running, the cached last good one within
   * cacheTtlMs or a liveness sample (both cached:true, with `failure`); or null (the warm-up
   * discard, or a stop). Never throws.
   */
  sample(signal: AbortSignal, answerBy?: number): Promise<ProbeSample | null>;
  /** How the tool is doing. */
  status(): ToolStatus;
  /**
   * Calls `listener` when a run brings a fresh reading after its tick stopped waiting: the
   * next tick answers with it, and the sampler takes that tick at once.
   */
  onLateReading?(listener: () => void): void;
}

/** The attempt's deadline passed (the reason its signal is aborted with). */
export class ProbeTimeoutError extends Error {
  constructor(collector: string, timeoutMs: number) {
    super(`${collector} took longer than ${timeoutMs} ms`);
    this.name = 'ProbeTimeoutError';
  }
}

/**
 * How a collector's error counts: the exec's own classification when it ran a tool, the
 * tool's failure message (ToolError) as an exit, anything else (parse and validation errors,
 * a collector bug) as garbage.
 */
export function failureKindOf(error: unknown): ProbeFailureKind {
  for (let e = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof ExecToolError) {
      if (e.kind === 'spawn') return 'spawn';
      if (e.kind === 'exit') return 'exit';
      if (e.kind === 'aborted') return 'timeout';
      return 'garbage';
    }
    if (e instanceof ToolError) return 'exit';
  }
  return 'garbage';
}

/** What one attempt came to. */
type Attempt =
  | { ok: true; payload: Payload; collectedAt: number }
  | { ok: false; kind: ProbeFailureKind; message: string }
  | { ok: false; kind: 'stopped' };

/** The last good sample, with the monotonic time it was read (its age is measured on that). */
interface GoodSample {
  payload: Payload;
  collectedAt: number;
  readAt: number;
}

function checkOptions(options: ProbeOptions): void {
  const checks: Array<[keyof ProbeOptions, boolean]> = [
    ['timeoutMs', options.timeoutMs > 0],
    ['retries', Number.isInteger(options.retries) && options.retries >= 0],
    ['cacheTtlMs', options.cacheTtlMs >= 0],
    ['warmupMs', options.warmupMs >= 0],
  ];
  for (const [name, ok] of checks)
    if (!ok) throw new RangeError(`probe ${name}: invalid value ${String(options[name])}`);
}

/** Builds the probe; `deps.registry` receives its metrics (once per registry). */
export function createProbe(
  collector: Collector,
  options: ProbeOptions,
  deps: { clock: Clock; log: Logger; registry: Registry },
): Probe {
  checkOptions(options);
  return new HardenedProbe(collector, options, deps.clock, deps.log, createProbeMetrics(deps.registry));
}

/** A payload of `family` with no device: a liveness sample's (the controller reads none of a cached one). */
export function emptyPayload(family: AcceleratorFamily): Payload {
  const descriptor = FAMILIES.get(family);
  if (descriptor === undefined) throw new TypeError(`no family ${family}`);
  return descriptor.emptyPayload() as Payload;
}

/** A run answered after its tick: LATE is what the tick got instead. */
const LATE = Symbol('late');

class HardenedProbe implements Probe {
  readonly #collector: Collector;
  readonly #options: ProbeOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: ProbeMetrics;
  readonly #startedAt: number;
  #warmedUp = false;
  #lastGood: GoodSample | null = null;
  /** True from the first failed sample to the next good one: warn once, not every second. */
  #failing = false;
  /** During a failing spell, the cache ran out (said once at warn). */
  #cacheSpent = false;
  /** The run in flight (at most one), and whether the tick that started it stopped waiting. */
  #run: { promise: Promise<ProbeSample | null>; abandoned: boolean } | null = null;
  /** A fresh sample a run brought after its tick gave up: the next tick's answer. */
  #ready: ProbeSample | null = null;
  #error: string | null = null;
  #failingSince: number | null = null;
  #lastSuccessAt: number | null = null;
  #onLateReading: (() => void) | undefined;
  /** The stand-ins built, told apart (cached or liveness) for the metrics when a tick sends one. */
  readonly #standIns = new WeakMap<ProbeSample, 'cached' | 'liveness'>();

  constructor(collector: Collector, options: ProbeOptions, clock: Clock, log: Logger, metrics: ProbeMetrics) {
    this.#collector = collector;
    this.#options = options;
    this.#clock = clock;
    this.#log = log.child({ collector: collector.name });
    this.#metrics = metrics;
    this.#startedAt = clock.monotonic();
  }

  async sample(signal: AbortSignal, answerBy?: number): Promise<ProbeSample | null> {
    try {
      const ready = this.#ready;
      if (ready !== null) {
        this.#ready = null;
        return ready;
      }
      const run = (this.#run ??= this.#startRun(signal));
      run.abandoned = false;
      const waitedFrom = this.#clock.monotonic();
      const answer = await this.#within(run.promise, answerBy, signal);
      if (answer !== LATE) return this.#counted(answer);
      run.abandoned = true;
      if (signal.aborted) return null;
      const waited = Math.round(this.#clock.monotonic() - waitedFrom);
      const late = `${this.#collector.name}: no answer within ${waited} ms`;
      // Not answering in time is failing, as far as anyone reading the node can tell.
      this.#failingSince ??= this.#clock.now();
      this.#error ??= late;
      return this.#counted(this.#standIn(this.#error));
    } catch (error) {
      // Unreachable by design (attempts catch everything); kept so a bug never stops sampling.
      this.#log.error({ err: error }, 'probe failed unexpectedly');
      return null;
    }
  }

  onLateReading(listener: () => void): void {
    this.#onLateReading = listener;
  }

  /** Counts a stand-in as it goes to the sampler (an abandoned run's is never sent). */
  #counted(sample: ProbeSample | null): ProbeSample | null {
    const kind = sample === null ? undefined : this.#standIns.get(sample);
    if (kind === 'cached') this.#metrics.cacheSamples.inc();
    else if (kind === 'liveness') this.#metrics.livenessSamples.inc();
    return sample;
  }

  status(): ToolStatus {
    const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
    return {
      ok: this.#error === null && this.#lastSuccessAt !== null,
      error: this.#error,
      failingSince: iso(this.#failingSince),
      lastSuccessAt: iso(this.#lastSuccessAt),
    };
  }

  /** Starts a run of attempts; a fresh sample it brings after its tick gave up is kept for the next. */
  #startRun(signal: AbortSignal): { promise: Promise<ProbeSample | null>; abandoned: boolean } {
    const run = { promise: Promise.resolve<ProbeSample | null>(null), abandoned: false };
    run.promise = this.#sample(signal).then((sample) => {
      if (this.#run === run) this.#run = null;
      if (run.abandoned && sample !== null && !sample.cached) {
        this.#ready = sample;
        this.#onLateReading?.();
      }
      return sample;
    });
    return run;
  }

  /** The run's answer, or LATE when `answerBy` (monotonic ms) comes first; null when stopped. */
  #within(
    run: Promise<ProbeSample | null>,
    answerBy: number | undefined,
    signal: AbortSignal,
  ): Promise<ProbeSample | null | typeof LATE> {
    if (answerBy === undefined) return run;
    return new Promise((resolve) => {
      const cancel = this.#clock.schedule(Math.max(0, answerBy - this.#clock.monotonic()), () =>
        resolve(LATE),
      );
      const onAbort = (): void => resolve(null);
      signal.addEventListener('abort', onAbort, { once: true });
      void run.then((answer) => {
        cancel();
        signal.removeEventListener('abort', onAbort);
        resolve(answer);
      });
    });
  }

  async #sample(signal: AbortSignal): Promise<ProbeSample | null> {
    let failure: { kind: ProbeFailureKind; message: string } | null = null;
    for (let attempt = 0; attempt <= this.#options.retries && !signal.aborted; attempt++) {
      const result = await this.#attempt(signal);
      if (result.ok) return this.#good(result);
      if (result.kind === 'stopped') return null;
      failure = result;
      this.#metrics.failures.inc({ kind: result.kind });
      this.#log.debug(
        { attempt: attempt + 1, kind: result.kind, error: result.message },
        'collector attempt failed',
      );
    }
    return signal.aborted || failure === null ? null : this.#fallback(failure);
  }

  /** A good reading: remembered, unless it is the warm-up sample. */
  #good(attempt: { payload: Payload; collectedAt: number }): ProbeSample | null {
    const readAt = this.#clock.monotonic();
    this.#lastSuccessAt = this.#clock.now();
    this.#metrics.lastSuccess.set(this.#lastSuccessAt / 1000);
    if (this.#failing) this.#log.info({}, 'collector recovered');
    this.#failing = false;
    this.#cacheSpent = false;
    this.#error = null;
    this.#failingSince = null;
    // WARM-UP: right after the driver loads (node boot, driver upgrade, agent start beside a
    // restarting device plugin) the tools print what the driver had before it finished
    // initialising: zeroed ECC counters, temperatures of 0, health OK for a chip still being
    // probed. The first reading taken that early is dropped rather than published, as the
    // seed's agent does; later ones, and a first one taken after the warm-up, count.
    if (!this.#warmedUp) {
      this.#warmedUp = true;
      if (readAt - this.#startedAt < this.#options.warmupMs) {
        this.#log.info({ warmup_ms: this.#options.warmupMs }, 'first sample discarded (warm-up)');
        return null;
      }
    }
    this.#lastGood = { payload: attempt.payload, collectedAt: attempt.collectedAt, readAt };
    return { payload: attempt.payload, cached: false, collectedAt: attempt.collectedAt };
  }

  /** Every attempt failed: the failing spell is noted (warned once), and a stand-in answers. */
  #fallback(last: { kind: ProbeFailureKind; message: string }): ProbeSample {
    this.#error = `${last.kind}: ${last.message}`;
    this.#failingSince ??= this.#clock.now();
    const level = this.#failing ? 'debug' : 'warn';
    this.#failing = true;
    this.#log[level](
      {
        kind: last.kind,
        error: last.message,
        attempts: this.#options.retries + 1,
        cached: this.#cacheUsable(),
      },
      this.#cacheUsable()
        ? 'collector failing: resending the last good sample'
        : 'collector failing: sending liveness only (no good sample to resend)',
    );
    return this.#standIn(this.#error);
  }

  /**
   * What answers while the tool fails or has not answered yet: the last good sample while it
   * is younger than cacheTtlMs, else a liveness sample (no device, collected now).
   */
  #standIn(failure: string): ProbeSample {
    const good = this.#lastGood;
    if (good !== null && this.#cacheUsable()) {
      const cached = { payload: good.payload, cached: true, collectedAt: good.collectedAt, failure };
      this.#standIns.set(cached, 'cached');
      return cached;
    }
    if (good !== null && this.#failing && !this.#cacheSpent) {
      this.#cacheSpent = true;
      this.#log.warn(
        { cache_ttl_ms: this.#options.cacheTtlMs, error: failure },
        'collector still failing: the last good sample is too old to resend; sending liveness only',
      );
    }
    // The controllers read no device of a liveness sample: without a better one, any family does.
    const family = good?.payload.family ?? this.#collector.family ?? FAMILIES.families[0].id;
    const liveness = { payload: emptyPayload(family), cached: true, collectedAt: this.#clock.now(), failure };
    this.#standIns.set(liveness, 'liveness');
    return liveness;
  }

  #cacheUsable(): boolean {
    const good = this.#lastGood;
    return good !== null && this.#clock.monotonic() - good.readAt <= this.#options.cacheTtlMs;
  }

  /** One attempt under its own deadline; never rejects. */
  async #attempt(outer: AbortSignal): Promise<Attempt> {
    const controller = new AbortController();
    let timedOut = false;
    const cancelTimer = this.#clock.schedule(this.#options.timeoutMs, () => {
      timedOut = true;
      controller.abort(new ProbeTimeoutError(this.#collector.name, this.#options.timeoutMs));
    });
    const onOuterAbort = (): void => controller.abort(outer.reason);
    outer.addEventListener('abort', onOuterAbort, { once: true });
    const started = this.#clock.monotonic();
    try {
      const reading = await rejectOnAbort(this.#read(controller.signal), controller.signal);
      // The collector's promise is a validated payload; checked again so no bug sends garbage.
      return {
        ok: true,
        payload: parseWith(payloadSchema, reading.payload, 'payload'),
        collectedAt: reading.collectedAt,
      };
    } catch (error) {
      if (outer.aborted) return { ok: false, kind: 'stopped' };
      const kind = timedOut ? 'timeout' : failureKindOf(error);
      return { ok: false, kind, message: describe(error) };
    } finally {
      cancelTimer();
      outer.removeEventListener('abort', onOuterAbort);
      this.#metrics.duration.observe((this.#clock.monotonic() - started) / 1000);
    }
  }

  /**
   * The collector's reading (read when it says when it read, else collect, read now), with a
   * synchronous throw turned into a rejection.
   */
  #read(signal: AbortSignal): Promise<Reading> {
    const collector = this.#collector;
    try {
      if (collector.read) return collector.read(signal);
      const collectedAt = this.#clock.now();
      return collector.collect(signal).then((payload) => ({ payload, collectedAt }));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return firstLine(error.message) || error.name;
  return firstLine(String(error)) || 'unknown error';
}

/**
 * Leader election on a Lease with client-go's semantics (tools/leaderelection), which
 * client-node 2.x lacks.
 *
 * ```
 *            acquire: every retryPeriod × (1 + rand × 1.2)           renew: every retryPeriod
 *   ┌──────────┐  lease absent, released, expired, or ours   ┌────────┐
 *   │ follower │ ──────────────────────────────────────────▶ │ leader │ ──┐ renewed
 *   └──────────┘ ◀────────────────────────────────────────── └────────┘ ◀─┘
 *        ▲         no renewal for renewDeadline, or lease taken  │ signal aborts
 *        └─────── (keeps contending: a hot standby keeps its state)  ▼ release (holder cleared,
 *                                                                    leaseDurationSeconds 1)
 * ```
 *
 * - **Expiry is judged by the observer's own clock.** A follower notes, on its monotonic
 *   clock, when it last saw the lease record change; the lease is expired once the record's
 *   leaseDurationSeconds have passed since then. The holder's `renewTime` (its wall clock) is
 *   written but never compared with ours, so skewed or stepped clocks cannot cause a takeover.
 * - **Writes are optimistic**: a replace names the resourceVersion read; a 409 means someone
 *   else wrote first, and the next attempt reads again. Of two candidates, exactly one wins.
 * - **The term** is the Lease's leaseTransitions, +1 whenever the holder changes.
 * - **The fence.** `leadership()` is computed when asked: leading only while fewer than
 *   renewDeadline ms (monotonic) have passed since the start of the last successful renewal.
 *   A timer also ends leadership at that instant (callback, metrics) while a renewal hangs,
 *   and every request is cancelled then. A leader stops before any follower may take over
 *   (renewDeadline < leaseDuration, both measured from at or after the same write).
 * - **After losing** the elector keeps contending as a follower instead of exiting as
 *   client-go's users usually do: every controller replica holds the engine state (hot
 *   standby), which a restart would throw away.
 *
 * One refinement of client-go's timing, safety unchanged: a follower that sees a valid lease
 * sleeps no longer than until that lease would expire, so it takes over at the first instant
 * it may (at most leaseDuration + one jittered retry period after the last renewal).
 */
import {
  describeError,
  isConflict,
  type Cancel,
  type Clock,
  type Logger,
  type Registry,
  type Runnable,
} from '../../platform/index.js';
import { JITTER_FACTOR, parseLeaderElectionConfig, type LeaderElectionConfigInput } from './config.js';
import {
  describeLease,
  type LeaseClient,
  type LeaseKey,
  type LeaseSpec,
  type StoredLease,
} from './lease-client.js';
import { createLeaderElectionMetrics, type LeaderElectionMetrics } from './metrics.js';

/** What a write path checks before it writes: lead only with `leading: true`, stamping `term`. */
export type Leadership = { readonly leading: true; readonly term: number } | { readonly leading: false };

/** Called on leadership changes (synchronously, from the election loop; a throw is logged). */
export interface LeaderCallbacks {
  /** This replica leads with `term`; `signal` aborts when it stops (pass it to leader-only work). */
  onStartedLeading?(term: number, signal: AbortSignal): void;
  /** This replica no longer leads (the fence is already down); `reason` says why. */
  onStoppedLeading?(reason: string): void;
  /** The lease holder seen changed: its identity, or undefined when nobody holds it (released). */
  onNewLeader?(identity: string | undefined): void;
}

/** A replica's view of the election; run it as a Runnable. */
export interface LeaderElector extends Runnable {
  /** This replica's identity (the holderIdentity it writes). */
  readonly identity: string;
  /** The fence: leading (with its term) only while the last renewal is within the renew deadline. */
  leadership(): Leadership;
  /** `leadership().leading`. */
  isLeader(): boolean;
  /** The holder of the lease as last observed (possibly this replica), undefined when none. */
  leader(): string | undefined;
  /**
   * Gives leadership up now (the fence drops at once, onStoppedLeading is called), releases
   * the lease so another replica takes over at its next retry, and contends again only after
   * one lease duration. For a leader that must not act although its lease still renews (its
   * status write met a newer term). Does nothing when not leading.
   */
  resign(reason: string): void;
}

/** What the elector is built from. */
export interface LeaderElectorDeps {
  client: LeaseClient;
  clock: Clock;
  log: Logger;
  /** Its metrics are registered here (one elector per registry). */
  registry: Registry;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
}

/** How the elector runs. */
export interface LeaderElectorOptions {
  /** Unique among the replicas (the pod name): two replicas with one identity would both lead. */
  identity: string;
  /** Lease and timings; parsed and checked here (defaults: ai-infra/npu-fault-controller, 15/10/2 s). */
  config?: LeaderElectionConfigInput;
  callbacks?: LeaderCallbacks;
  /** Metric names start `npu_fault_<metricsComponent>_` (default `controller`). */
  metricsComponent?: string;
}

/** Builds an elector; start it (Runnable) to take part in the election. */
export function createLeaderElector(deps: LeaderElectorDeps, options: LeaderElectorOptions): LeaderElector {
  return new LeaseLeaderElector(deps, options);
}

/** What this replica last saw of the lease record, and when (monotonic ms) it last changed. */
interface Observation {
  readonly spec: LeaseSpec;
  readonly at: number;
}

/** A span of leadership. */
interface Term {
  readonly term: number;
  readonly since: number;
  /** Monotonic start of the last successful acquire or renew request: the fence counts from it. */
  renewedAt: number;
  /** Aborted when the span ends: cancels requests and wakes the renew loop. */
  readonly span: AbortController;
  cancelDeadline: Cancel;
}

/** How one tryAcquireOrRenew went. */
type Attempt =
  | { readonly ok: true }
  | {
      readonly ok: false;
      /** A follower found the lease held by this (other) identity, still valid. */
      readonly heldBy?: string;
      /** A leader found the lease no longer its own: why. */
      readonly lost?: string;
      readonly error?: unknown;
    };

class LeaseLeaderElector implements LeaderElector {
  readonly name = 'leader-election';
  readonly identity: string;
  readonly #client: LeaseClient;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #random: () => number;
  readonly #callbacks: LeaderCallbacks;
  readonly #metrics: LeaderElectionMetrics;
  readonly #key: LeaseKey;
  readonly #durationSeconds: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #releaseOnCancel: boolean;
  #observed: Observation | undefined;
  #resourceVersion: string | undefined;
  #term: Term | undefined;
  #reported: string | undefined;
  #running = false;
  #resigned = false;

  constructor(deps: LeaderElectorDeps, options: LeaderElectorOptions) {
    if (!options.identity) throw new RangeError('leader election: identity must not be empty');
    const config = parseLeaderElectionConfig(options.config);
    this.identity = options.identity;
    this.#client = deps.client;
    this.#clock = deps.clock;
    this.#random = deps.random ?? Math.random;
    this.#callbacks = options.callbacks ?? {};
    this.#key = { namespace: config.namespace, name: config.name };
    this.#durationSeconds = config.durationSeconds;
    this.#renewDeadlineMs = config.renewDeadlineSeconds * 1000;
    this.#retryPeriodMs = config.retryPeriodSeconds * 1000;
    this.#releaseOnCancel = config.releaseOnCancel;
    this.#log = deps.log.child({ lease: describeLease(this.#key), identity: this.identity });
    this.#metrics = createLeaderElectionMetrics(deps.registry, options.metricsComponent ?? 'controller', () =>
      this.isLeader(),
    );
  }

  leadership(): Leadership {
    const term = this.#term;
    if (!term || !this.#fenceHolds(term)) return { leading: false };
    return { leading: true, term: term.term };
  }

  isLeader(): boolean {
    return this.leadership().leading;
  }

  leader(): string | undefined {
    return this.#observed?.spec.holderIdentity || undefined;
  }

  resign(reason: string): void {
    if (!this.#term) return;
    this.#resigned = true;
    this.#stopLeading(`resigned: ${reason}`);
  }

  /** Contends until `signal` aborts; then stops leading and (releaseOnCancel) releases the lease. */
  async start(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error(`leader election ${describeLease(this.#key)}: already started`);
    this.#running = true;
    try {
      while (!signal.aborted) {
        if (!(await this.#acquire(signal))) break;
        await this.#renew(signal);
        if (this.#resigned && !signal.aborted) {
          this.#resigned = false;
          await this.#release();
          try {
            await this.#clock.sleep(this.#durationSeconds * 1000, signal);
          } catch {
            break;
          }
        }
      }
    } finally {
      // The fence drops before the release: a successor may lead the moment the release lands.
      this.#stopLeading('shutting down');
      if (this.#releaseOnCancel) await this.#release();
      this.#running = false;
    }
  }

  /** Tries until this replica leads (true) or `run` aborts (false). */
  async #acquire(run: AbortSignal): Promise<boolean> {
    this.#log.info('contending for the lease');
    for (;;) {
      const started = this.#clock.monotonic();
      const attempt = await this.#bounded(run, (signal) => this.#tryAcquireOrRenew(signal, false));
      if (run.aborted) return false;
      this.#reportLeader();
      if (attempt.ok) {
        this.#startLeading(started);
        return true;
      }
      if (attempt.error !== undefined) {
        const level = isConflict(attempt.error) ? 'debug' : 'warn';
        this.#log[level]({ err: attempt.error }, 'lease acquire attempt failed');
      }
      try {
        await this.#clock.sleep(this.#candidateDelay(attempt), run);
      } catch {
        return false;
      }
    }
  }

  /** Renews every retry period until leadership ends (deadline, lease taken) or `run` aborts. */
  async #renew(run: AbortSignal): Promise<void> {
    const term = this.#term;
    if (!term) return;
    const span = AbortSignal.any([run, term.span.signal]);
    for (;;) {
      try {
        await this.#clock.sleep(this.#retryPeriodMs, span);
      } catch {
        return;
      }
      // A stalled event loop can wake this loop past the deadline before the deadline timer.
      if (!this.#fenceHolds(term)) {
        this.#stopLeading('renew deadline passed');
        return;
      }
      const started = this.#clock.monotonic();
      const attempt = await this.#tryAcquireOrRenew(span, true);
      this.#metrics.renewSeconds.observe((this.#clock.monotonic() - started) / 1000);
      if (this.#term !== term || run.aborted) return;
      this.#reportLeader();
      if (attempt.ok) {
        // client-go's renew times out at the deadline: a renewal that came back after it is
        // lost, even if the deadline timer has not run yet (the fence was already down).
        if (!this.#fenceHolds(term)) {
          this.#stopLeading('renew deadline passed');
          return;
        }
        term.renewedAt = started;
        this.#armDeadline(term);
        continue;
      }
      this.#metrics.renewFailures.inc();
      if (attempt.lost !== undefined) {
        this.#stopLeading(attempt.lost);
        return;
      }
      this.#log.warn(
        { err: attempt.error, sinceRenewalMs: this.#clock.monotonic() - term.renewedAt },
        'lease renewal failed',
      );
    }
  }

  /**
   * client-go's tryAcquireOrRenew. `renewing`: this replica leads, and a lease that is no
   * longer its own means leadership is lost (it never re-takes a lease within one term).
   */
  async #tryAcquireOrRenew(signal: AbortSignal, renewing: boolean): Promise<Attempt> {
    const now = this.#clock.now();
    const mine = {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.#durationSeconds,
      renewTime: now,
    };
    // Fast path: the leader writes over the version it last wrote, without reading first.
    if (renewing && this.#observed && this.#resourceVersion !== undefined) {
      try {
        this.#observe(
          await this.#client.replace(
            this.#key,
            this.#resourceVersion,
            { ...this.#observed.spec, ...mine },
            signal,
          ),
        );
        return { ok: true };
      } catch (error) {
        if (signal.aborted) return { ok: false, error };
        this.#log.debug({ err: error }, 'optimistic lease renewal failed; reading the lease');
      }
    }

    let current: StoredLease | undefined;
    try {
      current = await this.#client.get(this.#key, signal);
    } catch (error) {
      return { ok: false, error };
    }
    if (!current) {
      if (renewing) return { ok: false, lost: 'lease deleted' };
      // A new incarnation of the lease continues the term count this replica last saw.
      const leaseTransitions = this.#observed ? (this.#observed.spec.leaseTransitions ?? 0) + 1 : 0;
      return this.#write(() =>
        this.#client.create(this.#key, { ...mine, acquireTime: now, leaseTransitions }, signal),
      );
    }

    this.#resourceVersion = current.resourceVersion;
    if (!this.#observed || !sameRecord(this.#observed.spec, current.spec)) {
      this.#observed = { spec: current.spec, at: this.#clock.monotonic() };
      this.#metrics.term.set(current.spec.leaseTransitions ?? 0);
    }
    const holder = current.spec.holderIdentity || undefined;
    if (holder !== this.identity) {
      if (renewing)
        return { ok: false, lost: holder ? `lease taken by ${holder}` : 'lease released by another' };
      if (holder !== undefined && this.#leaseValid()) return { ok: false, heldBy: holder };
    }
    const transitions = current.spec.leaseTransitions ?? 0;
    const spec: LeaseSpec =
      holder === this.identity
        ? { ...mine, acquireTime: current.spec.acquireTime ?? now, leaseTransitions: transitions }
        : { ...mine, acquireTime: now, leaseTransitions: transitions + 1 };
    const version = current.resourceVersion;
    return this.#write(() => this.#client.replace(this.#key, version, spec, signal));
  }

  async #write(request: () => Promise<StoredLease>): Promise<Attempt> {
    try {
      this.#observe(await request());
      return { ok: true };
    } catch (error) {
      return { ok: false, error };
    }
  }

  /** Records a lease this replica wrote: the record changed now. */
  #observe(stored: StoredLease): void {
    this.#resourceVersion = stored.resourceVersion;
    this.#observed = { spec: stored.spec, at: this.#clock.monotonic() };
    this.#metrics.term.set(stored.spec.leaseTransitions ?? 0);
  }

  /** Whether the observed lease is still valid, by this replica's clock. */
  #leaseValid(): boolean {
    const observed = this.#observed;
    if (!observed) return false;
    return observed.at + this.#durationMs(observed.spec) > this.#clock.monotonic();
  }

  /** The record's own duration (a released lease says 1 s); our own when it has none. */
  #durationMs(spec: LeaseSpec): number {
    const seconds = spec.leaseDurationSeconds;
    return (seconds !== undefined && seconds > 0 ? seconds : this.#durationSeconds) * 1000;
  }

  /** client-go's jittered retry period, cut short when the lease seen expires sooner. */
  #candidateDelay(attempt: Attempt): number {
    const jittered = this.#retryPeriodMs * (1 + this.#random() * JITTER_FACTOR);
    const observed = this.#observed;
    if (attempt.ok || attempt.heldBy === undefined || !observed) return jittered;
    const untilExpiry = observed.at + this.#durationMs(observed.spec) - this.#clock.monotonic();
    return Math.max(0, Math.min(jittered, untilExpiry));
  }

  #fenceHolds(term: Term): boolean {
    return this.#clock.monotonic() - term.renewedAt < this.#renewDeadlineMs;
  }

  #startLeading(requestStart: number): void {
    const term: Term = {
      term: this.#observed?.spec.leaseTransitions ?? 0,
      since: requestStart,
      renewedAt: requestStart,
      span: new AbortController(),
      cancelDeadline: () => undefined,
    };
    this.#term = term;
    this.#armDeadline(term);
    this.#metrics.transitions.inc({ to: 'leader' });
    this.#log.info({ term: term.term }, 'started leading');
    this.#invoke('onStartedLeading', () => this.#callbacks.onStartedLeading?.(term.term, term.span.signal));
  }

  /** Ends leadership the instant the renew deadline passes, even while a renewal hangs. */
  #armDeadline(term: Term): void {
    term.cancelDeadline();
    const left = term.renewedAt + this.#renewDeadlineMs - this.#clock.monotonic();
    term.cancelDeadline = this.#clock.schedule(left, () => {
      if (this.#term === term) this.#stopLeading('renew deadline passed');
    });
  }

  #stopLeading(reason: string): void {
    const term = this.#term;
    if (!term) return;
    this.#term = undefined;
    term.cancelDeadline();
    term.span.abort(new Error(`stopped leading: ${reason}`));
    this.#metrics.transitions.inc({ to: 'follower' });
    this.#log.info(
      { term: term.term, reason, ledMs: Math.round(this.#clock.monotonic() - term.since) },
      'stopped leading',
    );
    this.#invoke('onStoppedLeading', () => this.#callbacks.onStoppedLeading?.(reason));
  }

  #reportLeader(): void {
    const holder = this.leader();
    if (holder === this.#reported) return;
    this.#reported = holder;
    this.#log.info({ leader: holder ?? null }, 'lease holder changed');
    this.#invoke('onNewLeader', () => this.#callbacks.onNewLeader?.(holder));
  }

  /** client-go's ReleaseOnCancel: clear the holder so a standby takes over at its next retry. */
  async #release(): Promise<void> {
    const observed = this.#observed;
    const version = this.#resourceVersion;
    if (!observed || version === undefined || observed.spec.holderIdentity !== this.identity) return;
    const now = this.#clock.now();
    const released: LeaseSpec = {
      holderIdentity: undefined,
      leaseDurationSeconds: 1,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: observed.spec.leaseTransitions,
    };
    try {
      const never = new AbortController().signal;
      this.#observe(
        await this.#bounded(never, (signal) => this.#client.replace(this.#key, version, released, signal)),
      );
      this.#reportLeader();
      this.#log.info('released the lease');
    } catch (error) {
      // A 409: someone wrote since, so it is not ours to release; otherwise it simply expires.
      this.#log.warn({ err: error, reason: describeError(error) }, 'lease release failed; it will expire');
    }
  }

  /** Runs `request` with a signal that also aborts after the renew deadline. */
  async #bounded<T>(parent: AbortSignal, request: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const timeout = new AbortController();
    const ms = this.#renewDeadlineMs;
    const cancel = this.#clock.schedule(ms, () =>
      timeout.abort(new Error(`lease request timed out after ${ms} ms`)),
    );
    try {
      return await request(AbortSignal.any([parent, timeout.signal]));
    } finally {
      cancel();
    }
  }

  #invoke(callback: keyof LeaderCallbacks, call: () => void): void {
    try {
      call();
    } catch (error) {
      this.#log.error({ err: error, callback }, 'leader-election callback threw');
    }
  }
}

/** client-go compares whole records: any change to them restarts the observer's expiry clock. */
function sameRecord(a: LeaseSpec, b: LeaseSpec): boolean {
  return (
    (a.holderIdentity || undefined) === (b.holderIdentity || undefined) &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.acquireTime === b.acquireTime &&
    a.renewTime === b.renewTime &&
    a.leaseTransitions === b.leaseTransitions
  );
}

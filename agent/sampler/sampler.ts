/**
 * The agent's sampling loop: about once per interval (jittered, so a fleet's agents do not
 * sample in lock-step) it asks the probe for a sample and queues an hdc.health/v1 snapshot
 * with this process's boot id and the next seq. A kernel event does not wait for the next
 * tick: an XID or a removed device is sent at once on the last reading (its metrics at most
 * one interval old, the event new), and a fresh sample is taken right after.
 */
import { randomUUID } from 'node:crypto';
import { Counter, Histogram } from 'prom-client';
import { SNAPSHOT_SCHEMA, type Payload, type Snapshot } from '../../contracts/index.js';
import {
  metricPrefix,
  type Cancel,
  type Clock,
  type Logger,
  type Registry,
  type Runnable,
} from '../../platform/index.js';
import type { Probe } from '../probe/index.js';
import { applyKernelEvents, type KernelEventLike } from './event-effects.js';

/** What the sampler is built from. */
export interface SamplerDeps {
  /** This node's name. */
  node: string;
  /** The snapshot's `collector`. */
  collector: string;
  probe: Probe;
  /** Hands a snapshot to the sender (never blocks). */
  enqueue: (snapshot: Snapshot) => void;
  /** Completes a payload before it is sent (inventory: installed devices the tool left out). */
  complete?: (payload: Payload) => Payload;
  /** Node-level additions to every payload (the inference canary's verdict). */
  decorate?: (payload: Payload) => Payload;
  /** True while nothing must be sent (the simulator's agent-silence fault). */
  muted?: () => boolean;
  /** Told of every snapshot queued (the local /v1/health serves the last one). */
  onSnapshot?: (snapshot: Snapshot) => void;
  clock: Clock;
  log: Logger;
  registry: Registry;
  /** Jitter source in [0, 1); default Math.random. */
  random?: () => number;
  /** This process start's boot id; default a new UUID. */
  bootId?: string;
}

/** Sampling timing. */
export interface SamplerOptions {
  intervalMs: number;
  jitterMs: number;
  /**
   * Kernel events within this of the last event snapshot ride on one snapshot (default 20 ms):
   * the first event of a burst goes out at once, an XID storm does not become a snapshot per
   * log line.
   */
  eventCoalesceMs?: number;
  /**
   * A tick waits on the tool at most until this long after the last snapshot sent (default
   * 1500 ms): past it, the probe answers with the cached or a liveness sample and its run goes
   * on, so the controllers hear from the node every 1.5 s whatever the tool does (they call a
   * node silent for 5 s agent-unreachable).
   */
  keepAliveMs?: number;
}

/** Default of SamplerOptions.keepAliveMs. */
export const DEFAULT_KEEP_ALIVE_MS = 1500;

/** Most events waiting for one snapshot; a storm beyond this is counted and dropped. */
const MAX_PENDING_EVENTS = 1024;
/** Events wake the sampler for an out-of-cycle sample at most this often. */
const EVENT_SAMPLE_GAP_MS = 250;

/** The sampler: a Runnable that also takes kernel events. */
export interface Sampler extends Runnable {
  readonly bootId: string;
  /** An event from the kernel log or the device nodes: sent at once, then a fresh sample. */
  event(event: KernelEventLike): void;
  /** Takes a sample now rather than at the next tick. */
  sampleNow(): void;
}

/** Builds the sampler. */
export function createSampler(deps: SamplerDeps, options: SamplerOptions): Sampler {
  return new SamplingLoop(deps, options);
}

class SamplingLoop implements Sampler {
  readonly name = 'sampler';
  readonly bootId: string;
  readonly #deps: SamplerDeps;
  readonly #options: SamplerOptions;
  readonly #random: () => number;
  readonly #snapshots: Counter<'trigger' | 'cached'>;
  readonly #skipped: Counter<'reason'>;
  readonly #eventDelay: Histogram;
  readonly #eventsDropped: Counter;
  #seq = 0;
  #last: Payload | null = null;
  /** Events that arrived before any reading: they ride on the first snapshot. */
  #pending: KernelEventLike[] = [];
  #wake: (() => void) | null = null;
  #wakeRequested = false;
  /** Events of the current burst, with when each reached the agent (monotonic ms). */
  #burst: { event: KernelEventLike; receivedAt: number }[] = [];
  #burstTimer: Cancel | null = null;
  #lastEventSentAt = Number.NEGATIVE_INFINITY;
  #lastEventWake = Number.NEGATIVE_INFINITY;
  /** When the last snapshot was queued (monotonic ms; the start before the first). */
  #lastSentAt = Number.NEGATIVE_INFINITY;
  /** The last tick's sample was a stand-in: the tool is failing, #last is old. */
  #toolFailing = false;

  constructor(deps: SamplerDeps, options: SamplerOptions) {
    this.#deps = deps;
    this.#options = options;
    this.#random = deps.random ?? Math.random;
    this.bootId = deps.bootId ?? randomUUID();
    // A reading that came after its tick gave up on the tool goes at once, not a tick later.
    deps.probe.onLateReading?.(() => this.sampleNow());
    const prefix = metricPrefix('agent');
    this.#snapshots = new Counter({
      name: `${prefix}snapshots_total`,
      help: 'Snapshots queued for the function, by what triggered them (tick or event) and whether the sample was cached',
      labelNames: ['trigger', 'cached'],
      registers: [deps.registry],
    });
    this.#skipped = new Counter({
      name: `${prefix}samples_skipped_total`,
      help: 'Ticks that queued nothing: no sample (warm-up, tool failing past the cache) or muted',
      labelNames: ['reason'],
      registers: [deps.registry],
    });
    this.#eventDelay = new Histogram({
      name: `${prefix}event_snapshot_delay_seconds`,
      help: 'From a kernel event reaching the agent to its snapshot being queued',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
      registers: [deps.registry],
    });
    this.#eventsDropped = new Counter({
      name: `${prefix}kernel_events_dropped_total`,
      help: `Kernel events dropped because more than ${MAX_PENDING_EVENTS} waited for one snapshot`,
      registers: [deps.registry],
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    const { clock, probe } = this.#deps;
    const keepAliveMs = this.#options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
    let dueAt = clock.monotonic();
    this.#lastSentAt = dueAt;
    while (!signal.aborted) {
      await this.#waitUntil(dueAt, signal);
      if (signal.aborted) break;
      const startedAt = clock.monotonic();
      dueAt = startedAt + this.#interval();
      const sample = await probe.sample(signal, Math.max(startedAt, this.#lastSentAt + keepAliveMs));
      if (signal.aborted) break;
      if (sample === null) {
        this.#skipped.inc({ reason: 'no-sample' });
        continue;
      }
      this.#toolFailing = sample.cached;
      if (!sample.cached) this.#last = sample.payload;
      // Events wait for a fresh reading: a cached sample advances nothing at the controllers.
      const events = sample.cached ? [] : this.#pending;
      if (!sample.cached) this.#pending = [];
      const payload = events.length > 0 ? this.#applyEvents(sample.payload, events) : sample.payload;
      this.#send(payload, sample.collectedAt, sample.cached, 'tick');
    }
    this.#burstTimer?.();
    this.#burstTimer = null;
  }

  event(event: KernelEventLike): void {
    const { clock, log } = this.#deps;
    const receivedAt = clock.monotonic();
    log.debug({ kind: event.kind, bus_id: event.busId, xid: event.xid, line: event.line }, 'kernel event');
    if (event.kind !== 'aer') {
      if (this.#last === null) {
        if (this.#pending.length < MAX_PENDING_EVENTS) this.#pending.push(event);
        else this.#eventsDropped.inc();
      } else this.#queueEvent(event, receivedAt);
    }
    if (receivedAt - this.#lastEventWake >= EVENT_SAMPLE_GAP_MS) {
      this.#lastEventWake = receivedAt;
      this.sampleNow();
    }
  }

  /** Sends at once, or at the end of the coalescing window when an event snapshot just went out. */
  #queueEvent(event: KernelEventLike, receivedAt: number): void {
    if (this.#burst.length >= MAX_PENDING_EVENTS) {
      this.#eventsDropped.inc();
      return;
    }
    this.#burst.push({ event, receivedAt });
    if (this.#burstTimer !== null) return;
    const wait = this.#lastEventSentAt + (this.#options.eventCoalesceMs ?? 20) - receivedAt;
    if (wait <= 0) this.#sendEvents();
    else
      this.#burstTimer = this.#deps.clock.schedule(wait, () => {
        this.#burstTimer = null;
        this.#sendEvents();
      });
  }

  #sendEvents(): void {
    const burst = this.#burst;
    this.#burst = [];
    if (burst.length === 0 || this.#last === null) return;
    const { clock } = this.#deps;
    this.#lastEventSentAt = clock.monotonic();
    // While the tool fails, #last is its last good reading: the events are new, the readings
    // are not, and the controllers must not take the snapshot for the tool answering again.
    this.#send(
      this.#applyEvents(
        this.#last,
        burst.map((b) => b.event),
      ),
      clock.now(),
      false,
      'event',
      this.#toolFailing,
    );
    const sentAt = clock.monotonic();
    for (const b of burst) this.#eventDelay.observe((sentAt - b.receivedAt) / 1000);
  }

  sampleNow(): void {
    this.#wakeRequested = true;
    this.#wake?.();
  }

  #applyEvents(payload: Payload, events: readonly KernelEventLike[]): Payload {
    const applied = applyKernelEvents(payload, events);
    for (const event of applied.unmatched)
      this.#deps.log.warn(
        { kind: event.kind, bus_id: event.busId, line: event.line },
        'kernel event names no device of this node',
      );
    for (const event of applied.impossible)
      this.#deps.log.warn(
        { kind: event.kind, bus_id: event.busId, xid: event.xid, line: event.line },
        'kernel event carries an XID number no driver prints; not sent',
      );
    return applied.payload;
  }

  #send(
    payload: Payload,
    collectedAt: number,
    cached: boolean,
    trigger: 'tick' | 'event',
    staleReadings = false,
  ): void {
    const deps = this.#deps;
    if (deps.muted?.()) {
      this.#skipped.inc({ reason: 'muted' });
      return;
    }
    // A cached sample is a stand-in the controllers read nothing of: not completed from the
    // inventory (a liveness sample has no device, and must keep none).
    let body = deps.complete && !cached ? deps.complete(payload) : payload;
    if (deps.decorate) body = deps.decorate(body);
    this.#seq += 1;
    const snapshot: Snapshot = {
      schema: SNAPSHOT_SCHEMA,
      node: deps.node,
      boot_id: this.bootId,
      seq: this.#seq,
      collected_at: new Date(collectedAt).toISOString(),
      collector: deps.collector,
      cached,
      ...(staleReadings ? { stale_readings: true } : {}),
      payload: body,
    };
    deps.enqueue(snapshot);
    this.#lastSentAt = deps.clock.monotonic();
    this.#snapshots.inc({ trigger, cached: String(cached) });
    deps.onSnapshot?.(snapshot);
  }

  #interval(): number {
    const { intervalMs, jitterMs } = this.#options;
    return intervalMs + (this.#random() * 2 - 1) * jitterMs;
  }

  /** Resolves at `dueAt` (monotonic ms), when woken, or when `signal` aborts. */
  async #waitUntil(dueAt: number, signal: AbortSignal): Promise<void> {
    if (this.#wakeRequested) {
      this.#wakeRequested = false;
      return;
    }
    const delay = dueAt - this.#deps.clock.monotonic();
    if (delay <= 0) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        cancel();
        signal.removeEventListener('abort', done);
        this.#wake = null;
        this.#wakeRequested = false;
        resolve();
      };
      const cancel = this.#deps.clock.schedule(delay, done);
      this.#wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

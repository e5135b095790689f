/**
 * Kubernetes Events, aggregated and rate-limited as client-go's recorder does, so a flapping
 * device cannot flood the apiserver or `kubectl describe node`:
 *
 * - **Aggregation.** An Event equal to one written within `aggregateMs` (same object, type,
 *   reason and message) bumps that Event's `count` and `lastTimestamp` instead of creating
 *   another.
 * - **Rate limit.** A token bucket per object (`burst` Events, refilled at `perMinute`);
 *   what exceeds it is dropped and counted (events_total{result="dropped"}).
 * - **Never blocks the caller.** `record` queues; one writer sends, in order; a failed write
 *   is logged and counted, not retried (an Event is advice, not state). At most `maxQueued`
 *   (default 1,000) wait: an ingest outage making every node unknown at once drops the
 *   excess (counted) rather than queueing minutes of writes.
 */
import { Counter } from 'prom-client';
import { describeError, metricPrefix, type Clock, type Logger, type Registry } from '../../platform/index.js';
import type { EventBody, EventClient } from './clients.js';

/** The object an Event is about. */
export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  /** Namespaced objects only; Node Events go to `default`. */
  namespace?: string;
  uid?: string;
}

/** Records Events. */
export interface EventRecorder {
  record(object: InvolvedObject, type: 'Normal' | 'Warning', reason: string, message: string): void;
  /** Resolves when every queued Event has been written (or dropped). */
  flush(): Promise<void>;
}

/** Limits of the recorder. */
export interface EventRecorderOptions {
  component: string;
  instance: string;
  burst?: number;
  perMinute?: number;
  aggregateMs?: number;
  maxQueued?: number;
}

interface Written {
  namespace: string;
  name: string;
  count: number;
  at: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

const MAX_TRACKED = 10_000;

/** Creates a recorder writing through `client`. */
export function createEventRecorder(
  deps: { client: EventClient; clock: Clock; log: Logger; registry: Registry },
  options: EventRecorderOptions,
): EventRecorder {
  const burst = options.burst ?? 10;
  const perMinute = options.perMinute ?? 6;
  const aggregateMs = options.aggregateMs ?? 10 * 60_000;
  const counter = new Counter({
    name: `${metricPrefix('controller')}events_total`,
    help: 'Kubernetes Events by reason and result (created, aggregated, dropped by the rate limit, error)',
    labelNames: ['reason', 'result'],
    registers: [deps.registry],
  });
  const written = new Map<string, Written>();
  const buckets = new Map<string, Bucket>();
  let chain: Promise<void> = Promise.resolve();
  let sequence = 0;
  let queued = 0;
  const maxQueued = options.maxQueued ?? 1000;

  const allow = (objectKey: string, now: number): boolean => {
    const bucket = buckets.get(objectKey) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 60_000) * perMinute);
    bucket.at = now;
    buckets.set(objectKey, bucket);
    if (buckets.size > MAX_TRACKED) buckets.delete(buckets.keys().next().value as string);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  };

  const write = async (
    object: InvolvedObject,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): Promise<void> => {
    const now = deps.clock.now();
    const namespace = object.namespace ?? 'default';
    const objectKey = `${object.kind}/${namespace}/${object.name}`;
    const key = `${objectKey}/${type}/${reason}/${message}`;
    const previous = written.get(key);
    const signal = AbortSignal.timeout(10_000);
    try {
      if (previous && now - previous.at <= aggregateMs) {
        if (!allow(objectKey, now)) {
          counter.inc({ reason, result: 'dropped' });
          return;
        }
        previous.count++;
        previous.at = now;
        await deps.client.bump(
          previous.namespace,
          previous.name,
          previous.count,
          new Date(now).toISOString(),
          signal,
        );
        counter.inc({ reason, result: 'aggregated' });
        return;
      }
      if (!allow(objectKey, now)) {
        counter.inc({ reason, result: 'dropped' });
        return;
      }
      const name = `${object.name}.${now.toString(16)}${(sequence++ % 4096).toString(16).padStart(3, '0')}`;
      const stamp = new Date(now).toISOString();
      const body: EventBody = {
        name,
        namespace,
        involvedObject: object,
        type,
        reason,
        message: message.length > 1024 ? `${message.slice(0, 1023)}…` : message,
        count: 1,
        firstTimestamp: stamp,
        lastTimestamp: stamp,
        source: { component: options.component, host: options.instance },
        reportingComponent: options.component,
        reportingInstance: options.instance,
      };
      await deps.client.create(body, signal);
      written.set(key, { namespace, name, count: 1, at: now });
      if (written.size > MAX_TRACKED) written.delete(written.keys().next().value as string);
      counter.inc({ reason, result: 'created' });
    } catch (error) {
      counter.inc({ reason, result: 'error' });
      deps.log.warn({ err: describeError(error), reason, object: objectKey }, 'event not written');
    }
  };

  return {
    record(object, type, reason, message) {
      if (queued >= maxQueued) {
        counter.inc({ reason, result: 'dropped' });
        return;
      }
      queued++;
      chain = chain.then(() => write(object, type, reason, message)).finally(() => void queued--);
    },
    flush() {
      return chain;
    },
  };
}

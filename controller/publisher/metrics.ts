/**
 * The publisher's metrics (the plan's list), in the registry the component passes in. A
 * publisher is made per term, so asking twice for one registry returns the instruments
 * already registered there instead of registering them again. Label values are bounded:
 * `target` is status or mirror, `result` ok, conflict or error, `budget` writes or bytes,
 * `outcome` retried or stepped_down.
 */
import { Counter, Gauge, Histogram, type Metric } from 'prom-client';
import { isConflict, metricPrefix, type Clock, type Registry } from '../../platform/index.js';

/** Which ConfigMap a write was for. */
export type WriteTarget = 'status' | 'mirror';
/** How one write request ended. */
export type WriteResult = 'ok' | 'conflict' | 'error';

/** The publisher's and mirrors' instruments. */
export interface PublisherMetrics {
  readonly writes: Counter<'target' | 'result'>;
  readonly writeBytes: Counter<'target'>;
  readonly writeSeconds: Histogram<'target'>;
  readonly deferred: Counter<'budget'>;
  readonly conflicts: Counter<'outcome'>;
  readonly invalidOverwritten: Counter;
  readonly documentBytes: Gauge;
  readonly omittedNodes: Gauge;
  readonly omittedDevices: Gauge;
  readonly lastPublish: Gauge;
  readonly mirrorsForeign: Gauge;
  readonly mirrorsForbidden: Gauge;
}

/** The instruments under `npu_fault_<component>_` in `registry`, registered on first use. */
export function publisherMetrics(registry: Registry, component = 'controller'): PublisherMetrics {
  const prefix = metricPrefix(component);
  const registers = [registry];
  const once = <M extends Metric>(name: string, make: (name: string) => M): M =>
    (registry.getSingleMetric(`${prefix}${name}`) as M | undefined) ?? make(`${prefix}${name}`);
  return {
    writes: once(
      'writes_total',
      (name) =>
        new Counter({
          name,
          help: 'ConfigMap write requests (create, update, delete) by target and result',
          labelNames: ['target', 'result'],
          registers,
        }),
    ),
    writeBytes: once(
      'write_bytes_total',
      (name) =>
        new Counter({
          name,
          help: 'Bytes of ConfigMap data written (acknowledged writes)',
          labelNames: ['target'],
          registers,
        }),
    ),
    writeSeconds: once(
      'write_duration_seconds',
      (name) =>
        new Histogram({
          name,
          help: 'Time one ConfigMap write request took, failed ones included',
          labelNames: ['target'],
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
          registers,
        }),
    ),
    deferred: once(
      'publish_deferred_total',
      (name) =>
        new Counter({
          name,
          help: 'Status writes held back by the write budget, by the ceiling that held them (writes/s or bytes/s)',
          labelNames: ['budget'],
          registers,
        }),
    ),
    conflicts: once(
      'publish_conflicts_total',
      (name) =>
        new Counter({
          name,
          help: 'Status writes that met a 409: retried, or stepped down (a newer leader wrote)',
          labelNames: ['outcome'],
          registers,
        }),
    ),
    invalidOverwritten: once(
      'publish_invalid_overwritten_total',
      (name) =>
        new Counter({
          name,
          help: 'Times the stored status ConfigMap held no valid document (someone else wrote it) and was overwritten',
          registers,
        }),
    ),
    documentBytes: once(
      'document_bytes',
      (name) =>
        new Gauge({ name, help: 'Size of the last rendered status document (data bytes)', registers }),
    ),
    omittedNodes: once(
      'document_omitted_nodes',
      (name) =>
        new Gauge({
          name,
          help: 'Nodes cut from the last rendered document to fit its byte limit (omitted_nodes)',
          registers,
        }),
    ),
    omittedDevices: once(
      'document_omitted_devices',
      (name) =>
        new Gauge({
          name,
          help: 'Devices of listed nodes cut from the last rendered document to fit its byte limit (their omitted_devices)',
          registers,
        }),
    ),
    lastPublish: once(
      'last_publish_timestamp_seconds',
      (name) =>
        new Gauge({
          name,
          help: 'Wall time (epoch seconds) of the last acknowledged status write',
          registers,
        }),
    ),
    mirrorsForeign: once(
      'mirror_foreign_configmaps',
      (name) =>
        new Gauge({
          name,
          help: 'Mirror namespaces holding a ConfigMap of the status name that the controller does not own (left alone)',
          registers,
        }),
    ),
    mirrorsForbidden: once(
      'mirror_forbidden_namespaces',
      (name) =>
        new Gauge({
          name,
          help: 'Namespaces labelled for a mirror where the controller may not write (no RoleBinding to npu-fault-status-mirror)',
          registers,
        }),
    ),
  };
}

/**
 * Sends one write request and counts it: writes_total{target,result} and
 * write_duration_seconds{target}, timed on `clock` (so FakeClock tests see their delays).
 */
export async function timedWrite<T>(
  metrics: PublisherMetrics,
  clock: Clock,
  target: WriteTarget,
  request: () => Promise<T>,
): Promise<T> {
  const started = clock.monotonic();
  try {
    const value = await request();
    metrics.writes.inc({ target, result: 'ok' });
    return value;
  } catch (error) {
    metrics.writes.inc({ target, result: isConflict(error) ? 'conflict' : 'error' });
    throw error;
  } finally {
    metrics.writeSeconds.observe({ target }, (clock.monotonic() - started) / 1000);
  }
}

/** The PodResources reader's metrics, registered once per registry (a reader built twice reuses them). */
import { Counter, Gauge, type Metric } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';

export function readerMetrics(registry: Registry) {
  const prefix = metricPrefix('agent');
  const registers = [registry];
  const once = <M extends Metric>(name: string, make: (fullName: string) => M): M =>
    (registry.getSingleMetric(`${prefix}${name}`) as M | undefined) ?? make(`${prefix}${name}`);
  return {
    reads: once(
      'pod_resources_reads_total',
      (name) =>
        new Counter({
          name,
          help: 'Reads of the kubelet PodResources API by result (ok, unavailable, timeout, too-large, malformed, invalid, over-bounds, incomplete, error)',
          labelNames: ['result'],
          registers,
        }),
    ),
    known: once(
      'pod_resources_known',
      (name) =>
        new Gauge({
          name,
          help: '1 when the last PodResources read succeeded (snapshots carry device_holders), else 0',
          registers,
        }),
    ),
    unmapped: once(
      'pod_resources_unmapped_allocations',
      (name) =>
        new Gauge({
          name,
          help: 'Accelerator allocations of the last read that name no device of ours, by why (logical-id, mig, dra, unknown-id, unknown-resource); any makes the read incomplete and the holders unknown',
          labelNames: ['why'],
          registers,
        }),
    ),
  };
}

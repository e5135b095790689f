/**
 * The host memory ECC check's metrics, under `npu_fault_agent_`, registered once per
 * registry. `type` is correctable or uncorrectable.
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from '../../../platform/index.js';
import { metricsIn } from '../metrics.js';

/** The host memory ECC check's instruments. */
export interface EdacMetrics {
  readonly available: Gauge;
  readonly controllers: Gauge;
  readonly errors: Counter<'type'>;
  readonly readErrors: Counter;
}

/** The instruments in `registry`, registered on first use. */
export function edacMetrics(registry: Registry): EdacMetrics {
  const { registers, once } = metricsIn(registry);
  const metrics: EdacMetrics = {
    available: once(
      'edac_available',
      (name) =>
        new Gauge({
          name,
          help: '1 when the kernel shows EDAC memory controllers (host memory ECC is watched), 0 when it does not',
          registers,
        }),
    ),
    controllers: once(
      'edac_memory_controllers',
      (name) =>
        new Gauge({ name, help: 'EDAC memory controllers known to the host memory ECC check', registers }),
    ),
    errors: once(
      'host_memory_ecc_errors_total',
      (name) =>
        new Counter({
          name,
          help: 'Host memory ECC errors EDAC counted since the agent started, by type (correctable, uncorrectable)',
          labelNames: ['type'],
          registers,
        }),
    ),
    readErrors: once(
      'edac_read_errors_total',
      (name) =>
        new Counter({
          name,
          help: 'Failed reads of the EDAC memory controllers (the last counts stand)',
          registers,
        }),
    ),
  };
  // Both types start at 0, so an alert on increase() sees the first error.
  for (const type of ['correctable', 'uncorrectable']) metrics.errors.inc({ type }, 0);
  return metrics;
}

/**
 * The observation endpoint's metrics, in the registry the component passes in (one app per
 * registry: the names are fixed). Label values are bounded: `result` is `accepted` or a
 * DropReason, `code` one of the statuses the app answers with.
 */
import { Counter, Histogram } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';

/** The endpoint's instruments. */
export interface ObservationsMetrics {
  /** Observations by outcome: `accepted`, `duplicate`, `out-of-order`, `future`, `old-boot`. */
  readonly observations: Counter<'result'>;
  /** Requests by HTTP status. */
  readonly requests: Counter<'code'>;
  /** Request handling time, from the first byte read to the answer written. */
  readonly seconds: Histogram;
}

/** Registers the metrics under `npu_fault_<component>_`. */
export function createObservationsMetrics(registry: Registry, component: string): ObservationsMetrics {
  const prefix = metricPrefix(component);
  const registers = [registry];
  return {
    observations: new Counter({
      name: `${prefix}observations_total`,
      help: 'Observations received, by what the engine did with them (accepted, or why it dropped them)',
      labelNames: ['result'],
      registers,
    }),
    requests: new Counter({
      name: `${prefix}observation_requests_total`,
      help: 'POST /v1/observations requests (and stray ones), by HTTP status answered',
      labelNames: ['code'],
      registers,
    }),
    seconds: new Histogram({
      name: `${prefix}observation_request_duration_seconds`,
      help: 'Time to answer an observations request: authentication, body, validation, engine',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
  };
}

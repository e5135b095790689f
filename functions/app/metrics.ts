/**
 * The ingest endpoint's metrics, in the registry the function passes in (one app per
 * registry: the names are fixed). The forwarder registers its own (`forward_*`, `replicas`)
 * in the same registry, and the token reviewer its own (platform/k8s/token-review-metrics.ts).
 * Label values are bounded: `code` is a status the app answers with, `result` one of three,
 * `reason` an error code of this folder.
 */
import { Counter, Histogram } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';

/** The endpoint's instruments. */
export interface FunctionMetrics {
  /** Requests by HTTP status. */
  readonly requests: Counter<'code'>;
  /** Request handling time, from the first byte read to the answer written. */
  readonly seconds: Histogram;
  /** Snapshots by outcome: `accepted` or `dropped` by the leader, `invalid` (refused here). */
  readonly snapshots: Counter<'result'>;
  /** Refused bodies by reason (`invalid_json`, `invalid_body`, `forbidden_key`, `body_too_large`, `too_many_devices`, …). */
  readonly validationFailures: Counter<'reason'>;
  /** Refused credentials by reason (`missing_token`, `invalid_token`, `node_mismatch`, …). */
  readonly authFailures: Counter<'reason'>;
}

/** Registers the metrics under `npu_fault_<component>_` (component `function` by default). */
export function createFunctionMetrics(registry: Registry, component = 'function'): FunctionMetrics {
  const prefix = metricPrefix(component);
  const registers = [registry];
  return {
    requests: new Counter({
      name: `${prefix}requests_total`,
      help: 'POST /v1/snapshots requests (and stray ones), by HTTP status answered',
      labelNames: ['code'],
      registers,
    }),
    seconds: new Histogram({
      name: `${prefix}request_duration_seconds`,
      help: 'Time to answer a snapshots request: authentication, body, validation, forwarding',
      // Finer around 10 ms, the latency this endpoint is meant to add at most (its p99).
      buckets: [0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    snapshots: new Counter({
      name: `${prefix}snapshots_total`,
      help: 'Snapshots received, by result: accepted or dropped by the leader, or invalid (refused here)',
      labelNames: ['result'],
      registers,
    }),
    validationFailures: new Counter({
      name: `${prefix}validation_failures_total`,
      help: 'Request bodies refused (400, 408, 413, 415, 422), by reason',
      labelNames: ['reason'],
      registers,
    }),
    authFailures: new Counter({
      name: `${prefix}auth_failures_total`,
      help: 'Requests refused for their credentials (401, 403, or 503 while TokenReview is down), by reason',
      labelNames: ['reason'],
      registers,
    }),
  };
}

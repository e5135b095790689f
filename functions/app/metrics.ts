/**
 * The ingest endpoint's metrics, in the registry the function passes in (one app per
 * registry: the names are fixed). The forwarder registers its own (`forward_*`, `replicas`)
 * in the same registry. Label values are bounded: `code` is a status the app answers with,
 * `result` one of three (snapshots) or four (token reviews), `reason` an error code of this
 * folder.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
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

/** What one token review came to (platform/k8s TokenReviewOutcome). */
type ReviewOutcome = 'authenticated' | 'rejected' | 'unavailable' | 'busy';
const REVIEW_OUTCOMES: readonly ReviewOutcome[] = ['authenticated', 'rejected', 'unavailable', 'busy'];

/**
 * Registers the token reviewer's metrics under `npu_fault_<component>_`:
 * `token_reviews_total{result}` (TokenReviews sent, those ahead of a stay's end included, by
 * outcome, and `busy`: reviews refused because `maxConcurrentReviews` were in flight and
 * `maxQueuedReviews` waiting), and the
 * gauges `token_reviews_in_flight` and `token_reviews_queued`, read from `load` at scrape
 * time. Returns the reviewer's `onOutcome`.
 */
export function createTokenReviewMetrics(
  registry: Registry,
  load: () => { inFlight: number; queued: number },
  component = 'function',
): (outcome: ReviewOutcome) => void {
  const prefix = metricPrefix(component);
  const registers = [registry];
  const reviews = new Counter({
    name: `${prefix}token_reviews_total`,
    help: 'TokenReviews sent, for tokens not cached or reviewed ahead of the end of their stay (a failed one ahead of time leaves requests answered from the cache), by result (authenticated, rejected, unavailable; busy: refused for capacity, 503)',
    labelNames: ['result'],
    registers,
  });
  for (const result of REVIEW_OUTCOMES) reviews.inc({ result }, 0);
  new Gauge({
    name: `${prefix}token_reviews_in_flight`,
    help: 'TokenReview requests in flight to the apiserver (at most maxConcurrentReviews)',
    registers,
    collect() {
      this.set(load().inFlight);
    },
  });
  new Gauge({
    name: `${prefix}token_reviews_queued`,
    help: 'Token reviews waiting for a turn (at most maxQueuedReviews)',
    registers,
    collect() {
      this.set(load().queued);
    },
  });
  return (outcome) => reviews.inc({ result: outcome });
}

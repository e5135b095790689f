/**
 * A token reviewer's metrics under `npu_fault_<component>_`, for every component that
 * authenticates callers (the function its agents, the controller its functions and explain
 * callers): `token_reviews_total{result}` (TokenReviews sent, those ahead of a stay's end
 * included, by outcome; `busy`: refused for capacity, 503; `refused_locally`: refused by the
 * local check with no review), the gauges `token_reviews_in_flight` and `token_reviews_queued`
 * (read from `load` at scrape time) and `token_key_reads_total{result}` (reads of the
 * apiserver's service-account keys by the local check).
 */
import { Counter, Gauge } from 'prom-client';
import { metricPrefix, type Registry } from '../metrics.js';
import type { TokenReviewOutcome } from './token-review.js';

const REVIEW_OUTCOMES: readonly TokenReviewOutcome[] = [
  'authenticated',
  'rejected',
  'unavailable',
  'busy',
  'refused_locally',
];

/** The reviewer's `onOutcome` and the local check's `onKeysRead`. */
export interface TokenReviewMetrics {
  readonly onOutcome: (outcome: TokenReviewOutcome) => void;
  readonly onKeysRead: (ok: boolean) => void;
}

export function createTokenReviewMetrics(
  registry: Registry,
  load: () => { inFlight: number; queued: number },
  component: string,
): TokenReviewMetrics {
  const prefix = metricPrefix(component);
  const registers = [registry];
  const reviews = new Counter({
    name: `${prefix}token_reviews_total`,
    help: 'Tokens not cached, by what became of them: reviewed (authenticated, rejected, unavailable), refused for capacity (busy, 503) or refused by the local signature and claim check with no review (refused_locally); reviews ahead of the end of a stay included',
    labelNames: ['result'],
    registers,
  });
  for (const result of REVIEW_OUTCOMES) reviews.inc({ result }, 0);
  const keyReads = new Counter({
    name: `${prefix}token_key_reads_total`,
    help: "Reads of the apiserver's service-account issuer keys by the local token check, by result (ok, failed: tokens then go to TokenReview unchecked, in a small pool)",
    labelNames: ['result'],
    registers,
  });
  for (const result of ['ok', 'failed']) keyReads.inc({ result }, 0);
  new Gauge({
    name: `${prefix}token_reviews_in_flight`,
    help: 'TokenReview requests in flight to the apiserver',
    registers,
    collect() {
      this.set(load().inFlight);
    },
  });
  new Gauge({
    name: `${prefix}token_reviews_queued`,
    help: 'Token reviews waiting for a turn',
    registers,
    collect() {
      this.set(load().queued);
    },
  });
  return {
    onOutcome: (outcome) => reviews.inc({ result: outcome }),
    onKeysRead: (ok) => keyReads.inc({ result: ok ? 'ok' : 'failed' }),
  };
}

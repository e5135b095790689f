import { describe, expect, it } from '@jest/globals';
import { Registry } from '../metrics.js';
import { createTokenReviewMetrics } from './token-review-metrics.js';

/** The metric's samples as `labels → value`. */
async function samples(registry: Registry, name: string): Promise<Record<string, number>> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const out: Record<string, number> = {};
  for (const value of (metric?.values ?? []) as { labels: Record<string, string>; value: number }[])
    out[Object.values(value.labels).join(',')] = value.value;
  return out;
}

describe('createTokenReviewMetrics', () => {
  it('counts every outcome from 0, and reads the reviews in flight and queued at scrape time', async () => {
    const registry = new Registry();
    const load = { inFlight: 0, queued: 0 };
    const { onOutcome, onKeysRead } = createTokenReviewMetrics(registry, () => load, 'function');
    expect(await samples(registry, 'npu_fault_function_token_reviews_total')).toEqual({
      authenticated: 0,
      rejected: 0,
      unavailable: 0,
      busy: 0,
      refused_locally: 0,
    });
    expect(await samples(registry, 'npu_fault_function_token_key_reads_total')).toEqual({ ok: 0, failed: 0 });
    onKeysRead(false);
    onOutcome('refused_locally');
    onOutcome('authenticated');
    onOutcome('busy');
    onOutcome('busy');
    load.inFlight = 16;
    load.queued = 3;
    expect(await samples(registry, 'npu_fault_function_token_reviews_total')).toMatchObject({
      authenticated: 1,
      busy: 2,
      refused_locally: 1,
    });
    expect(await samples(registry, 'npu_fault_function_token_key_reads_total')).toEqual({ ok: 0, failed: 1 });
    expect(await samples(registry, 'npu_fault_function_token_reviews_in_flight')).toEqual({ '': 16 });
    expect(await samples(registry, 'npu_fault_function_token_reviews_queued')).toEqual({ '': 3 });
  });
});

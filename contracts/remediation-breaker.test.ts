import { describe, expect, it } from '@jest/globals';
import { CLOSED_BREAKER, decodeBreaker, encodeBreaker, resetBreaker } from './remediation-breaker.js';

describe('npu-fault-remediation-state/breaker.json', () => {
  it('is compact JSON in the schema order; absent is closed', () => {
    expect(encodeBreaker(CLOSED_BREAKER)).toBe(
      '{"state":"closed","openedAt":null,"reason":null,"unhealthy":[],"acknowledged":[],"closedAt":null,"closedBy":null}',
    );
    expect(decodeBreaker(undefined)).toEqual({ value: CLOSED_BREAKER });
  });

  it('refuses an invalid state in one line naming the ConfigMap, key and field', () => {
    expect(decodeBreaker('[')).toEqual({ error: 'npu-fault-remediation-state/breaker.json: not JSON' });
    expect(decodeBreaker(JSON.stringify({ ...CLOSED_BREAKER, state: 'half' })).error).toMatch(
      /^npu-fault-remediation-state\/breaker.json\/state: /,
    );
  });

  it('a reset acknowledges the nodes counted when it opened', () => {
    const open = {
      ...CLOSED_BREAKER,
      state: 'open' as const,
      openedAt: '2026-12-01T10:00:00.000Z',
      reason: '3 of 4 accelerator nodes unhealthy (limit 1): a, b, c',
      unhealthy: ['c', 'a', 'b'],
      acknowledged: ['z'],
    };
    expect(resetBreaker(open, '2026-12-01T11:00:00.000Z', 'alice')).toEqual({
      ...open,
      state: 'closed',
      acknowledged: ['a', 'b', 'c', 'z'],
      closedAt: '2026-12-01T11:00:00.000Z',
      closedBy: 'alice',
    });
  });
});

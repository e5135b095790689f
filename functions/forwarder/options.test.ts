import { describe, expect, it } from '@jest/globals';
import { FORWARDER_DEFAULTS, forwarderSettings } from './options.js';

describe('forwarderSettings', () => {
  it('fills in the defaults, the request timeout defaulting to the bound', () => {
    const settings = forwarderSettings({});
    expect(settings).toEqual({ ...FORWARDER_DEFAULTS, requestTimeoutMs: FORWARDER_DEFAULTS.leaderTimeoutMs });
    expect(forwarderSettings({ leaderTimeoutMs: 500 }).requestTimeoutMs).toBe(500);
    expect(forwarderSettings({ leaderTimeoutMs: 500, requestTimeoutMs: 50 }).requestTimeoutMs).toBe(50);
  });

  it('takes 0 where 0 means none, and refuses it where a count or a bound is needed', () => {
    expect(forwarderSettings({ batchWindowMs: 0, leaderIntervalMs: 0, followerWindowMs: 0 })).toMatchObject({
      batchWindowMs: 0,
      leaderIntervalMs: 0,
      followerWindowMs: 0,
    });
    expect(() => forwarderSettings({ maxBatch: 0 })).toThrow(
      'forwarder maxBatch: expected a positive integer, got 0',
    );
    expect(() => forwarderSettings({ maxBatchBytes: 1.5 })).toThrow(
      'forwarder maxBatchBytes: expected a positive integer, got 1.5',
    );
    expect(() => forwarderSettings({ leaderTimeoutMs: 0 })).toThrow(
      'forwarder leaderTimeoutMs: expected a number >= 1, got 0',
    );
    expect(() => forwarderSettings({ retryIntervalMs: Number.POSITIVE_INFINITY })).toThrow(
      'forwarder retryIntervalMs: expected a number >= 1, got Infinity',
    );
  });

  it('names the first option out of range, in the order of the settings', () => {
    expect(() => forwarderSettings({ followerWindowMs: -1, batchWindowMs: -1 })).toThrow(
      'forwarder batchWindowMs',
    );
  });
});

import { describe, expect, it } from '@jest/globals';
import { ConfigError } from '../../platform/index.js';
import { parseMirrorsConfig, parsePublisherConfig, type PublisherConfigInput } from './config.js';

describe('parsePublisherConfig', () => {
  it("fills in the contract's numbers", () => {
    expect(parsePublisherConfig()).toEqual({
      name: 'npu-fault-status-v3',
      tickMinMs: 1000,
      tickMaxMs: 1200,
      earlyMinGapMs: 150,
      heartbeatMs: 1000,
      maxWritesPerSecond: 4,
      maxBytesPerSecond: 262_144,
      bytesWindowSeconds: 60,
      maxConflictRetries: 5,
      requestTimeoutMs: 10_000,
    });
  });

  it.each([
    [
      'a tick range upside down',
      { tickMinMs: 1000, tickMaxMs: 900 },
      'publish.tickMaxMs: must be at least tickMinMs (1000)',
    ],
    [
      'an early gap above the tick',
      { tickMinMs: 500, tickMaxMs: 600, earlyMinGapMs: 600 },
      'publish.earlyMinGapMs: must not exceed tickMinMs (500)',
    ],
    [
      'a zero rate ceiling',
      { maxWritesPerSecond: 0 },
      'publish.maxWritesPerSecond: Too small: expected number to be >0',
    ],
    ['an unknown field', { tick: 1 }, 'publish: Unrecognized key: "tick"'],
    ['a bad name', { name: 'Status_V3' }, 'publish.name: must be a DNS subdomain (an object name)'],
  ])('refuses %s with one line naming the field', (_name, input, line) => {
    try {
      parsePublisherConfig(input as PublisherConfigInput);
      throw new Error('expected a ConfigError');
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).lines).toEqual([line]);
    }
  });
});

describe('parseMirrorsConfig', () => {
  it('defaults to 10 s for a change and 60 s for a heartbeat', () => {
    expect(parseMirrorsConfig()).toEqual({
      intervalMs: 10_000,
      heartbeatMs: 60_000,
      requestTimeoutMs: 10_000,
    });
  });

  it('names the field of a bad value', () => {
    expect(() => parseMirrorsConfig({ intervalMs: -1 })).toThrow(/^mirrors\.intervalMs: /);
  });
});

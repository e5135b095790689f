import { describe, expect, it } from '@jest/globals';
import { parseWrkReport, wrkMs, wrkThreads } from './wrk.js';

/** wrk 4.1's --latency report (its layout; the figures are made up). */
const REPORT = `Running 10s test @ http://127.0.0.1:39113/v1/snapshots
  4 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     5.12ms    8.01ms  97.85ms   91.20%
    Req/Sec   780.11    120.52     1.02k    70.00%
  Latency Distribution
     50%    2.40ms
     75%    4.10ms
     90%   12.50ms
     99%   44.57ms
  31007 requests in 10.00s, 12.34MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 5
Requests/sec:   3100.62
Transfer/sec:      1.23MB
`;

describe('parseWrkReport', () => {
  it('reads the throughput, the latency percentiles and max, and counts refusals and socket errors', () => {
    expect(parseWrkReport(REPORT, 64)).toEqual({
      connections: 64,
      requests: 31007,
      requestsPerSecond: 3101,
      errors: 8,
      latencyMs: { p50: 2.4, p90: 12.5, p99: 44.57, max: 97.85 },
    });
  });

  it('refuses a report without its latency distribution (wrk run without --latency)', () => {
    expect(() => parseWrkReport(REPORT.replace(/ {5}99%.*\n/, ''), 64)).toThrow('no 99% latency');
  });
});

describe('wrkMs', () => {
  it.each([
    ['812.00us', 0.812],
    ['3.21ms', 3.21],
    ['1.20s', 1200],
    ['2.00m', 120_000],
  ])('reads %s as %d ms', (text, ms) => {
    expect(wrkMs(text)).toBeCloseTo(ms, 6);
  });

  it('refuses what is not a wrk duration', () => {
    expect(() => wrkMs('12 ms')).toThrow('unreadable duration');
  });
});

describe('wrkThreads', () => {
  it('uses one thread per 16 connections, between 1 and 4', () => {
    expect([1, 16, 17, 64, 1000].map(wrkThreads)).toEqual([1, 1, 2, 4, 4]);
  });
});

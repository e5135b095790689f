import { describe, expect, it } from '@jest/globals';
import { apiserverCounters } from './apiserver.js';
import {
  type ReadText,
  machineCpu,
  metricSum,
  metricValue,
  processCpuSeconds,
  processRssBytes,
} from './usage.js';

/** A readFileSync stand-in serving `files`. */
function reader(files: Record<string, string>): ReadText {
  return (path: string) => {
    const text = files[path];
    if (text === undefined) throw new Error(`ENOENT ${path}`);
    return text;
  };
}

describe('/proc readings', () => {
  it('adds utime and stime, even when the command name holds spaces and parentheses', () => {
    const stat = '42 (node (worker) x) S 1 42 42 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 11 0 1 1 1';
    expect(processCpuSeconds(42, reader({ '/proc/42/stat': stat }))).toBeCloseTo(3.8);
  });

  it('reads VmRSS, and says null for a process that is gone', () => {
    const read = reader({ '/proc/7/status': 'Name:\tnode\nVmRSS:\t  20480 kB\nThreads:\t11\n' });
    expect(processRssBytes(7, read)).toBe(20480 * 1024);
    expect(processRssBytes(8, read)).toBeNull();
    expect(processCpuSeconds(8, read)).toBeNull();
  });

  it('counts iowait as idle in the machine counters', () => {
    expect(machineCpu(reader({ '/proc/stat': 'cpu  10 0 20 300 5 0 1 0 0 0\ncpu0 1 2 3\n' }))).toEqual({
      idle: 305,
      total: 336,
    });
  });
});

describe('expositions', () => {
  const text = [
    '# HELP apiserver_request_total x',
    'apiserver_request_total{code="201",resource="configmaps",verb="POST"} 3',
    'apiserver_request_total{code="200",resource="configmaps",verb="PUT"} 40',
    'apiserver_request_total{code="200",resource="pods",verb="LIST"} 9',
    'apiserver_request_total{code="200",resource="leases",verb="PUT"} 7',
    'apiserver_watch_events_sizes_sum{group="",kind="ConfigMap",version="v1"} 123456',
    'apiserver_watch_events_sizes_sum{group="",kind="Pod",version="v1"} 99',
    'apiserver_watch_events_total{group="",kind="ConfigMap",version="v1"} 77',
    'npu_fault_controller_nodejs_eventloop_lag_p99_seconds 0.012',
  ].join('\n');

  it('sums the series whose labels match', () => {
    expect(metricSum(text, 'apiserver_request_total', ['verb="PUT"'])).toBe(47);
    expect(metricValue(text, 'npu_fault_controller_nodejs_eventloop_lag_p99_seconds')).toBe(0.012);
    expect(metricValue(text, 'absent')).toBeNull();
  });

  it("takes the apiserver's writes (every client) and the ConfigMap watch traffic", () => {
    expect(apiserverCounters(text)).toEqual({
      writes: 50,
      configMapWatchBytes: 123456,
      configMapWatchEvents: 77,
    });
  });

  it('reads the watch traffic by resource where the label set says resource', () => {
    const newer = 'apiserver_watch_events_sizes_sum{group="",resource="configmaps",version="v1"} 10';
    expect(apiserverCounters(newer).configMapWatchBytes).toBe(10);
  });
});

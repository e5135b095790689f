import { describe, expect, it } from '@jest/globals';
import { ANSWERING, afterProbe, isUnreachable, unreachableMessage, type ProbeVerdict } from './misses.js';
import type { Target } from './targets.js';

const T0 = Date.UTC(2026, 0, 1);
const miss = (error: string): ProbeVerdict => ({ answered: false, error });
const answer: ProbeVerdict = { answered: true };

describe('misses in a row', () => {
  it('counts misses in a row from the first one’s time, and one answer clears them', () => {
    let state = afterProbe(ANSWERING, miss('timeout after 2000 ms'), T0);
    state = afterProbe(state, miss('EHOSTUNREACH'), T0 + 5000);
    expect(state).toEqual({ consecutive: 2, since: T0, lastError: 'EHOSTUNREACH' });
    expect(isUnreachable(state, 3)).toBe(false);
    state = afterProbe(state, miss('ENETUNREACH'), T0 + 10_000);
    expect(isUnreachable(state, 3)).toBe(true);
    state = afterProbe(state, answer, T0 + 15_000);
    expect(state).toEqual(ANSWERING);
    expect(isUnreachable(state, 3)).toBe(false);
  });

  it('needs the misses in a row: an answer between them starts the count again', () => {
    const verdicts = [miss('a'), miss('b'), answer, miss('c'), miss('d')];
    const state = verdicts.reduce((s, v, i) => afterProbe(s, v, T0 + i * 5000), ANSWERING);
    expect(state).toEqual({ consecutive: 2, since: T0 + 15_000, lastError: 'd' });
    expect(isUnreachable(state, 3)).toBe(false);
    expect(isUnreachable(state, 2)).toBe(true);
  });

  it('names every unreachable target, its misses, their span and the last error, within the bound', () => {
    const gateway: Target = { kind: 'gateway', host: '10.0.0.1', port: 53 };
    const api: Target = { kind: 'api-server', host: 'fd00::1', port: 443 };
    const message = unreachableMessage(
      [
        { target: gateway, state: { consecutive: 3, since: T0, lastError: 'timeout after 2000 ms' } },
        { target: api, state: { consecutive: 4, since: T0 - 5000, lastError: 'ENETUNREACH' } },
      ],
      T0 + 10_000,
    );
    expect(message).toBe(
      'gateway 10.0.0.1:53: 3 probes missed in a row over 10 s (timeout after 2000 ms); api-server [fd00::1]:443: 4 probes missed in a row over 15 s (ENETUNREACH)',
    );
    const many = Array.from({ length: 8 }, (_, i) => ({
      target: { kind: 'configured', host: `10.0.0.${i + 1}`, port: 22 } as Target,
      state: { consecutive: 3, since: T0, lastError: 'timeout after 2000 ms' },
    }));
    const long = unreachableMessage(many, T0 + 10_000);
    expect(long).toHaveLength(256);
    expect(long.startsWith('configured 10.0.0.1:22: 3 probes')).toBe(true);
    expect(long.endsWith('…')).toBe(true);
  });
});

import { describe, expect, it } from '@jest/globals';
import type { PublishedDocument } from '../contracts/index.js';
import { PublishedTransitions, compareTransitions, parseReplay } from './failover.js';

const T = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number): string => new Date(T + ms).toISOString();
const doc = (
  devices: Record<string, { status: string; since: number; reason?: string }>,
): PublishedDocument =>
  ({
    nodes: {
      n: {
        npus: Object.entries(devices).map(([id, d]) => ({
          id,
          status: d.status,
          since: iso(d.since),
          reason: d.reason ?? null,
        })),
      },
    },
  }) as unknown as PublishedDocument;
const replay = (...lines: [number, string, string][]): string =>
  lines.map(([at, from, to]) => JSON.stringify({ at: iso(at), node: 'n', npu: 'npu1', from, to })).join('\n');

describe('the failover transition check', () => {
  const follow = (...docs: [number, PublishedDocument][]): PublishedTransitions => {
    const p = new PublishedTransitions(['n'], 2);
    for (const [seen, d] of docs) p.observe(d, T + seen);
    return p;
  };
  const options = { publishIntervalMs: 1000, endAt: T + 100_000 };

  it('matches published and replayed one for one', () => {
    const p = follow(
      [0, doc({})],
      [1500, doc({ npu1: { status: 'failed', since: 1000 } })],
      [12_500, doc({ npu1: { status: 'healthy', since: 12_000 } })],
    );
    const r = parseReplay(
      replay([0, 'unknown', 'healthy'], [1000, 'healthy', 'failed'], [12_000, 'failed', 'healthy']),
    );
    expect(compareTransitions(p.steps, r, options)).toMatchObject({ matched: 2, lost: 0, duplicated: 0 });
  });

  it('starts a device where its node is unobserved, and counts an observed node going unknown', () => {
    const unobserved = { ...doc({}), unobserved: ['n'] } as PublishedDocument;
    const p = follow(
      [0, unobserved],
      // The first snapshot had a reason: unknown from the start, as in the replay.
      [1500, doc({ npu0: { status: 'unknown', since: 1000 } })],
      [2500, doc({})],
      // Observed, then the agent went quiet and came back: transitions in both.
      [9500, doc({ npu1: { status: 'unknown', since: 9000 } })],
      [12_500, doc({})],
    );
    // npu0's unknown start and first healthy are its start, as in the replay.
    expect(p.steps.get('n/npu0')).toBeUndefined();
    expect(p.steps.get('n/npu1')?.map((s) => s.status)).toEqual(['unknown', 'healthy']);
    const r = parseReplay(
      [
        replay([1000, 'unknown', 'healthy'], [9000, 'healthy', 'unknown'], [12_000, 'unknown', 'healthy']),
        JSON.stringify({ at: iso(2000), node: 'n', npu: 'npu0', from: 'unknown', to: 'healthy' }),
      ].join('\n'),
    );
    expect(r.get('n/npu0')).toBeUndefined();
    expect(compareTransitions(p.steps, r, options)).toMatchObject({ matched: 2, lost: 0, duplicated: 0 });
  });

  it("puts a late snapshot's change back after the agent-unreachable change the engine made first", () => {
    // Printed by time: the late snapshot's change is stamped with its collected_at (13 s),
    // before the deadline the engine had already fired (17 s).
    const r = parseReplay(
      replay([12_000, 'unknown', 'healthy'], [13_000, 'unknown', 'healthy'], [17_000, 'healthy', 'unknown']),
    );
    expect(r.get('n/npu1')?.map((s) => [s.status, s.at - T])).toEqual([
      ['unknown', 17_000],
      ['healthy', 13_000],
    ]);
    const p = follow(
      [0, { ...doc({}), unobserved: ['n'] } as PublishedDocument],
      [12_500, doc({})],
      [18_500, doc({ npu1: { status: 'unknown', since: 18_000 } })],
      [19_500, doc({})],
    );
    expect(compareTransitions(p.steps, r, options)).toMatchObject({ matched: 2, lost: 0, duplicated: 0 });
  });

  it('counts a status never published as lost, and one published twice as duplicated', () => {
    const p = follow(
      [1500, doc({ npu1: { status: 'failed', since: 1000 } })],
      [3500, doc({})],
      [4500, doc({ npu1: { status: 'failed', since: 1000 } })],
    );
    const r = parseReplay(
      replay([1000, 'healthy', 'failed'], [3000, 'failed', 'healthy'], [20_000, 'healthy', 'degraded']),
    );
    expect(compareTransitions(p.steps, r, options)).toMatchObject({ matched: 2, lost: 1, duplicated: 1 });
  });

  it('merges an excursion shorter than one publish interval, and sets aside the gap and the last interval', () => {
    const p = follow([0, doc({})], [2500, doc({ npu1: { status: 'failed', since: 2000 } })]);
    const r = parseReplay(
      replay(
        [1000, 'healthy', 'degraded'],
        [1500, 'degraded', 'healthy'],
        [2000, 'healthy', 'failed'],
        [30_000, 'failed', 'healthy'],
        [99_500, 'healthy', 'failed'],
      ),
    );
    const result = compareTransitions(p.steps, r, { ...options, gap: { from: T + 29_000, to: T + 40_000 } });
    expect(result).toMatchObject({ matched: 1, merged: 2, inLeaderlessGap: 1, pendingAtEnd: 1, lost: 0 });
  });
});

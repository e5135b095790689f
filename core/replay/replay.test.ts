import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Snapshot } from '../../contracts/index.js';
import { isoAt, npuSnapshot, type NpuSpec } from '../engine/testing.js';
import { Replay, formatTransition, parseSnapshotLine, replayLines, runReplay } from './replay.js';

const ok: NpuSpec = { npu: 0, temp: 50, power: 100 };

/** `seconds` of fresh one-per-second samples of node `node`, from `from`. */
function fresh(node: string, from: number, seconds: number, spec: NpuSpec = ok): Snapshot[] {
  return Array.from({ length: seconds }, (_, i) =>
    npuSnapshot({ node, seq: from + i + 1, t: from + i }, [spec]),
  );
}

function summary(snapshots: Snapshot[]): string[] {
  return runReplay(snapshots).transitions.map(
    (t) => `${t.at.slice(17, 23)} ${t.node} ${t.from}->${t.to} ${t.reason}`,
  );
}

describe('Replay: the file order is the arrival order', () => {
  it('a cached resend keeping its original collected_at keeps its node alive, then is collector-error at +10 s', () => {
    // node-a's tool fails at t=3: its agent resends the t=2 sample (collected_at 2) every second.
    const a = fresh('node-a', 0, 3);
    const resends = Array.from({ length: 15 }, (_, i) =>
      npuSnapshot({ node: 'node-a', seq: 4 + i, t: 2, cached: true }, [ok]),
    );
    const b = fresh('node-b', 0, 20);
    const trace: Snapshot[] = [];
    for (let s = 0; s < 20; s++) {
      if (s < 3) trace.push(a[s] as Snapshot);
      else if (s - 3 < resends.length) trace.push(resends[s - 3] as Snapshot);
      trace.push(b[s] as Snapshot);
    }
    // The first cached resend arrives after node-b's t=2 sample (now = 2): collector-error at
    // 12, never agent-unreachable at 7 (what a clock taken from collected_at alone gives).
    expect(summary(trace)).toEqual([
      '00.000 node-a unknown->healthy null',
      '00.000 node-b unknown->healthy null',
      '12.000 node-a healthy->unknown collector-error',
    ]);
  });

  it('a silent node is agent-unreachable 5 s after it was last seen, on the other nodes\u2019 clock', () => {
    const trace = [...fresh('node-a', 0, 3), ...fresh('node-b', 0, 12)].sort(
      (x, y) => x.collected_at.localeCompare(y.collected_at) || x.node.localeCompare(y.node),
    );
    expect(summary(trace)).toContain('07.000 node-a healthy->unknown agent-unreachable');
  });

  it('a snapshot the engine drops moves no clock (a duplicate stamped far ahead)', () => {
    const a = fresh('node-a', 0, 3);
    const b = fresh('node-b', 0, 3);
    const duplicate = npuSnapshot({ node: 'node-b', seq: 3, t: 100 }, [ok]);
    const result = runReplay([a[0], b[0], a[1], b[1], a[2], b[2], duplicate] as Snapshot[]);
    expect(result.now).toBe(Date.parse(isoAt(2)));
    expect(result.accepted).toBe(6);
    expect(result.snapshots).toBe(7);
    expect(result.transitions.every((t) => t.to === 'healthy')).toBe(true);
  });

  it('orders transitions by (at, node, npu) whatever the arrival order', () => {
    const down: NpuSpec = { npu: 0, link: 'down', power: 100 };
    const late = fresh('node-z', 0, 2, down);
    const early = fresh('node-a', 0, 2, down);
    const lines = runReplay([...late, ...early]).transitions.map(formatTransition);
    expect(lines.map((l) => (JSON.parse(l) as { node: string }).node)).toEqual(['node-a', 'node-z']);
  });

  it('gives the same output for every interleaving that keeps arrival in collected_at order', () => {
    // Ties (the same collected_at on several nodes) may arrive in any order.
    const spec = fc.record({
      temp: fc.constantFrom(50, 90),
      link: fc.constantFrom<'up' | 'down'>('up', 'up', 'up', 'down'),
      power: fc.constantFrom(100, 2),
    });
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.tuple(fc.integer({ min: 0, max: 7 }), spec), { minLength: 1, maxLength: 20 }), {
          minLength: 2,
          maxLength: 4,
        }),
        fc.infiniteStream(fc.nat()),
        (traces, picks) => {
          const all = traces.flatMap((trace, n) => {
            let t = 0;
            return trace.map(([dt, s], i) => {
              t += dt;
              return npuSnapshot({ node: `node-${n}`, seq: i + 1, t }, [{ npu: 0, ...s }]);
            });
          });
          const byTime = [...all].sort((x, y) => x.collected_at.localeCompare(y.collected_at)); // stable
          // Shuffle within each group of equal collected_at.
          const it = picks[Symbol.iterator]();
          const shuffled: Snapshot[] = [];
          for (let i = 0; i < byTime.length;) {
            let j = i;
            while (j < byTime.length && byTime[j]?.collected_at === byTime[i]?.collected_at) j++;
            // Nodes take turns at random; each node's own snapshots keep their order.
            const byNode = new Map<string, Snapshot[]>();
            for (const x of byTime.slice(i, j)) byNode.set(x.node, [...(byNode.get(x.node) ?? []), x]);
            const queues = [...byNode.values()];
            while (queues.length > 0) {
              const k = (it.next().value as number) % queues.length;
              const queue = queues[k] as Snapshot[];
              shuffled.push(queue.shift() as Snapshot);
              if (queue.length === 0) queues.splice(k, 1);
            }
            i = j;
          }
          const a = runReplay(byTime);
          const b = runReplay(shuffled);
          expect(b.transitions).toEqual(a.transitions);
          expect(JSON.stringify(b.document)).toBe(JSON.stringify(a.document));
        },
      ),
    );
  });

  it('holds no snapshot: pushing keeps only engine state (finish works after any number of pushes)', () => {
    const replay = new Replay();
    for (const s of fresh('node-a', 0, 30)) replay.push(s);
    const result = replay.finish();
    expect(result.snapshots).toBe(30);
    expect(result.document.node_count).toBe(1);
  });
});

describe('replayLines and parseSnapshotLine', () => {
  async function* from(lines: string[]): AsyncGenerator<{ text: string; line: number }> {
    for (let i = 0; i < lines.length; i++) yield { text: lines[i] as string, line: i + 1 };
  }

  it('skips blank lines and fills defaults', async () => {
    const text = fresh('node-a', 0, 2).map((s) => JSON.stringify(s));
    const result = await replayLines(from(['', text[0] as string, '   ', text[1] as string]), 'f');
    expect(result.accepted).toBe(2);
    expect(parseSnapshotLine('  ', 'f', 1)).toBeUndefined();
    expect(parseSnapshotLine(text[0] as string, 'f', 1)?.cached).toBe(false);
  });

  it.each([
    ['{oops', /^f:3: invalid JSON: /],
    ['{"schema":"hdc.health/v1"}', /^f:3: node: /],
    [`{"schema": ${' '.repeat(100_000)}x`, /^f:3: invalid JSON: /],
  ])('names the file and line of a bad line, briefly (%#)', (text, message) => {
    let error: unknown;
    try {
      parseSnapshotLine(text, 'f', 3);
    } catch (e) {
      error = e;
    }
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message.length).toBeLessThan(200);
  });
});

describe('Replay with sub-millisecond collected_at', () => {
  it('orders transitions by time, not by text (.000800Z after .000Z)', () => {
    const down: NpuSpec = { npu: 0, link: 'down', power: 100 };
    const early = npuSnapshot({ node: 'node-z', seq: 1, t: 0 }, [down]);
    const late = {
      ...npuSnapshot({ node: 'node-a', seq: 1, t: 0 }, [down]),
      collected_at: '2026-11-29T08:00:00.000800Z',
    };
    const ats = runReplay([late, early]).transitions.map((t) => `${t.node}@${t.at}`);
    expect(ats).toEqual(['node-z@2026-11-29T08:00:00.000Z', 'node-a@2026-11-29T08:00:00.000800Z']);
  });
});

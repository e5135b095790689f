import { describe, expect, it } from '@jest/globals';
import type { SnapshotInput } from '../../contracts/index.js';
import { gpuSnapshot } from '../../contracts/testing.js';
import { SnapshotQueue } from './queue.js';

const at = '2026-01-01T00:00:01.000Z';

function snap(seq: number, node = 'gpu-node-1', xids: number[] = []): SnapshotInput {
  return gpuSnapshot({ seq, node, xids, collectedAt: at });
}

function xidsOf(s: SnapshotInput | undefined): number[] {
  return s?.payload.family === 'nvidia' ? (s.payload.gpus[0]?.xid_events ?? []).map((e) => e.xid) : [];
}

describe('SnapshotQueue', () => {
  it('keeps at most max, dropping the oldest first', () => {
    const queue = new SnapshotQueue(2);
    expect(queue.push(snap(1))).toEqual([]);
    expect(queue.push(snap(2))).toEqual([]);
    const dropped = queue.push(snap(3));
    expect(dropped.map((d) => d.snapshot.seq)).toEqual([1]);
    expect(queue.drain().map((q) => q.snapshot.seq)).toEqual([2, 3]);
  });

  it("carries a dropped snapshot's XIDs into the next one of its node, skipping other nodes", () => {
    const queue = new SnapshotQueue(2);
    queue.push(snap(1, 'a', [79]));
    queue.push(snap(1, 'b'));
    const [dropped] = queue.push(snap(2, 'a'));
    expect(dropped).toMatchObject({ carried: true, lost: 0 });
    const [b, a] = queue.drain();
    expect(xidsOf(b?.snapshot)).toEqual([]);
    expect(xidsOf(a?.snapshot)).toEqual([79]);
    expect(JSON.parse(a?.json ?? '')).toEqual(a?.snapshot); // the JSON follows the carry
  });

  it('counts XIDs lost when no later snapshot of the node is queued', () => {
    const queue = new SnapshotQueue(1);
    queue.push(snap(1, 'a', [79, 48]));
    expect(queue.push(snap(1, 'b'))).toEqual([expect.objectContaining({ carried: false, lost: 2 })]);
  });

  it('takes from the front by count and by bytes, at least one', () => {
    const queue = new SnapshotQueue(10);
    for (const seq of [1, 2, 3, 4]) queue.push(snap(seq));
    const size = Buffer.byteLength(JSON.stringify(snap(1)));
    expect(queue.take(3, 2 * size).map((q) => q.snapshot.seq)).toEqual([1, 2]);
    expect(queue.take(1, 10 * size).map((q) => q.snapshot.seq)).toEqual([3]);
    expect(queue.take(5, 1).map((q) => q.snapshot.seq)).toEqual([4]);
    expect(queue.take(5, 1)).toEqual([]);
  });

  it('puts a batch back at the front in order, trimming the oldest with carry', () => {
    const queue = new SnapshotQueue(3);
    queue.push(snap(1, 'a', [31]));
    queue.push(snap(2, 'a'));
    const batch = queue.take(2, Infinity);
    queue.push(snap(3, 'a'));
    queue.push(snap(4, 'a'));
    const dropped = queue.requeue(batch);
    expect(dropped.map((d) => d.snapshot.seq)).toEqual([1]);
    const left = queue.drain();
    expect(left.map((q) => q.snapshot.seq)).toEqual([2, 3, 4]);
    expect(xidsOf(left[0]?.snapshot)).toEqual([31]);
  });

  it('refuses a bound that is not a positive integer', () => {
    expect(() => new SnapshotQueue(0)).toThrow('push maxQueue: expected a positive integer, got 0');
  });
});

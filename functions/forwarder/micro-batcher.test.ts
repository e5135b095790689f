import { describe, expect, it } from '@jest/globals';
import type { Snapshot } from '../../contracts/index.js';
import { npuSnapshot } from '../../core/engine/testing.js';
import { FakeClock } from '../../platform/index.js';
import type { Batch } from './batch.js';
import { MicroBatcher, type MicroBatcherDeps } from './micro-batcher.js';

function snaps(count: number): Snapshot[] {
  return Array.from({ length: count }, (_, i) => npuSnapshot({ node: `n${i}`, seq: 1, t: 1 }, [{ npu: 0 }]));
}

const call = (count: number, bytes = 0) => ({
  snapshots: snaps(count),
  bytes,
  json: undefined,
  resolve: () => undefined,
  reject: () => undefined,
});

function setup(settings: Partial<MicroBatcherDeps['settings']> = {}, idle = false) {
  const clock = new FakeClock();
  const opened: Batch[] = [];
  const flushed: { id: number; count: number; at: number }[] = [];
  const state = { idle };
  const batcher = new MicroBatcher({
    clock,
    settings: {
      batchWindowMs: 20,
      maxBatch: 10,
      maxBatchBytes: 1000,
      flushWhenIdle: true,
      leaderIntervalMs: 0,
      ...settings,
    },
    leaderIdle: () => state.idle,
    opened: (batch) => opened.push(batch),
    flushed: (batch) => flushed.push({ id: batch.id, count: batch.count, at: batch.flushedAt }),
  });
  return { clock, batcher, opened, flushed, state };
}

describe('MicroBatcher', () => {
  it('gathers calls into one batch and sends it at its window while the leader is busy', async () => {
    const { clock, batcher, opened, flushed } = setup();
    batcher.add(call(2));
    await clock.advance(5);
    batcher.add(call(3));
    expect(opened).toHaveLength(1);
    await clock.advance(14);
    expect(flushed).toEqual([]);
    await clock.advance(1);
    expect(flushed).toEqual([{ id: 1, count: 5, at: 20 }]);
    expect(batcher.open).toBeUndefined();
    expect(clock.pending).toBe(0);
  });

  it('sends a batch at once when full, and one a call does not fit in before the call', () => {
    const { batcher, flushed } = setup({ maxBatch: 10, maxBatchBytes: 100 });
    batcher.add(call(6));
    batcher.add(call(6)); // does not fit: the first batch goes, the call opens the next
    expect(flushed.map((f) => f.count)).toEqual([6]);
    batcher.add(call(4)); // fills it: sent at once
    expect(flushed.map((f) => f.count)).toEqual([6, 10]);
    batcher.add(call(1, 60));
    batcher.add(call(1, 60)); // over the bytes
    expect(flushed.map((f) => f.count)).toEqual([6, 10, 1]);
  });

  it('sends at the next timer turn while the leader is idle, gathering that turn’s calls', async () => {
    const { clock, batcher, flushed } = setup({}, true);
    batcher.add(call(1));
    batcher.add(call(1));
    expect(flushed).toEqual([]);
    await clock.advance(0);
    expect(flushed).toEqual([{ id: 1, count: 2, at: 0 }]);
  });

  it('keeps leaderIntervalMs between idle flushes, the window still bounding the wait', async () => {
    const { clock, batcher, flushed } = setup({ leaderIntervalMs: 5, batchWindowMs: 3 }, true);
    batcher.add(call(1));
    await clock.advance(0);
    batcher.add(call(1));
    await clock.advance(2);
    expect(flushed.map((f) => f.at)).toEqual([0]);
    await clock.advance(1); // the window (3) comes before the interval (5)
    expect(flushed.map((f) => f.at)).toEqual([0, 3]);
  });

  it('sends to a leader that went idle now once the interval has passed, else when it has', async () => {
    const { clock, batcher, flushed } = setup({ leaderIntervalMs: 5, batchWindowMs: 50 });
    batcher.leaderWentIdle(); // nothing open: nothing to send
    batcher.add(call(1));
    batcher.leaderWentIdle();
    expect(flushed.map((f) => f.at)).toEqual([0]);
    await clock.advance(2);
    batcher.add(call(1));
    batcher.leaderWentIdle();
    expect(flushed.map((f) => f.at)).toEqual([0]);
    await clock.advance(3);
    expect(flushed.map((f) => f.at)).toEqual([0, 5]);
  });

  it('never flushes early for an idle leader with flushWhenIdle off', async () => {
    const { clock, batcher, flushed } = setup({ flushWhenIdle: false }, true);
    batcher.add(call(1));
    batcher.leaderWentIdle();
    await clock.advance(19);
    expect(flushed).toEqual([]);
    await clock.advance(1);
    expect(flushed).toHaveLength(1);
  });

  it('flushes a batch by name only while it is the open one', () => {
    const { batcher, opened, flushed } = setup();
    batcher.add(call(1));
    const [first] = opened as [Batch];
    batcher.flushIfOpen(first);
    batcher.add(call(1));
    batcher.flushIfOpen(first);
    expect(flushed.map((f) => f.id)).toEqual([1]);
    expect(batcher.open?.id).toBe(2);
  });
});

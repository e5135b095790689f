import { describe, expect, it } from '@jest/globals';
import { newBatch, type Batch } from './batch.js';
import { ReplicaQueue } from './replica-queue.js';

const replica = { identity: 'r1', url: 'http://127.0.0.1:1' };

/** A sealed batch of `count` snapshots and `bytes` of JSON, flushed at `at`. */
function batch(id: number, count: number, bytes = count, at = 0): Batch {
  const b = newBatch(id);
  b.count = count;
  b.json = Buffer.alloc(bytes, 'x');
  b.flushed = true;
  b.flushedAt = at;
  return b;
}

describe('ReplicaQueue', () => {
  it('makes room by taking out its oldest batch only once it holds the most allowed', () => {
    const queue = new ReplicaQueue(replica);
    queue.push(batch(1, 1));
    expect(queue.dropOldestIfFull(2)).toBeUndefined();
    queue.push(batch(2, 1));
    expect(queue.dropOldestIfFull(2)?.id).toBe(1);
    expect(queue.batches.map((b) => b.id)).toEqual([2]);
  });

  it('takes the oldest batches that fit one request, by count and by bytes', () => {
    const queue = new ReplicaQueue(replica, [batch(1, 3), batch(2, 3), batch(3, 3)]);
    expect(queue.takeRequest({ maxBatch: 7, maxBatchBytes: 100 }).map((b) => b.id)).toEqual([1, 2]);
    expect(queue.batches.map((b) => b.id)).toEqual([3]);
    const byBytes = new ReplicaQueue(replica, [batch(1, 1, 60), batch(2, 1, 60)]);
    expect(byBytes.takeRequest({ maxBatch: 10, maxBatchBytes: 100 }).map((b) => b.id)).toEqual([1]);
  });

  it('always takes at least one batch, even one at the limits by itself', () => {
    const queue = new ReplicaQueue(replica, [batch(1, 10, 500)]);
    expect(queue.takeRequest({ maxBatch: 10, maxBatchBytes: 100 }).map((b) => b.id)).toEqual([1]);
    expect(queue.takeRequest({ maxBatch: 10, maxBatchBytes: 100 })).toEqual([]);
  });

  it('is idle with nothing queued and nothing in flight', () => {
    const queue = new ReplicaQueue(replica);
    expect(queue.idle).toBe(true);
    queue.inFlight = true;
    expect(queue.idle).toBe(false);
    queue.inFlight = false;
    queue.push(batch(1, 1));
    expect(queue.idle).toBe(false);
  });

  it("waits out a follower's window from its oldest batch, but not once it fills a request", () => {
    const limits = { maxBatch: 10, maxBatchBytes: 100 };
    const queue = new ReplicaQueue(replica, [batch(1, 2, 2, 100), batch(2, 2, 2, 110)]);
    expect(queue.followerWindowLeft(105, 20, limits)).toBe(15);
    expect(queue.followerWindowLeft(130, 20, limits)).toBe(0);
    queue.push(batch(3, 6, 6, 115));
    expect(queue.followerWindowLeft(105, 20, limits)).toBe(0);
    expect(new ReplicaQueue(replica, [batch(1, 1, 100, 100)]).followerWindowLeft(105, 20, limits)).toBe(0);
  });

  it('closes: its window cancelled, its requests aborted, what was queued handed back', () => {
    const queue = new ReplicaQueue(replica, [batch(1, 1), batch(2, 1)]);
    let windowCancelled = false;
    queue.window = () => (windowCancelled = true);
    const queued = queue.close();
    expect(queued.map((b) => b.id)).toEqual([1, 2]);
    expect(queue.batches).toEqual([]);
    expect([queue.closed, windowCancelled, queue.window, queue.abort.signal.aborted]).toEqual([
      true,
      true,
      undefined,
      true,
    ]);
  });
});

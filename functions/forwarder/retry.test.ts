import { describe, expect, it } from '@jest/globals';
import type { ObservationsResponse } from '../../contracts/index.js';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import { newBatch, type Batch } from './batch.js';
import { LeaderUnavailableError, ReplicaRequestError } from './errors.js';
import type { ForwardResult } from './forwarder.js';
import { createForwarderMetrics } from './metrics.js';
import { ReplicaQueue } from './replica-queue.js';
import { LeaderRetry } from './retry.js';

const log = createLogger({ level: 'silent' });

const leaderAnswer = (identity: string): ObservationsResponse => ({
  leader: true,
  identity,
  term: 4,
  results: [{ node: 'n1', accepted: true, entry: null }],
});
const followerAnswer = (identity: string, leader: string): ObservationsResponse => ({
  leader: false,
  identity,
  leader_identity: leader,
  results: [{ node: 'n1', accepted: true }],
});

/** A LeaderRetry over fake parts: `answers` says what each replica answers a retry. */
function setup(answers: Record<string, () => ObservationsResponse | ReplicaRequestError>) {
  const clock = new FakeClock();
  const metrics = createForwarderMetrics(new Registry(), () => ({ ready: 0, leader: 0 }));
  const queues = new Map(
    Object.keys(answers).map((id) => [id, new ReplicaQueue({ identity: id, url: 'http://x' })]),
  );
  const state = { leader: undefined as string | undefined };
  const sent: string[] = [];
  const heard: string[] = [];
  const flushedIfOpen: number[] = [];
  let reconciled = 0;
  const retry = new LeaderRetry({
    clock,
    log,
    metrics,
    settings: { leaderTimeoutMs: 1000, retryIntervalMs: 100, retryAfterSeconds: 3 },
    leader: () => state.leader,
    queueOf: (identity) => queues.get(identity),
    send: (queue) => {
      sent.push(queue.replica.identity);
      const answer = answers[queue.replica.identity];
      return Promise.resolve(answer ? answer() : new ReplicaRequestError('connection', 'gone'));
    },
    heard: (queue, answer) => {
      heard.push(`${queue.replica.identity}:${answer.leader ? 'leader' : 'follower'}`);
      if (answer.leader) state.leader = answer.identity;
    },
    reconcile: () => void reconciled++,
    flushIfOpen: (batch) => void flushedIfOpen.push(batch.id),
  });
  return { clock, retry, state, sent, heard, flushedIfOpen, reconciled: () => reconciled, queues };
}

/** A flushed batch with one caller, tracked by `retry`, whose request to each of `replicas` is pending. */
function track(retry: LeaderRetry, replicas: string[]) {
  const batch: Batch = newBatch(1);
  const answers: (ForwardResult | Error)[] = [];
  batch.count = 1;
  batch.callers.push({
    offset: 0,
    count: 1,
    resolve: (r) => answers.push(r),
    reject: (e) => answers.push(e),
  });
  retry.track(batch);
  batch.flushed = true;
  for (const id of replicas) batch.status.set(id, 'pending');
  return { batch, answers };
}

describe('LeaderRetry', () => {
  it("waits while the leader's request is pending, and settles with a leader's answer", async () => {
    const { clock, retry, state, sent } = setup({ a: () => leaderAnswer('a') });
    state.leader = 'a';
    const { batch, answers } = track(retry, ['a']);
    retry.evaluate(batch);
    expect(sent).toEqual([]);
    const drained = retry.allSettled();
    retry.settle(batch, 'a', 4, [{ node: 'n1', accepted: true, entry: null }]);
    await drained;
    expect(answers).toEqual([
      { leader: 'a', term: 4, results: [{ node: 'n1', accepted: true, entry: null }] },
    ]);
    expect([retry.size, clock.pending, batch.settled]).toEqual([0, 0, true]);
  });

  it('sends the batch again, alone, to the leader once its own request is done', async () => {
    const { clock, retry, state, sent, heard } = setup({
      a: () => followerAnswer('a', 'b'),
      b: () => leaderAnswer('b'),
    });
    state.leader = 'a';
    const { batch, answers } = track(retry, ['a', 'b']);
    batch.status.set('a', 'done'); // the leader answered as a follower
    retry.evaluate(batch);
    expect(sent).toEqual(['a']);
    await clock.advance(0);
    expect(heard).toEqual(['a:follower']);
    state.leader = 'b';
    batch.status.set('b', 'done');
    await clock.advance(99);
    expect(sent).toEqual(['a']); // at most every retryIntervalMs
    await clock.advance(1);
    expect(sent).toEqual(['a', 'b']);
    expect(answers).toMatchObject([{ leader: 'b', term: 4 }]);
  });

  it('looks again after retryIntervalMs when no leader is known, reconciling first', async () => {
    const { clock, retry, reconciled, sent } = setup({ a: () => leaderAnswer('a') });
    const { batch } = track(retry, []);
    retry.evaluate(batch);
    expect(reconciled()).toBe(0);
    await clock.advance(100);
    expect(reconciled()).toBe(1);
    expect(sent).toEqual([]);
  });

  it('looks again at once on reevaluate, cancelling the pause', async () => {
    const { clock, retry, state, sent } = setup({ a: () => leaderAnswer('a') });
    const { batch, answers } = track(retry, []);
    retry.evaluate(batch);
    state.leader = 'a';
    retry.reevaluate();
    expect(sent).toEqual(['a']);
    await clock.advance(0);
    expect(answers).toMatchObject([{ leader: 'a' }]);
  });

  it('rejects every caller with LeaderUnavailableError at the bound, flushing the batch if still open', async () => {
    const { clock, retry, flushedIfOpen } = setup({});
    const { batch, answers } = track(retry, ['a']);
    const drained = retry.allSettled();
    await clock.advance(1000);
    await drained;
    expect(flushedIfOpen).toEqual([batch.id]);
    const [error] = answers as [LeaderUnavailableError];
    expect(error).toBeInstanceOf(LeaderUnavailableError);
    expect(error.message).toBe('no controller leader accepted the snapshots within 1000 ms (leader unknown)');
    expect(error.retryAfterSeconds).toBe(3);
    expect(clock.pending).toBe(0);
  });
});

import { afterEach, describe, expect, it } from '@jest/globals';
import type { Snapshot } from '../../contracts/index.js';
import { npuSnapshot } from '../../core/engine/testing.js';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import { LeaderUnavailableError } from './errors.js';
import { createForwarder, type ForwardResult, type RunningForwarder } from './forwarder.js';
import { FORWARDER_DEFAULTS, type ForwarderOptions } from './options.js';
import type { LeaderSource } from './replicas.js';
import { FakeLeaderSource, FakeReplica, FakeReplicaSource, fakeReplicas } from './testing.js';
import { createHttpTransport, type ReplicaTransport } from './transport.js';

const log = createLogger({ level: 'silent' });

function snap(node: string, seq = 1): Snapshot {
  return npuSnapshot({ node, seq, t: seq }, [{ npu: 0 }]);
}

/** A post the forwarder made, as the spy saw it. */
interface Post {
  replica: string;
  nodes: string[];
  /** The request body as sent. */
  body: string;
  token: string;
  /** Settles when the post does (never rejects). */
  done: Promise<unknown>;
}

/** The real transport, recording each post as the forwarder makes it. */
function spyTransport(): { transport: ReplicaTransport; posts: Post[] } {
  const real = createHttpTransport();
  const posts: Post[] = [];
  const transport: ReplicaTransport = {
    post(replica, request) {
      const text = Buffer.from(request.body).toString('utf8');
      const body = JSON.parse(text) as { observations: { snapshot: Snapshot }[] };
      const answer = real.post(replica, request);
      posts.push({
        replica: replica.identity,
        nodes: body.observations.map((o) => o.snapshot.node),
        body: text,
        token: request.token,
        done: answer.catch(() => undefined),
      });
      return answer;
    },
    forget: (replica) => real.forget(replica),
    close: () => real.close(),
  };
  return { transport, posts };
}

interface Setup {
  forwarder: RunningForwarder;
  replicas: FakeReplica[];
  source: FakeReplicaSource;
  clock: FakeClock;
  registry: Registry;
  posts: Post[];
  postsTo(identity: string): Post[];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  identities: string[],
  options: ForwarderOptions = {},
  extra: { lease?: LeaderSource; token?: () => string } = {},
): Promise<Setup> {
  const replicas = await fakeReplicas(...identities);
  const source = new FakeReplicaSource(replicas.map((r) => r.replica));
  const clock = new FakeClock();
  const registry = new Registry();
  const { transport, posts } = spyTransport();
  const forwarder = createForwarder(
    {
      replicas: source,
      lease: extra.lease,
      token: extra.token ?? (() => 'token-1'),
      clock,
      log,
      registry,
      transport,
    },
    // Batches go to an idle leader at once unless a test is about the interval between them.
    { leaderIntervalMs: 0, ...options },
  );
  cleanups.push(async () => {
    for (const replica of replicas) replica.release();
    await Promise.all(replicas.map((replica) => replica.close()));
    await transport.close();
  });
  return {
    forwarder,
    replicas,
    source,
    clock,
    registry,
    posts,
    postsTo: (identity) => posts.filter((post) => post.replica === identity),
  };
}

/** Whether `promise` has settled (after letting pending continuations run). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

async function metric(registry: Registry, name: string, labels: string): Promise<number> {
  const text = await registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? Number.NaN : Number(line.split(' ').at(-1));
}

describe('createForwarder: micro-batching', () => {
  it('sends the snapshots of one window together, at the window, and maps results back in order', async () => {
    const { forwarder, clock, posts, postsTo } = await setup(['a', 'b'], {
      batchWindowMs: 20,
      flushWhenIdle: false,
    });
    const one = forwarder.forward([snap('n1')]);
    const two = forwarder.forward([snap('n2'), snap('n3')]);
    await clock.advance(19);
    expect(posts).toHaveLength(0);
    await clock.advance(1);
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1', 'n2', 'n3']]);
    expect(postsTo('b').map((p) => p.nodes)).toEqual([['n1', 'n2', 'n3']]);
    const [first, second] = (await Promise.all([one, two])) as [ForwardResult, ForwardResult];
    expect(first).toEqual({ leader: 'a', term: 1, results: [{ node: 'n1', accepted: true, entry: null }] });
    expect(second.results.map((r) => r.node)).toEqual(['n2', 'n3']);
  });

  it('sends a batch at once when it reaches maxBatch, and starts a new one when a call does not fit', async () => {
    const { forwarder, clock, postsTo } = await setup(['a'], {
      batchWindowMs: 20,
      maxBatch: 3,
      flushWhenIdle: false,
    });
    const one = forwarder.forward([snap('n1'), snap('n2')]);
    const two = forwarder.forward([snap('n3'), snap('n4')]); // does not fit: n1, n2 go now
    expect(postsTo('a').length).toBe(0); // posts start after the token is read (a microtask)
    await clock.advance(0);
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1', 'n2']]);
    const three = forwarder.forward([snap('n5')]); // fills n3, n4, n5: sent without waiting for the window
    await Promise.all([one, two, three]);
    expect(postsTo('a').map((p) => p.nodes)).toEqual([
      ['n1', 'n2'],
      ['n3', 'n4', 'n5'],
    ]);
    await expect(forwarder.forward([snap('x'), snap('y'), snap('z'), snap('w')])).rejects.toThrow(
      'forward: expected 1 to 3 snapshots, got 4',
    );
  });

  it('cuts batches by bytes too, under the controllers’ body limit', async () => {
    const { forwarder, clock, postsTo } = await setup(['a'], {
      batchWindowMs: 20,
      maxBatchBytes: 1000,
      flushWhenIdle: false,
    });
    const one = forwarder.forward([snap('n1')], { bytes: 600 });
    const two = forwarder.forward([snap('n2')], { bytes: 600 }); // does not fit with n1: n1 goes now
    await clock.advance(0);
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1']]);
    await clock.advance(20);
    await Promise.all([one, two]);
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1'], ['n2']]);
  });

  it('sends observations a caller serialised as they are, and serialises the others', async () => {
    const { forwarder, clock, postsTo } = await setup(['a', 'b'], {
      batchWindowMs: 20,
      flushWhenIdle: false,
    });
    // The caller's text is trusted verbatim: a marker field the snapshot does not have proves it.
    const given = `{"snapshot":${JSON.stringify({ ...snap('n1'), marker: 'as-given' })}}`;
    const one = forwarder.forward([snap('n1')], { json: given });
    const two = forwarder.forward([snap('n2'), snap('n3')]);
    await clock.advance(20);
    await Promise.all([one, two]);
    const expected = `{"observations":[${given},${JSON.stringify([snap('n2'), snap('n3')].map((snapshot) => ({ snapshot }))).slice(1, -1)}]}`;
    expect(postsTo('a').map((p) => p.body)).toEqual([expected]);
    expect(postsTo('b').map((p) => p.body)).toEqual([expected]);
  });

  it('sends at the next timer turn, not after the window, while the leader is idle', async () => {
    const { forwarder, clock, postsTo } = await setup(['a'], { batchWindowMs: 20 });
    const result = forwarder.forward([snap('n1')]);
    await clock.advance(0);
    expect(postsTo('a')).toHaveLength(1);
    await expect(result).resolves.toMatchObject({ leader: 'a' });
  });

  it('sends to an idle leader no sooner than leaderIntervalMs after the batch before', async () => {
    const { forwarder, clock, postsTo } = await setup(['a'], { batchWindowMs: 20, leaderIntervalMs: 5 });
    const first = forwarder.forward([snap('n1')]);
    await clock.advance(0); // the first batch goes at once
    await expect(first).resolves.toMatchObject({ results: [{ node: 'n1' }] });
    await clock.advance(1);
    const later = [forwarder.forward([snap('n2')]), forwarder.forward([snap('n3')])];
    await clock.advance(3);
    expect(postsTo('a')).toHaveLength(1);
    await clock.advance(1); // 5 ms after the first
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1'], ['n2', 'n3']]);
    await Promise.all(later);
    await clock.advance(10);
    const alone = forwarder.forward([snap('n4')]);
    await clock.advance(0); // the interval has passed: the next timer turn
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1'], ['n2', 'n3'], ['n4']]);
    await alone;
  });

  it('sends when the leader answers if the interval has passed, else once it has', async () => {
    const { forwarder, clock, replicas, postsTo } = await setup(['a'], { leaderIntervalMs: 5 });
    const [leader] = replicas as [FakeReplica];
    leader.hanging = true;
    const first = forwarder.forward([snap('n1')]);
    await clock.advance(0);
    await leader.waitForRequests(1);
    const second = forwarder.forward([snap('n2')]); // waits: the leader has a request in flight
    await clock.advance(3);
    leader.hanging = false;
    leader.release();
    await first;
    await new Promise((resolve) => setImmediate(resolve));
    expect(postsTo('a')).toHaveLength(1); // answered 3 ms after the first batch: 2 ms to go
    await clock.advance(2);
    await leader.waitForRequests(2);
    await expect(second).resolves.toMatchObject({ results: [{ node: 'n2' }] });

    leader.hanging = true;
    const third = forwarder.forward([snap('n3')]);
    await clock.advance(5);
    await leader.waitForRequests(3);
    const fourth = forwarder.forward([snap('n4')]);
    await clock.advance(6);
    leader.release();
    await third;
    await leader.waitForRequests(4); // the interval passed while it waited: sent on the answer
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1'], ['n2'], ['n3'], ['n4']]);
    await fourth;
  });

  it('sends at the window when it comes before the interval', async () => {
    const { forwarder, clock, postsTo } = await setup(['a'], { batchWindowMs: 10, leaderIntervalMs: 50 });
    await Promise.all([forwarder.forward([snap('n1')]), clock.advance(0)]);
    const second = forwarder.forward([snap('n2')]);
    await clock.advance(9);
    expect(postsTo('a')).toHaveLength(1);
    await clock.advance(1);
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1'], ['n2']]);
    await second;
  });
});

describe('createForwarder: fan-out and the leader-only wait', () => {
  it('sends every batch to every replica, with the token current at each request', async () => {
    let n = 0;
    const { forwarder, clock, replicas } = await setup(['a', 'b', 'c'], {}, { token: () => `token-${++n}` });
    const first = forwarder.forward([snap('n1')]);
    await clock.advance(0);
    await first;
    const second = forwarder.forward([snap('n2')]);
    await clock.advance(0);
    await second;
    await clock.advance(FORWARDER_DEFAULTS.followerWindowMs); // the followers' window
    await Promise.all(replicas.map((replica) => replica.waitForRequests(2)));
    for (const replica of replicas) expect(replica.received.flatMap((r) => r.nodes)).toEqual(['n1', 'n2']);
    const tokens = replicas.flatMap((replica) => replica.received.map((r) => r.authorization));
    expect(new Set(tokens).size).toBe(6);
    expect(tokens.every((t) => /^Bearer token-\d$/.test(t ?? ''))).toBe(true);
  });

  it('answers with the leader while a follower hangs, and keeps the follower fed in order', async () => {
    const { forwarder, clock, replicas, registry } = await setup(['a', 'b']);
    const [, follower] = replicas as [FakeReplica, FakeReplica];
    follower.hanging = true;
    for (const node of ['n1', 'n2', 'n3']) {
      const result = forwarder.forward([snap(node)]);
      await clock.advance(0);
      await expect(result).resolves.toMatchObject({ leader: 'a', results: [{ node }] });
    }
    expect(follower.received.map((r) => r.nodes)).toEqual([['n1']]);
    expect(await metric(registry, 'npu_fault_function_forward_queue_depth', 'replica="b"')).toBe(2);
    follower.release();
    await clock.advance(FORWARDER_DEFAULTS.followerWindowMs);
    await follower.waitForRequests(2);
    expect(follower.received.map((r) => r.nodes)).toEqual([['n1'], ['n2', 'n3']]);
  });

  it('settles with a follower that answers as leader (leadership moved) without waiting for the old leader', async () => {
    const { forwarder, clock, replicas } = await setup(['a', 'b']);
    const [old, next] = replicas as [FakeReplica, FakeReplica];
    old.hanging = true;
    old.leading = false;
    next.leading = true;
    next.term = 2;
    const result = forwarder.forward([snap('n1')]);
    await clock.advance(0);
    await expect(result).resolves.toEqual({
      leader: 'b',
      term: 2,
      results: [{ node: 'n1', accepted: true, entry: null }],
    });
    expect(forwarder.leader()).toBe('b');
  });

  it('sends again to the new leader when the leader answers as a follower after the switch', async () => {
    const { forwarder, clock, replicas, postsTo } = await setup(['a', 'b']);
    const [old, next] = replicas as [FakeReplica, FakeReplica];
    old.hanging = true;
    const result = forwarder.forward([snap('n1')]);
    await clock.advance(0);
    await Promise.all(postsTo('b').map((p) => p.done)); // b answered as a follower
    await old.waitForRequests(1);
    // Leadership moves while a's answer is still pending: a now answers as a follower naming b.
    old.leading = false;
    old.leaderIdentity = 'b';
    next.leading = true;
    next.term = 2;
    old.release();
    const answer = await result;
    expect(answer).toEqual({
      leader: 'b',
      term: 2,
      results: [{ node: 'n1', accepted: false, dropped: 'duplicate', entry: null }],
    });
    expect(postsTo('b').map((p) => p.nodes)).toEqual([['n1'], ['n1']]);
  });

  it('retries the replica the Lease names once it changes, after the leader died', async () => {
    const lease = new FakeLeaderSource('a');
    const { forwarder, clock, replicas, posts, registry } = await setup(['a', 'b'], {}, { lease });
    const [dead, next] = replicas as [FakeReplica, FakeReplica];
    await dead.close(); // connection refused from now on
    const result = forwarder.forward([snap('n1')]);
    await clock.advance(0);
    await Promise.all(posts.map((p) => p.done)); // a refused, b answered as follower
    await clock.advance(0);
    await Promise.all(posts.map((p) => p.done)); // the retry to a refused too
    expect(await settled(result)).toBe(false);
    expect(
      await metric(registry, 'npu_fault_function_forward_errors_total', 'reason="connection"'),
    ).toBeGreaterThanOrEqual(2);
    next.leading = true;
    next.term = 2;
    lease.set('b');
    await expect(result).resolves.toMatchObject({ leader: 'b', term: 2, results: [{ node: 'n1' }] });
  });
});

describe('createForwarder: the bound', () => {
  it('rejects with LeaderUnavailableError (503, Retry-After 1) when no leader accepted within leaderTimeoutMs', async () => {
    const { forwarder, clock, replicas, posts, registry } = await setup(['a', 'b'], {
      leaderTimeoutMs: 2000,
    });
    for (const replica of replicas) {
      replica.leading = false;
      replica.leaderIdentity = null;
    }
    const result = forwarder.forward([snap('n1')]);
    const outcome = result.then(
      () => undefined,
      (e: unknown) => e,
    );
    await clock.advance(0);
    await Promise.all(posts.map((p) => p.done));
    await clock.advance(1998);
    expect(await settled(result)).toBe(false);
    await clock.advance(2);
    const error = await outcome;
    expect(error).toBeInstanceOf(LeaderUnavailableError);
    expect(error).toMatchObject({ status: 503, retryAfterSeconds: 1, code: 'leader_unavailable' });
    expect((error as Error).message).toBe(
      'no controller leader accepted the snapshots within 2000 ms (leader unknown)',
    );
    expect(
      await metric(registry, 'npu_fault_function_forward_errors_total', 'reason="leader-unavailable"'),
    ).toBe(1);
  });

  it('rejects at the bound when the leader hangs, and counts the timeout', async () => {
    const { forwarder, clock, replicas, registry, postsTo } = await setup(['a', 'b'], {
      leaderTimeoutMs: 500,
    });
    (replicas[0] as FakeReplica).hanging = true;
    const result = forwarder.forward([snap('n1')]);
    const outcome = result.catch((error: unknown) => error);
    await clock.advance(0);
    await (replicas[0] as FakeReplica).waitForRequests(1);
    await Promise.all(postsTo('b').map((p) => p.done)); // b names a as the leader
    await clock.advance(500);
    await expect(outcome.then((e) => Promise.reject(e as Error))).rejects.toThrow(
      'no controller leader accepted the snapshots within 500 ms (leader "a")',
    );
    expect(await metric(registry, 'npu_fault_function_forward_errors_total', 'reason="timeout"')).toBe(1);
  });
});

describe("createForwarder: the followers' window", () => {
  /** Forwards one snapshot per node, each settled by the leader before the next. */
  async function forwardEach(forwarder: RunningForwarder, clock: FakeClock, nodes: string[]): Promise<void> {
    for (const node of nodes) {
      const result = forwarder.forward([snap(node)]);
      await clock.advance(0);
      await expect(result).resolves.toMatchObject({ leader: 'a', results: [{ node }] });
    }
  }

  it('sends a follower what queued within the window as one request, the leader each batch at once', async () => {
    const { forwarder, clock, postsTo } = await setup(['a', 'b'], { followerWindowMs: 30 });
    await forwardEach(forwarder, clock, ['n1']); // no leader known yet: both at once
    await Promise.all(postsTo('b').map((p) => p.done));
    await forwardEach(forwarder, clock, ['n2', 'n3']);
    await clock.advance(10);
    await forwardEach(forwarder, clock, ['n4']);
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1'], ['n2'], ['n3'], ['n4']]);
    expect(postsTo('b').map((p) => p.nodes)).toEqual([['n1']]);
    await clock.advance(19); // 29 ms after n2's batch
    expect(postsTo('b')).toHaveLength(1);
    await clock.advance(1);
    expect(postsTo('b').map((p) => p.nodes)).toEqual([['n1'], ['n2', 'n3', 'n4']]);
  });

  it('sends a follower its queue before the window once it fills a request', async () => {
    const { forwarder, clock, postsTo } = await setup(['a', 'b'], { followerWindowMs: 1000, maxBatch: 3 });
    await forwardEach(forwarder, clock, ['n1']);
    await Promise.all(postsTo('b').map((p) => p.done));
    await forwardEach(forwarder, clock, ['n2', 'n3']);
    expect(postsTo('b')).toHaveLength(1);
    await forwardEach(forwarder, clock, ['n4']);
    expect(postsTo('b').map((p) => p.nodes)).toEqual([['n1'], ['n2', 'n3', 'n4']]);
  });

  it('sends a follower that becomes leader its queue at once, and settles what waits on it', async () => {
    const lease = new FakeLeaderSource('a');
    const { forwarder, clock, replicas, postsTo } = await setup(
      ['a', 'b'],
      { followerWindowMs: 1000 },
      { lease },
    );
    const [old, next] = replicas as [FakeReplica, FakeReplica];
    await forwardEach(forwarder, clock, ['n0']); // b answers as a follower: its queue waits from now
    await Promise.all(postsTo('b').map((p) => p.done));
    await forwardEach(forwarder, clock, ['n1']);
    expect(postsTo('b')).toHaveLength(1); // n1 waits in its window
    old.hanging = true;
    old.leading = false;
    const waiting = forwarder.forward([snap('n2')]);
    await clock.advance(0);
    expect(await settled(waiting)).toBe(false);
    next.leading = true;
    next.term = 2;
    lease.set('b');
    await expect(waiting).resolves.toMatchObject({ leader: 'b', term: 2, results: [{ node: 'n2' }] });
    expect(postsTo('b').map((p) => p.nodes)).toEqual([['n0'], ['n1', 'n2']]);
  });

  it('sends what waits in a window at once when the forwarder stops, and waits for the answer', async () => {
    const lease = new FakeLeaderSource('a');
    const { forwarder, clock, replicas, postsTo } = await setup(
      ['a', 'b'],
      { followerWindowMs: 1000 },
      { lease },
    );
    const stop = new AbortController();
    const running = forwarder.start(stop.signal);
    await forwardEach(forwarder, clock, ['n0']); // b answers as a follower: its queue waits from now
    await Promise.all(postsTo('b').map((p) => p.done));
    await forwardEach(forwarder, clock, ['n1']);
    expect(postsTo('b')).toHaveLength(1);
    stop.abort();
    await running;
    // Sent and answered before the forwarder closed its connections.
    expect(replicas[1]?.received.map((r) => r.nodes)).toEqual([['n0'], ['n1']]);
  });

  it('stops within one request timeout while a follower hangs, however much it has queued', async () => {
    const lease = new FakeLeaderSource('a');
    const { forwarder, clock, replicas, postsTo } = await setup(
      ['a', 'b'],
      { maxBatch: 1, leaderTimeoutMs: 300 },
      { lease },
    );
    (replicas[1] as FakeReplica).hanging = true;
    const stop = new AbortController();
    const running = forwarder.start(stop.signal);
    await forwardEach(forwarder, clock, ['n1', 'n2', 'n3', 'n4', 'n5']);
    stop.abort();
    await clock.advance(0);
    expect(await settled(running)).toBe(false); // b's request is still open
    await clock.advance(300); // the request timeout (leaderTimeoutMs): the stop's deadline too
    await running;
    expect(postsTo('b').length).toBeLessThan(5);
  });

  it('never holds a replica that has not answered as a follower, whatever a stale Lease says', async () => {
    const stale = new FakeLeaderSource('b'); // a leads; the Lease has not caught up
    const { forwarder, clock, postsTo } = await setup(
      ['a', 'b'],
      { followerWindowMs: 1000 },
      { lease: stale },
    );
    await forwardEach(forwarder, clock, ['n1', 'n2']);
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1'], ['n2']]);
  });

  it('holds no follower while the Lease names no current replica', async () => {
    const gone = new FakeLeaderSource('x');
    const { forwarder, clock, postsTo } = await setup(
      ['a', 'b'],
      { followerWindowMs: 1000, batchWindowMs: 0 }, // no idle leader to flush on: the next turn
      { lease: gone },
    );
    await forwardEach(forwarder, clock, ['n1', 'n2', 'n3']);
    expect(postsTo('b').map((p) => p.nodes)).toEqual([['n1'], ['n2'], ['n3']]);
  });

  it('does not wait with followerWindowMs 0', async () => {
    const lease = new FakeLeaderSource('a');
    const { forwarder, clock, postsTo } = await setup(['a', 'b'], { followerWindowMs: 0 }, { lease });
    await forwardEach(forwarder, clock, ['n1']);
    expect(postsTo('b').map((p) => p.nodes)).toEqual([['n1']]);
  });
});

describe('createForwarder: bounded queues', () => {
  it("drops a slow follower's oldest batch when its queue is full, and counts it", async () => {
    const { forwarder, clock, replicas, registry } = await setup(['a', 'b'], {
      maxQueuedBatches: 2,
      followerWindowMs: 0,
    });
    const [, follower] = replicas as [FakeReplica, FakeReplica];
    follower.hanging = true;
    for (const node of ['n1', 'n2', 'n3', 'n4', 'n5']) {
      const result = forwarder.forward([snap(node)]);
      await clock.advance(0);
      await expect(result).resolves.toMatchObject({ leader: 'a' });
    }
    expect(await metric(registry, 'npu_fault_function_forward_errors_total', 'reason="queue-full"')).toBe(2);
    expect(await metric(registry, 'npu_fault_function_forward_queue_depth', 'replica="b"')).toBe(2);
    follower.release();
    await follower.waitForRequests(2);
    expect(follower.received.map((r) => r.nodes)).toEqual([['n1'], ['n4', 'n5']]);
  });
});

describe('createForwarder: a replica that moves', () => {
  it('hands what was queued for a replica to its new address (the same identity, a new pod IP)', async () => {
    const { forwarder, clock, replicas, source, registry } = await setup(['a', 'b'], { followerWindowMs: 0 });
    const [leader, follower] = replicas as [FakeReplica, FakeReplica];
    follower.hanging = true;
    for (const node of ['n1', 'n2', 'n3']) {
      const result = forwarder.forward([snap(node)]);
      await clock.advance(0);
      await expect(result).resolves.toMatchObject({ leader: 'a' });
    }
    await follower.waitForRequests(1); // n1 in flight to the old address, n2 and n3 queued
    const moved = await new FakeReplica('b').listen();
    moved.leaderIdentity = 'a';
    cleanups.push(() => moved.close());
    source.set([leader.replica, moved.replica]);
    await clock.advance(0);
    await moved.waitForRequests(1);
    expect(moved.received.map((r) => r.nodes)).toEqual([['n2', 'n3']]);
    expect(follower.received.map((r) => r.nodes)).toEqual([['n1']]);
    expect(await metric(registry, 'npu_fault_function_forward_queue_depth', 'replica="b"')).toBe(0);
    // Still the one channel for b: the next batch goes to the new address alone.
    const next = forwarder.forward([snap('n4')]);
    await clock.advance(0);
    await next;
    await moved.waitForRequests(2);
    expect(moved.received.map((r) => r.nodes)).toEqual([['n2', 'n3'], ['n4']]);
    expect(follower.received).toHaveLength(1);
  });
});

describe('createForwarder: leader knowledge and readiness', () => {
  it('is ready once a replica and a leader are known; the Lease outranks the answers', async () => {
    const lease = new FakeLeaderSource();
    const { forwarder, clock, source, replicas, registry } = await setup(['a', 'b'], {}, { lease });
    const known = source.replicas();
    source.set([]);
    expect(forwarder.ready()).toBe(false);
    source.set(known);
    expect(forwarder.ready()).toBe(false); // no leader known yet
    const result = forwarder.forward([snap('n1')]);
    await clock.advance(0);
    await result;
    expect(forwarder.leader()).toBe('a'); // learned from the answer
    expect(forwarder.ready()).toBe(true);
    lease.set('b');
    expect(forwarder.leader()).toBe('b');
    expect(await metric(registry, 'npu_fault_function_replicas', 'state="ready"')).toBe(2);
    expect(await metric(registry, 'npu_fault_function_replicas', 'state="leader"')).toBe(1);
    expect(replicas).toHaveLength(2);
  });

  it('takes a follower’s leader_identity while no leader is known', async () => {
    const { forwarder, clock, replicas, posts } = await setup(['b'], { leaderTimeoutMs: 100 });
    const [follower] = replicas as [FakeReplica];
    follower.leading = false;
    follower.leaderIdentity = 'a';
    const outcome = forwarder.forward([snap('n1')]).catch((error: unknown) => error);
    await clock.advance(0);
    await Promise.all(posts.map((p) => p.done));
    await clock.advance(0);
    expect(forwarder.leader()).toBe('a');
    await clock.advance(100);
    expect(await outcome).toBeInstanceOf(LeaderUnavailableError);
  });

  it('stops: waits for the last batch, then refuses new snapshots with 503', async () => {
    const { forwarder, clock } = await setup(['a']);
    const stop = new AbortController();
    const running = forwarder.start(stop.signal);
    const last = forwarder.forward([snap('n1')]);
    stop.abort();
    await clock.advance(0);
    await expect(last).resolves.toMatchObject({ leader: 'a' });
    await running;
    await expect(forwarder.forward([snap('n2')])).rejects.toThrow('the function is stopping');
  });

  it('with the default leader interval: a stop sends a batch waiting on it at once, and leaves no timer', async () => {
    const { forwarder, clock, postsTo } = await setup(['a'], {
      leaderIntervalMs: FORWARDER_DEFAULTS.leaderIntervalMs,
    });
    const stop = new AbortController();
    const running = forwarder.start(stop.signal);
    await Promise.all([forwarder.forward([snap('n1')]), clock.advance(0)]);
    const waiting = forwarder.forward([snap('n2')]); // within the interval of n1's batch
    await clock.advance(0);
    expect(postsTo('a')).toHaveLength(1);
    stop.abort();
    await expect(waiting).resolves.toMatchObject({ results: [{ node: 'n2' }] });
    await running;
    expect(postsTo('a').map((p) => p.nodes)).toEqual([['n1'], ['n2']]);
    expect(clock.pending).toBe(0);
  });

  it('refuses options out of range with a one-line error naming the option', () => {
    const deps = {
      replicas: new FakeReplicaSource(),
      token: () => 't',
      clock: new FakeClock(),
      log,
      registry: new Registry(),
    };
    expect(() => createForwarder(deps, { maxQueuedBatches: 0 })).toThrow(
      'forwarder maxQueuedBatches: expected a positive integer, got 0',
    );
    expect(() => createForwarder(deps, { batchWindowMs: -1 })).toThrow(
      'forwarder batchWindowMs: expected a number >= 0, got -1',
    );
    expect(() => createForwarder(deps, { followerWindowMs: Number.NaN })).toThrow(
      'forwarder followerWindowMs: expected a number >= 0, got NaN',
    );
    expect(() => createForwarder(deps, { leaderIntervalMs: -2 })).toThrow(
      'forwarder leaderIntervalMs: expected a number >= 0, got -2',
    );
  });
});

import { describe, expect, it } from '@jest/globals';
import type { ObservationsResponse } from '../../contracts/index.js';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import { newBatch, type Batch } from './batch.js';
import { ReplicaRequestError } from './errors.js';
import { createForwarderMetrics } from './metrics.js';
import { ReplicaQueue } from './replica-queue.js';
import { createReplicaRequest } from './replica-request.js';
import type { ReplicaRequest, ReplicaTransport } from './transport.js';

const replica = { identity: 'r1', url: 'http://127.0.0.1:1' };

function batchOf(nodes: string[]): Batch {
  const batch = newBatch(1);
  batch.count = nodes.length;
  batch.json = Buffer.from(nodes.map((node) => JSON.stringify({ snapshot: { node } })).join(','));
  batch.flushed = true;
  return batch;
}

const leaderAnswer = (identity: string, count: number): ObservationsResponse => ({
  leader: true,
  identity,
  term: 2,
  results: Array.from({ length: count }, (_, i) => ({ node: `n${i}`, accepted: true, entry: null })),
});

/** A transport whose answer each test decides; it records the requests it was given. */
function fakeTransport(answer: (request: ReplicaRequest) => Promise<ObservationsResponse>) {
  const requests: ReplicaRequest[] = [];
  const transport: ReplicaTransport = {
    post: (_replica, request) => {
      requests.push(request);
      return answer(request);
    },
    forget: () => undefined,
    close: () => Promise.resolve(),
  };
  return { transport, requests };
}

/** Rejects once the request's signal aborts, as the real transport does. */
const untilAborted = (request: ReplicaRequest): Promise<never> =>
  new Promise((_, reject) =>
    request.signal.addEventListener('abort', () =>
      reject(new ReplicaRequestError('connection', 'r1: aborted')),
    ),
  );

function setup(
  answer: (request: ReplicaRequest) => Promise<ObservationsResponse>,
  token: () => string | Promise<string> = () => 'token-1',
) {
  const clock = new FakeClock();
  const registry = new Registry();
  const lines: { level: string; msg: string }[] = [];
  const log = createLogger({
    level: 'debug',
    destination: {
      write: (line: string) => void lines.push(JSON.parse(line) as { level: string; msg: string }),
    },
  });
  const metrics = createForwarderMetrics(registry, () => ({ ready: 0, leader: 0 }));
  const { transport, requests } = fakeTransport(answer);
  const send = createReplicaRequest({ transport, token, clock, log, metrics, requestTimeoutMs: 100 });
  const errors = async (reason: string): Promise<number> =>
    (await metrics.errors.get()).values.find((v) => v.labels.reason === reason)?.value ?? Number.NaN;
  return { clock, send, requests, lines, errors, queue: new ReplicaQueue(replica) };
}

describe('createReplicaRequest', () => {
  it('posts the batches as one body with the current token and returns the answer', async () => {
    const { send, requests, queue } = setup((request) => {
      const body = JSON.parse(Buffer.from(request.body).toString('utf8')) as { observations: unknown[] };
      return Promise.resolve(leaderAnswer('r1', body.observations.length));
    });
    const answer = await send(queue, [batchOf(['a', 'b']), batchOf(['c'])]);
    expect(answer).toMatchObject({ leader: true, identity: 'r1', term: 2 });
    expect(requests.map((r) => r.token)).toEqual(['token-1']);
    expect(Buffer.from(requests[0]?.body ?? '').toString()).toBe(
      '{"observations":[{"snapshot":{"node":"a"}},{"snapshot":{"node":"b"}},{"snapshot":{"node":"c"}}]}',
    );
  });

  it('refuses an answer with another number of results than observations, and counts it', async () => {
    const { send, queue, errors } = setup(() => Promise.resolve(leaderAnswer('r1', 1)));
    const outcome = await send(queue, [batchOf(['a', 'b'])]);
    expect(outcome).toBeInstanceOf(ReplicaRequestError);
    expect(outcome).toMatchObject({
      reason: 'bad-answer',
      message: 'r1 answered 1 results for 2 observations',
    });
    expect(await errors('bad-answer')).toBe(1);
  });

  it('gives up at requestTimeoutMs with reason timeout, and leaves no timer', async () => {
    const { clock, send, queue, errors } = setup(untilAborted);
    const outcome = send(queue, [batchOf(['a'])]);
    await clock.advance(99);
    await clock.advance(1);
    await expect(outcome).resolves.toMatchObject({
      reason: 'timeout',
      message: 'r1: no answer within 100 ms',
    });
    expect(await errors('timeout')).toBe(1);
    expect(clock.pending).toBe(0);
  });

  it('aborts the request when its queue closes', async () => {
    const { clock, send, queue, requests } = setup(untilAborted);
    const outcome = send(queue, [batchOf(['a'])]);
    await clock.advance(0);
    queue.close();
    await expect(outcome).resolves.toMatchObject({ reason: 'connection' });
    expect(requests[0]?.signal.aborted).toBe(true);
  });

  it('sends nothing without a token: reason unauthorized', async () => {
    const { send, queue, requests } = setup(
      () => Promise.resolve(leaderAnswer('r1', 1)),
      () => Promise.reject(new Error('ENOENT')),
    );
    await expect(send(queue, [batchOf(['a'])])).resolves.toMatchObject({
      reason: 'unauthorized',
      message: "cannot read the function's token: Error: ENOENT",
    });
    expect(requests).toHaveLength(0);
  });

  it('logs failures at warn once in a row, then at debug, and says when the replica answers again', async () => {
    let fail = true;
    const { send, queue, lines } = setup(() =>
      fail ? Promise.reject(new Error('ECONNREFUSED')) : Promise.resolve(leaderAnswer('r1', 1)),
    );
    await send(queue, [batchOf(['a'])]);
    await send(queue, [batchOf(['a'])]);
    fail = false;
    await send(queue, [batchOf(['a'])]);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'forwarding failed'],
      ['debug', 'forwarding failed'],
      ['info', 'replica answering again'],
    ]);
    expect(queue.failing).toBe(false);
  });
});

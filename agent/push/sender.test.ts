import { afterEach, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { snapshotSchema, type PublishedNode, type SnapshotInput } from '../../contracts/index.js';
import { gpuSnapshot } from '../../contracts/testing.js';
import { createEngine } from '../../core/engine/index.js';
import { FakeClock, Registry, createLogger, tokenFromFile } from '../../platform/index.js';
import { createSender, type PushAnswer, type Sender, type SenderOptions } from './sender.js';
import {
  FAKE_LEADER,
  startFakeIngestFunction,
  type FakeIngestFunction,
  type ReceivedRequest,
} from './testing.js';

const log = createLogger({ level: 'silent' });
const BACKOFF = { initialMs: 200, maxMs: 10_000 };
/** What the injected jitter source returns: delays are half their ceiling. */
const JITTER = 0.5;

/** A list that can be waited on until it holds `count` items. */
class Recorder<T> {
  readonly items: T[] = [];
  #waiters: { count: number; resolve: () => void }[] = [];
  push(item: T): void {
    this.items.push(item);
    for (const waiter of this.#waiters.filter((w) => this.items.length >= w.count)) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }
  /** Resolves once `count` items have been recorded. */
  until(count: number): Promise<void> {
    if (this.items.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ count, resolve }));
  }
}

interface Setup {
  sender: Sender;
  fn: FakeIngestFunction;
  clock: FakeClock;
  registry: Registry;
  answers: Recorder<PushAnswer>;
  /** One item per backoff computed (the jitter source is asked once per wait). */
  backoffs: Recorder<number>;
  stop: AbortController;
  /** Starts the sender; resolves when it has stopped. */
  run(): Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  options: Partial<SenderOptions> = {},
  extra: { token?: () => string | Promise<string>; fn?: FakeIngestFunction; url?: string } = {},
): Promise<Setup> {
  const fn = extra.fn ?? (await startFakeIngestFunction());
  const clock = new FakeClock();
  const registry = new Registry();
  const answers = new Recorder<PushAnswer>();
  const backoffs = new Recorder<number>();
  const sender = createSender(
    { url: extra.url ?? fn.url, timeoutMs: 5000, maxQueue: 60, backoff: BACKOFF, ...options },
    {
      token: extra.token ?? (() => 'good-token'),
      onAnswer: (answer) => answers.push(answer),
      clock,
      log,
      registry,
      random: () => {
        backoffs.push(JITTER);
        return JITTER;
      },
    },
  );
  const stop = new AbortController();
  let running: Promise<void> | undefined;
  cleanups.push(async () => {
    stop.abort();
    await fn.close();
    await running;
  });
  return {
    sender,
    fn,
    clock,
    registry,
    answers,
    backoffs,
    stop,
    run: () => (running = sender.start(stop.signal)),
  };
}

/** A metric's values by label text, e.g. `{ 'result=ok': 2 }`. */
async function values(registry: Registry, name: string): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric(`npu_fault_agent_push_${name}`);
  if (!metric) throw new Error(`no metric ${name}`);
  const out: Record<string, number> = {};
  for (const { labels, value } of (await metric.get()).values) {
    if (value === 0 && Object.keys(labels).length > 0) continue;
    out[
      Object.entries(labels)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(',')
    ] = value;
  }
  return out;
}

function gpu(seq: number, xids: { xid: number; at: string }[] = []): SnapshotInput {
  const snapshot = gpuSnapshot({ seq });
  if (snapshot.payload.family !== 'nvidia') throw new Error('not a GPU snapshot');
  const [first, ...rest] = snapshot.payload.gpus;
  return {
    ...snapshot,
    payload: { ...snapshot.payload, gpus: [{ ...first, index: 0, xid_events: xids }, ...rest] },
  };
}

function seqs(request: ReceivedRequest): number[] {
  return request.snapshots.map((s) => s.seq);
}

function xidsOf(snapshot: SnapshotInput | undefined): unknown {
  return snapshot?.payload.family === 'nvidia' ? snapshot.payload.gpus[0]?.xid_events : undefined;
}

/** The backoff of failure `n` with the injected jitter: half of min(maxMs, initialMs·2^(n-1)). */
function backoffOf(n: number): number {
  return Math.floor(JITTER * Math.min(BACKOFF.maxMs, BACKOFF.initialMs * 2 ** (n - 1)));
}

/** A real published entry of a failed node, from the engine the controllers run. */
function failedEntry(): PublishedNode {
  const engine = createEngine();
  const snapshot = snapshotSchema.parse(gpuSnapshot({ xids: [79] }));
  engine.observe(snapshot, Date.parse(snapshot.collected_at));
  const entry = engine.nodeEntry(snapshot.node);
  if (!entry) throw new Error('the engine lists no entry for a node with XID 79');
  return entry;
}

/** A port nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Advances to just before `ms` and checks the sender is still waiting (nothing sent), then
 * to `ms`, and returns the next request.
 */
async function expectRetryAfter(h: Setup, ms: number, next: number): Promise<ReceivedRequest> {
  await h.clock.advance(ms - 1);
  expect(h.fn.requests).toHaveLength(next - 1);
  await h.clock.advance(1);
  return h.fn.received(next);
}

describe('createSender: delivery', () => {
  it('POSTs one snapshot bare with the bearer token, and hands the answer with its snapshot to onAnswer', async () => {
    const h = await setup();
    const entry = failedEntry();
    h.fn.respond(() => ({ kind: 'ok', entry }));
    void h.run();
    const snapshot = gpu(1);
    h.sender.enqueue(snapshot);
    const request = await h.fn.received(1);
    expect(request).toMatchObject({ token: 'good-token', contentType: 'application/json', batch: false });
    expect(request.body).toEqual(snapshot);
    await h.answers.until(1);
    expect(h.answers.items).toEqual([
      { ...FAKE_LEADER, result: { node: snapshot.node, accepted: true, entry }, snapshot },
    ]);
    expect(await values(h.registry, 'requests_total')).toEqual({ 'result=ok': 1 });
    expect(await values(h.registry, 'snapshots_total')).toEqual({ 'outcome=accepted': 1 });
    expect(h.sender.status()).toMatchObject({ queued: 0, consecutiveFailures: 0, lastFailure: null });
    expect(h.sender.status().lastOkAt).toBe(new Date(h.clock.now()).toISOString());
  });

  it('sends what queued up during a request as one batch, in order, answers mapped back in order', async () => {
    const h = await setup();
    h.fn.respond((r) => (r.n === 1 ? { kind: 'hang' } : { kind: 'ok' }));
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.fn.received(1);
    for (const seq of [2, 3, 4]) h.sender.enqueue(gpu(seq));
    expect(h.sender.status().queued).toBe(3);
    h.fn.release();
    const batch = await h.fn.received(2);
    expect(batch.batch).toBe(true);
    expect(seqs(batch)).toEqual([2, 3, 4]);
    await h.answers.until(4);
    expect(h.answers.items.map((a) => a.snapshot.seq)).toEqual([1, 2, 3, 4]);
  });

  const size = Buffer.byteLength(JSON.stringify(gpu(10)));
  it.each([
    ['maxBatch', { maxBatch: 2 }],
    ['maxBatchBytes', { maxBatchBytes: 2 * size + 10 }],
  ])('cuts batches at %s', async (_name, limits) => {
    const h = await setup(limits);
    h.fn.respond((r) => (r.n === 1 ? { kind: 'hang' } : { kind: 'ok' }));
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.fn.received(1);
    for (const seq of [10, 11, 12, 13, 14]) h.sender.enqueue(gpu(seq));
    h.fn.release();
    await h.answers.until(6);
    expect(h.fn.requests.map(seqs)).toEqual([[1], [10, 11], [12, 13], [14]]);
  });

  it('counts a result dropped as "duplicate" as delivered: no retry, onAnswer still called', async () => {
    const h = await setup();
    const entry = failedEntry();
    h.fn.respond(() => ({ kind: 'ok', dropped: 'duplicate', entry }));
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.answers.until(1);
    expect(h.answers.items[0]?.result).toEqual({
      node: 'gpu-node-1',
      accepted: false,
      dropped: 'duplicate',
      entry,
    });
    h.sender.enqueue(gpu(2));
    await h.answers.until(2);
    expect(h.fn.requests.map(seqs)).toEqual([[1], [2]]);
    expect(h.backoffs.items).toEqual([]);
    expect(await values(h.registry, 'snapshots_total')).toEqual({ 'outcome=duplicate': 2 });
    expect(await values(h.registry, 'dropped_total')).toEqual({});
  });

  it('a 200 that does not answer each snapshot is delivered but gives onAnswer nothing', async () => {
    const h = await setup();
    h.fn.respond(() => ({ kind: 'raw', status: 200, body: JSON.stringify({ ...FAKE_LEADER, results: [] }) }));
    void h.run();
    h.sender.enqueue(gpu(1));
    h.sender.enqueue(gpu(2));
    await h.fn.received(1);
    h.fn.respond(() => ({ kind: 'ok' }));
    h.sender.enqueue(gpu(3));
    await h.answers.until(1);
    // The first request was not retried: the next one carried seq 3 only.
    expect(h.fn.requests.map(seqs)).toEqual([[1, 2], [3]]);
    expect(h.answers.items.map((a) => a.snapshot.seq)).toEqual([3]);
  });

  it('reads the token anew for every request (tokenFromFile: the kubelet rotates it)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'push-token-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'token');
    await writeFile(file, 'first\n');
    const h = await setup({}, { token: tokenFromFile(file, new FakeClock(), 0) });
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.answers.until(1);
    await writeFile(file, 'second\n');
    h.sender.enqueue(gpu(2));
    await h.answers.until(2);
    expect(h.fn.requests.map((r) => r.token)).toEqual(['first', 'second']);
  });
});

describe('createSender: retries', () => {
  it('503 with Retry-After (seconds): waits that long plus jitter, then delivers the same snapshot', async () => {
    const h = await setup();
    h.fn.respond((r) =>
      r.n === 1
        ? { kind: 'error', status: 503, code: 'leader_unavailable', headers: { 'retry-after': '2' } }
        : { kind: 'ok' },
    );
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.backoffs.until(1);
    expect(h.sender.status()).toMatchObject({ queued: 1, consecutiveFailures: 1 });
    expect(h.sender.status().lastFailure).toMatchObject({ result: 'http_5xx' });
    expect(h.sender.status().lastFailure?.message).toContain('leader_unavailable');
    const retry = await expectRetryAfter(h, 2000 + Math.floor(JITTER * BACKOFF.initialMs), 2);
    expect(seqs(retry)).toEqual([1]);
    await h.answers.until(1);
    expect(await values(h.registry, 'requests_total')).toEqual({ 'result=http_5xx': 1, 'result=ok': 1 });
    expect(h.sender.status()).toMatchObject({ queued: 0, consecutiveFailures: 0, lastFailure: null });
  });

  it('429 with Retry-After as an HTTP date: waits until that time', async () => {
    const h = await setup();
    const when = new Date(h.clock.now() + 3000).toUTCString();
    h.fn.respond((r) =>
      r.n === 1 ? { kind: 'error', status: 429, headers: { 'retry-after': when } } : { kind: 'ok' },
    );
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.backoffs.until(1);
    await expectRetryAfter(h, 3000 + Math.floor(JITTER * BACKOFF.initialMs), 2);
    await h.answers.until(1);
  });

  it('500s back off exponentially with jitter, then recover; snapshots queued meanwhile go in one batch', async () => {
    const h = await setup();
    h.fn.respond((r) => (r.n <= 3 ? { kind: 'error', status: 500, code: 'internal' } : { kind: 'ok' }));
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.backoffs.until(1);
    h.sender.enqueue(gpu(2));
    await expectRetryAfter(h, backoffOf(1), 2);
    await h.backoffs.until(2);
    await expectRetryAfter(h, backoffOf(2), 3);
    await h.backoffs.until(3);
    const last = await expectRetryAfter(h, backoffOf(3), 4);
    expect(seqs(last)).toEqual([1, 2]);
    await h.answers.until(2);
    expect(await values(h.registry, 'requests_total')).toEqual({ 'result=http_5xx': 3, 'result=ok': 1 });
    expect(await values(h.registry, 'dropped_total')).toEqual({});
  });

  it('connection refused, then the function comes up on that port: delivered', async () => {
    const port = await freePort();
    const h = await setup({}, { url: `http://127.0.0.1:${port}` });
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.backoffs.until(1);
    expect(await values(h.registry, 'requests_total')).toEqual({ 'result=network': 1 });
    const fn = await startFakeIngestFunction(port);
    cleanups.push(() => fn.close());
    await h.clock.advance(backoffOf(1));
    expect(seqs(await fn.received(1))).toEqual([1]);
    await h.answers.until(1);
  });

  it('a connection cut without an answer is a network failure, retried', async () => {
    const h = await setup();
    h.fn.respond((r) => (r.n === 1 ? { kind: 'reset' } : { kind: 'ok' }));
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.backoffs.until(1);
    expect(await values(h.registry, 'requests_total')).toEqual({ 'result=network': 1 });
    await expectRetryAfter(h, backoffOf(1), 2);
    await h.answers.until(1);
  });

  it('no answer within timeoutMs: the request is abandoned (timeout) and retried', async () => {
    const h = await setup({ timeoutMs: 5000 });
    h.fn.respond((r) => (r.n === 1 ? { kind: 'hang' } : { kind: 'ok' }));
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.fn.received(1);
    await h.clock.advance(4999);
    expect(h.backoffs.items).toEqual([]);
    await h.clock.advance(1);
    await h.backoffs.until(1);
    expect(await values(h.registry, 'requests_total')).toEqual({ 'result=timeout': 1 });
    expect(h.sender.status().lastFailure?.result).toBe('timeout');
    await expectRetryAfter(h, backoffOf(1), 2);
    await h.answers.until(1);
  });

  it('a token that cannot be read sends nothing and is retried with backoff', async () => {
    let reads = 0;
    const h = await setup(
      {},
      {
        token: () => {
          reads++;
          if (reads === 1) throw new Error('ENOENT: no such file');
          return 'good-token';
        },
      },
    );
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.backoffs.until(1);
    expect(h.fn.requests).toEqual([]);
    expect(await values(h.registry, 'requests_total')).toEqual({ 'result=token': 1 });
    await expectRetryAfter(h, backoffOf(1), 1);
  });
});

describe('createSender: refusals', () => {
  it('400: the snapshot is dropped, not retried, and the next one goes out', async () => {
    const h = await setup();
    h.fn.respond((r) =>
      r.n === 1 ? { kind: 'error', status: 400, code: 'invalid_snapshot' } : { kind: 'ok' },
    );
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.fn.received(1);
    h.sender.enqueue(gpu(2));
    await h.answers.until(1);
    expect(h.fn.requests.map(seqs)).toEqual([[1], [2]]);
    expect(h.backoffs.items).toEqual([]);
    expect(await values(h.registry, 'dropped_total')).toEqual({ 'reason=rejected': 1 });
    expect(await values(h.registry, 'requests_total')).toEqual({ 'result=http_4xx': 1, 'result=ok': 1 });
  });

  it('a batch refused with 400 is resent one by one, so only the bad snapshot is dropped', async () => {
    const h = await setup();
    h.fn.respond((r) =>
      r.n === 1 ? { kind: 'hang' } : seqs(r).includes(3) ? { kind: 'error', status: 400 } : { kind: 'ok' },
    );
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.fn.received(1);
    for (const seq of [2, 3, 4]) h.sender.enqueue(gpu(seq));
    h.fn.release();
    await h.answers.until(3);
    expect(h.fn.requests.map(seqs)).toEqual([[1], [2, 3, 4], [2], [3], [4]]);
    expect(h.answers.items.map((a) => a.snapshot.seq)).toEqual([1, 2, 4]);
    expect(await values(h.registry, 'dropped_total')).toEqual({ 'reason=rejected': 1 });
  });

  it('413 halves the batch until it fits; one snapshot too large is dropped', async () => {
    const h = await setup();
    h.fn.respond((r) =>
      r.n === 1
        ? { kind: 'hang' }
        : r.snapshots.length > 1 || r.snapshots[0]?.seq === 5
          ? { kind: 'error', status: 413, code: 'body_too_large' }
          : { kind: 'ok' },
    );
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.fn.received(1);
    for (const seq of [2, 3, 4, 5]) h.sender.enqueue(gpu(seq));
    h.fn.release();
    await h.fn.received(7);
    h.sender.enqueue(gpu(6)); // answered only once the refusal of seq 5 is dealt with
    await h.answers.until(5);
    expect(h.fn.requests.map(seqs)).toEqual([[1], [2, 3, 4, 5], [2, 3], [2], [3], [4], [5], [6]]);
    expect(h.answers.items.map((a) => a.snapshot.seq)).toEqual([1, 2, 3, 4, 6]);
    expect(await values(h.registry, 'dropped_total')).toEqual({ 'reason=rejected': 1 });
  });

  it('403 (a token of another node) is not retried', async () => {
    const h = await setup();
    h.fn.respond(() => ({ kind: 'error', status: 403, code: 'node_mismatch' }));
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.fn.received(1);
    h.fn.respond(() => ({ kind: 'ok' }));
    h.sender.enqueue(gpu(2));
    await h.answers.until(1);
    expect(h.fn.requests.map(seqs)).toEqual([[1], [2]]);
    expect(await values(h.registry, 'dropped_total')).toEqual({ 'reason=rejected': 1 });
  });

  it('401: reads the rotated token at once and retries, without backoff', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'push-token-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'token');
    await writeFile(file, 'expired\n');
    const fn = await startFakeIngestFunction();
    const h = await setup({}, { token: tokenFromFile(file, new FakeClock(), 0), fn });
    fn.respond((r) => {
      if (r.token === 'rotated') return { kind: 'ok' };
      // The kubelet writes the new token just as the function refuses the old one.
      writeFileSync(file, 'rotated\n');
      return { kind: 'error', status: 401, code: 'invalid_token' };
    });
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.answers.until(1);
    expect(fn.requests.map((r) => r.token)).toEqual(['expired', 'rotated']);
    expect(fn.requests.map(seqs)).toEqual([[1], [1]]);
    expect(h.backoffs.items).toEqual([]);
    expect(await values(h.registry, 'dropped_total')).toEqual({});
  });

  it('401 again after the re-read: keeps the snapshot and backs off', async () => {
    const h = await setup();
    h.fn.respond((r) => (r.n <= 2 ? { kind: 'error', status: 401, code: 'invalid_token' } : { kind: 'ok' }));
    void h.run();
    h.sender.enqueue(gpu(1));
    await h.fn.received(2);
    await h.backoffs.until(1);
    expect(h.backoffs.items).toHaveLength(1);
    await expectRetryAfter(h, backoffOf(2), 3);
    await h.answers.until(1);
    expect(await values(h.registry, 'dropped_total')).toEqual({});
  });
});

describe('createSender: the bounded queue', () => {
  const t = (s: number): string => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();

  it('drops the oldest past maxQueue, carrying its XIDs into the next snapshot, de-duplicated', async () => {
    const h = await setup({ maxQueue: 1 });
    h.sender.enqueue(gpu(1, [{ xid: 79, at: t(1) }]));
    h.sender.enqueue(
      gpu(2, [
        { xid: 79, at: t(1) },
        { xid: 48, at: t(2) },
      ]),
    );
    h.sender.enqueue(gpu(3));
    expect(h.sender.status().queued).toBe(1);
    expect(await values(h.registry, 'dropped_total')).toEqual({ 'reason=queue_full': 2 });
    void h.run();
    const request = await h.fn.received(1);
    expect(seqs(request)).toEqual([3]);
    expect(xidsOf(request.snapshots[0])).toEqual([
      { xid: 79, at: t(1) },
      { xid: 48, at: t(2) },
    ]);
  });

  it('never blocks enqueue while the function hangs; a failed batch put back is trimmed, its XIDs carried', async () => {
    const h = await setup({ maxQueue: 2 });
    h.fn.respond((r) => (r.n === 1 ? { kind: 'hang' } : { kind: 'ok' }));
    void h.run();
    h.sender.enqueue(gpu(1, [{ xid: 31, at: t(1) }]));
    await h.fn.received(1);
    h.sender.enqueue(gpu(2));
    h.sender.enqueue(gpu(3));
    h.fn.release({ kind: 'error', status: 503, headers: { 'retry-after': '1' } });
    await h.backoffs.until(1);
    expect(h.sender.status().queued).toBe(2);
    expect(await values(h.registry, 'dropped_total')).toEqual({ 'reason=queue_full': 1 });
    await h.clock.advance(1000 + Math.floor(JITTER * BACKOFF.initialMs));
    const batch = await h.fn.received(2);
    expect(seqs(batch)).toEqual([2, 3]);
    expect(xidsOf(batch.snapshots[0])).toEqual([{ xid: 31, at: t(1) }]);
    expect(xidsOf(batch.snapshots[1])).toEqual([]);
  });

  it('reports the queue length', async () => {
    const h = await setup({ maxQueue: 3 });
    for (const seq of [1, 2, 3, 4, 5]) h.sender.enqueue(gpu(seq));
    expect(await values(h.registry, 'queue_length')).toEqual({ '': 3 });
  });
});

describe('createSender: stopping', () => {
  it('flushes what is queued in one last request when stopped', async () => {
    const h = await setup();
    h.fn.respond((r) =>
      r.n === 1 ? { kind: 'error', status: 503, headers: { 'retry-after': '5' } } : { kind: 'ok' },
    );
    const running = h.run();
    h.sender.enqueue(gpu(1));
    await h.backoffs.until(1);
    h.sender.enqueue(gpu(2));
    h.stop.abort();
    await running;
    expect(h.fn.requests.map(seqs)).toEqual([[1], [1, 2]]);
    expect(h.answers.items.map((a) => a.snapshot.seq)).toEqual([1, 2]);
    expect(await values(h.registry, 'dropped_total')).toEqual({});
  });

  it('drops what the last request could not deliver', async () => {
    const h = await setup();
    h.fn.respond(() => ({ kind: 'error', status: 503 }));
    const running = h.run();
    h.sender.enqueue(gpu(1));
    await h.backoffs.until(1);
    h.stop.abort();
    await running;
    expect(h.fn.requests).toHaveLength(2);
    expect(await values(h.registry, 'dropped_total')).toEqual({ 'reason=shutdown': 1 });
    expect(h.sender.status().queued).toBe(0);
  });

  it('stops at once when idle', async () => {
    const h = await setup();
    const running = h.run();
    h.stop.abort();
    await running;
    expect(h.fn.requests).toEqual([]);
  });
});

describe('createSender: options', () => {
  const deps = {
    token: () => 't',
    onAnswer: () => undefined,
    clock: new FakeClock(),
    log,
  };
  it.each([
    ['a URL that is not http', { url: 'ftp://x' }, 'push url: expected an http(s) URL, got "ftp://x"'],
    [
      'a URL with a query',
      { url: 'http://x/?a=1' },
      'push url: expected no query or fragment, got "http://x/?a=1"',
    ],
    ['maxQueue 0', { maxQueue: 0 }, 'push maxQueue: expected a positive integer, got 0'],
    ['timeoutMs 0', { timeoutMs: 0 }, 'push timeoutMs: expected a positive integer, got 0'],
  ])('refuses %s', (_name, change, message) => {
    expect(() =>
      createSender(
        { url: 'http://x', timeoutMs: 1, maxQueue: 1, backoff: BACKOFF, ...change },
        { ...deps, registry: new Registry() },
      ),
    ).toThrow(message);
  });

  it('posts to <url>/v1/snapshots under a path prefix', async () => {
    const h = await setup();
    const paths: string[] = [];
    const sender = createSender(
      { url: `${h.fn.url}/prefix/`, timeoutMs: 1000, maxQueue: 1, backoff: BACKOFF },
      {
        ...deps,
        registry: new Registry(),
        fetch: async (input, init) => {
          paths.push(String(input));
          return fetch(input, init);
        },
      },
    );
    const stop = new AbortController();
    const running = sender.start(stop.signal);
    sender.enqueue(gpu(1));
    await h.fn.received(1);
    stop.abort();
    await running;
    expect(paths).toEqual([`${h.fn.url}/prefix/v1/snapshots`]);
  });
});

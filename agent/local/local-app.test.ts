import { afterEach, describe, expect, it } from '@jest/globals';
import { connect } from 'node:net';
import { agentFaultSchema, type PublishedNode } from '../../contracts/index.js';
import { FakeClock, Registry, createHttpServer, createLogger, type Runnable } from '../../platform/index.js';
import { serve, type TestServer } from '../../platform/testing.js';
import { createFaultFeed, type FaultFeed } from './fault-feed.js';
import {
  createLocalApp,
  type LocalApp,
  type LocalAppOptions,
  type LocalPushStatus,
  type LocalToolStatus,
} from './local-app.js';
import { openSse, type SseClient, type SseMessage } from './testing.js';

const log = createLogger({ level: 'silent' });
const NODE = 'gpu-node-1';
const HEARTBEAT_MS = 15_000;
/** The feed turns stale only in the test about it (its timer would interleave with the others' events). */
const FEED_STALE_MS = 3_600_000;

interface Setup {
  app: LocalApp;
  feed: FaultFeed;
  clock: FakeClock;
  registry: Registry;
  server: TestServer;
  sample: { current: unknown };
  push: { current: LocalPushStatus | undefined };
  /** ISO time `ms` after the clock's start. */
  at(ms: number): string;
  stream(options?: { lastEventId?: string; query?: string }): Promise<SseClient>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  options: Partial<LocalAppOptions> = {},
  withPush = false,
  feedStaleMs = FEED_STALE_MS,
  tool?: () => LocalToolStatus,
): Promise<Setup> {
  const clock = new FakeClock();
  const feed = createFaultFeed({ clock, staleAfterMs: feedStaleMs });
  const start = clock.now();
  const registry = new Registry();
  const sample: { current: unknown } = { current: null };
  const push: Setup['push'] = {
    current: withPush ? { queued: 0, lastOkAt: null, lastFailure: null, consecutiveFailures: 0 } : undefined,
  };
  const app = createLocalApp(
    {
      feed,
      lastSample: () => sample.current,
      ...(withPush ? { pushStatus: () => push.current as LocalPushStatus } : {}),
      ...(tool ? { toolStatus: tool } : {}),
      node: NODE,
      clock,
      log,
      registry,
    },
    { heartbeatMs: HEARTBEAT_MS, ...options },
  );
  const server = await serve(app);
  const clients: SseClient[] = [];
  cleanups.push(async () => {
    for (const client of clients) client.close();
    app.close();
    await server.close();
  });
  return {
    app,
    feed,
    clock,
    registry,
    server,
    sample,
    push,
    at: (ms) => new Date(start + ms).toISOString(),
    async stream(opts = {}) {
      const client = await openSse(`${server.origin}/v1/fault/stream${opts.query ?? ''}`, opts);
      clients.push(client);
      return client;
    },
  };
}

async function getJson(
  url: string,
  method = 'GET',
): Promise<{ status: number; headers: Headers; json: unknown }> {
  const response = await fetch(url, { method });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    json: text ? (JSON.parse(text) as unknown) : undefined,
  };
}

/** A published entry of a node whose GPU 0 failed (shape as the controller publishes it). */
function failedEntry(status: 'failed' | 'degraded' = 'failed'): PublishedNode {
  return {
    node: NODE,
    observed_at: '2026-01-01T00:00:01.000Z',
    agent: 'ok',
    summary: {
      total: 2,
      healthy: 1,
      degraded: status === 'degraded' ? 1 : 0,
      failed: status === 'failed' ? 1 : 0,
      unknown: 0,
    },
    npus: [
      {
        id: 'gpu-0',
        key: `${NODE}/gpu-0`,
        resource_id: 'GPU-0000-0',
        kind: 'gpu',
        model: 'NVIDIA H100 80GB HBM3',
        status,
        since: '2026-01-01T00:00:01.000Z',
        reason: 'xid-79',
        reasons: ['xid-79'],
        signals: [],
        temperature_c: 40,
        power_w: 300,
        ecc_errors: 0,
        pcie_link_status: 'up',
      },
    ],
  };
}

function faultEvent(h: Setup, message: SseMessage): unknown {
  expect(message.event).toBe('fault');
  expect(message.id).toBe(String(h.feed.current().id));
  return JSON.parse(message.data ?? '');
}

/** Waits (event-loop turns, not time) until `condition` holds: for what only the server sees. */
async function until(condition: () => boolean): Promise<void> {
  for (let turns = 0; !condition(); turns++) {
    if (turns > 10_000) throw new Error('condition never held');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('GET /v1/fault', () => {
  it('before any answer: no entry, id 0, no leader', async () => {
    const h = await setup();
    const response = await getJson(`${h.server.origin}/v1/fault`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.json).toEqual({
      node: NODE,
      entry: null,
      id: 0,
      leader: null,
      term: null,
      updated_at: null,
      stale: true,
    });
  });

  it("serves the function's last answer: entry, event id, leader, term, when it changed", async () => {
    const h = await setup();
    const entry = failedEntry();
    h.feed.update({ entry, leader: 'controller-0', term: 4 }, h.at(1000));
    const { json } = await getJson(`${h.server.origin}/v1/fault`);
    // The body is the contract's (contracts/agent-local.ts), which the consumer SDK reads.
    expect(agentFaultSchema.parse(json)).toEqual(json);
    expect(json).toEqual({
      node: NODE,
      entry,
      id: h.feed.current().id,
      leader: 'controller-0',
      term: 4,
      updated_at: h.at(1000),
      stale: false,
    });
  });

  it('says stale after staleAfterMs without an answer, with an event, and fresh at the next answer', async () => {
    const h = await setup({}, false, 10_000);
    const entry = failedEntry();
    h.feed.update({ entry, leader: 'controller-0', term: 4 }, h.at(0));
    const client = await h.stream();
    await client.next(); // retry
    expect(faultEvent(h, await client.next())).toMatchObject({ stale: false, entry });
    await h.clock.advance(9_999);
    expect((await getJson(`${h.server.origin}/v1/fault`)).json).toMatchObject({ stale: false });
    await h.clock.advance(1);
    // The entry stays (a failure it shows still stands); only its age is news.
    expect(faultEvent(h, await client.next())).toMatchObject({
      stale: true,
      entry,
      updated_at: h.at(10_000),
    });
    expect((await getJson(`${h.server.origin}/v1/fault`)).json).toMatchObject({ stale: true, entry });
    h.feed.update({ entry, leader: 'controller-0', term: 4 }, h.at(12_000));
    expect(faultEvent(h, await client.next())).toMatchObject({
      stale: false,
      entry,
      updated_at: h.at(12_000),
    });
  });

  it('answers HEAD without a body', async () => {
    const h = await setup();
    const response = await getJson(`${h.server.origin}/v1/fault`, 'HEAD');
    expect(response.status).toBe(200);
    expect(response.json).toBeUndefined();
  });
});

describe('GET /v1/health', () => {
  it('ok with the last sample and the last push while the function answers', async () => {
    const h = await setup({ staleAfterMs: 30_000 }, true);
    h.sample.current = { node: NODE, seq: 7 };
    h.feed.update({ entry: null, leader: 'controller-0', term: 4 }, h.at(0));
    h.push.current = { queued: 2, lastOkAt: h.at(0), lastFailure: null, consecutiveFailures: 0 };
    await h.clock.advance(30_000);
    expect((await getJson(`${h.server.origin}/v1/health`)).json).toEqual({
      status: 'ok',
      node: NODE,
      last_sample: { node: NODE, seq: 7 },
      last_push: {
        ok_at: h.at(0),
        leader: 'controller-0',
        term: 4,
        queued: 2,
        consecutive_failures: 0,
        last_failure: null,
      },
    });
  });

  it('degraded when nothing was answered for staleAfterMs since start, ok again after an answer', async () => {
    const h = await setup({ staleAfterMs: 30_000 });
    await h.clock.advance(30_000);
    expect((await getJson(`${h.server.origin}/v1/health`)).json).toMatchObject({
      status: 'ok',
      last_sample: null,
    });
    await h.clock.advance(1);
    expect((await getJson(`${h.server.origin}/v1/health`)).json).toEqual({
      status: 'degraded',
      message: 'no answer from the ingest function for 30 s (none since start)',
      node: NODE,
      last_sample: null,
      last_push: { ok_at: null, leader: null, term: null },
    });
    h.feed.update({ entry: null, leader: 'c-0', term: 1 }, new Date(h.clock.now()).toISOString());
    expect((await getJson(`${h.server.origin}/v1/health`)).json).toMatchObject({ status: 'ok' });
    await h.clock.advance(45_000);
    expect((await getJson(`${h.server.origin}/v1/health`)).json).toMatchObject({
      status: 'degraded',
      message: 'no answer from the ingest function for 45 s',
    });
  });

  it('says the health tool is failing, not the function, while the agent sends liveness', async () => {
    const status: LocalToolStatus = {
      ok: false,
      error: 'exit: npu-smi exited with code 2: dcmi module initialize failed. ret is -8005',
      failingSince: '2026-01-01T00:00:00.000Z',
      lastSuccessAt: null,
    };
    const h = await setup({ staleAfterMs: 30_000 }, false, FEED_STALE_MS, () => status);
    h.feed.update({ entry: null, leader: 'c-0', term: 1 }, h.at(0)); // liveness snapshots are answered
    expect((await getJson(`${h.server.origin}/v1/health`)).json).toMatchObject({
      status: 'degraded',
      message:
        'the health tool is failing since 2026-01-01T00:00:00.000Z: exit: npu-smi exited with code 2: dcmi module initialize failed. ret is -8005; the agent is up and its snapshots say so',
      tool: { ok: false, failing_since: '2026-01-01T00:00:00.000Z', last_success_at: null },
    });
    // The function silent too: both are named, and nothing claims the snapshots get through.
    await h.clock.advance(31_000);
    expect(((await getJson(`${h.server.origin}/v1/health`)).json as { message: string }).message).toBe(
      'the health tool is failing since 2026-01-01T00:00:00.000Z: exit: npu-smi exited with code 2: dcmi module initialize failed. ret is -8005; and no answer from the ingest function for 31 s',
    );
    h.feed.update({ entry: null, leader: 'c-0', term: 1 }, new Date(h.clock.now()).toISOString());
    Object.assign(status, { ok: true, error: null, failingSince: null, lastSuccessAt: h.at(1000) });
    expect((await getJson(`${h.server.origin}/v1/health`)).json).toMatchObject({
      status: 'ok',
      tool: { ok: true, error: null, last_success_at: h.at(1000) },
    });
  });

  it("reads the sender's last success when given, and shows its last failure", async () => {
    const h = await setup({ staleAfterMs: 30_000 }, true);
    const failure = { at: h.at(40_000), result: 'http_5xx', message: '503 leader_unavailable: no leader' };
    h.push.current = { queued: 40, lastOkAt: h.at(5000), lastFailure: failure, consecutiveFailures: 12 };
    await h.clock.advance(40_000);
    expect((await getJson(`${h.server.origin}/v1/health`)).json).toMatchObject({
      status: 'degraded',
      last_push: { ok_at: h.at(5000), queued: 40, consecutive_failures: 12, last_failure: failure },
    });
  });
});

describe('errors', () => {
  it.each([
    { name: 'an unknown path', method: 'GET', path: '/v1/faults', status: 404, code: 'not_found' },
    { name: 'a trailing slash', method: 'GET', path: '/v1/fault/', status: 404, code: 'not_found' },
    { name: 'POST /v1/fault', method: 'POST', path: '/v1/fault', status: 405, allow: 'GET, HEAD' },
    { name: 'DELETE /v1/health', method: 'DELETE', path: '/v1/health', status: 405, allow: 'GET, HEAD' },
    { name: 'POST /v1/fault/stream', method: 'POST', path: '/v1/fault/stream', status: 405, allow: 'GET' },
  ])('$name answers $status', async ({ method, path, status, code, allow }) => {
    const h = await setup();
    const response = await getJson(`${h.server.origin}${path}`, method);
    expect(response.status).toBe(status);
    expect(response.headers.get('allow') ?? undefined).toBe(allow);
    expect(response.json).toEqual({
      error: { code: code ?? 'method_not_allowed', message: expect.any(String) },
    });
  });

  it('counts requests by path and status', async () => {
    const h = await setup();
    await getJson(`${h.server.origin}/v1/fault`);
    await getJson(`${h.server.origin}/nope`);
    await h.stream();
    const values = (await h.registry.getSingleMetric('npu_fault_agent_local_requests_total')?.get())?.values;
    expect(values?.map((v) => [v.labels.path, v.labels.code, v.value])).toEqual([
      ['/v1/fault', '200', 1],
      ['other', '404', 1],
      ['/v1/fault/stream', '200', 1],
    ]);
  });
});

describe('GET /v1/fault/stream', () => {
  it('sends the retry hint and the current state at once, then every change', async () => {
    const h = await setup({ retryMs: 2500 });
    h.feed.update({ entry: null, leader: 'c-0', term: 1 }, h.at(1000));
    const client = await h.stream();
    expect(client.status).toBe(200);
    expect(client.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(await client.next()).toEqual({ retry: 2500 });
    expect(faultEvent(h, await client.next())).toEqual({
      node: NODE,
      entry: null,
      id: Date.parse(h.at(1000)),
      leader: 'c-0',
      term: 1,
      updated_at: h.at(1000),
      stale: false,
    });
    const entry = failedEntry();
    h.feed.update({ entry, leader: 'c-0', term: 1 }, h.at(2000));
    expect(faultEvent(h, await client.next())).toMatchObject({ entry, id: Date.parse(h.at(2000)) });
  });

  it('sends nothing for an answer that changes no status', async () => {
    const h = await setup();
    h.feed.update({ entry: failedEntry(), leader: 'c-0', term: 1 }, h.at(1000));
    const client = await h.stream();
    await client.next(); // retry
    await client.next(); // the state
    h.feed.update(
      { entry: { ...failedEntry(), observed_at: h.at(2000) }, leader: 'c-0', term: 1 },
      h.at(2000),
    );
    h.feed.update({ entry: failedEntry('degraded'), leader: 'c-0', term: 1 }, h.at(3000));
    expect(faultEvent(h, await client.next())).toMatchObject({ entry: failedEntry('degraded') });
  });

  it('sends a heartbeat comment every heartbeatMs', async () => {
    const h = await setup();
    const client = await h.stream();
    await client.next(); // retry
    await client.next(); // the state
    await h.clock.advance(HEARTBEAT_MS - 1);
    h.feed.update({ entry: null, leader: 'c-0', term: 1 }, h.at(1)); // a marker, to prove nothing came before it
    expect((await client.next()).event).toBe('fault');
    await h.clock.advance(1);
    expect(await client.next()).toEqual({ comment: 'heartbeat' });
    await h.clock.advance(HEARTBEAT_MS);
    expect(await client.next()).toEqual({ comment: 'heartbeat' });
  });

  it('resumes with Last-Event-ID equal to the current id: nothing until the next change', async () => {
    const h = await setup();
    h.feed.update({ entry: failedEntry(), leader: 'c-0', term: 1 }, h.at(1000));
    const client = await h.stream({ lastEventId: String(h.feed.current().id) });
    expect(await client.next()).toEqual({ retry: 3000 });
    h.feed.update({ entry: null, leader: 'c-0', term: 1 }, h.at(2000));
    expect(faultEvent(h, await client.next())).toMatchObject({ entry: null, id: Date.parse(h.at(2000)) });
  });

  it.each([
    ['header', { lastEventId: '12345' }],
    ['query', { query: '?lastEventId=12345' }],
  ])('resumes with an older id (%s): the current state at once', async (_name, options) => {
    const h = await setup();
    h.feed.update({ entry: failedEntry(), leader: 'c-0', term: 1 }, h.at(1000));
    const client = await h.stream(options);
    await client.next(); // retry
    expect(faultEvent(h, await client.next())).toMatchObject({ entry: failedEntry() });
  });

  it('takes the query id when no header is sent: equal means nothing at once', async () => {
    const h = await setup();
    h.feed.update({ entry: failedEntry(), leader: 'c-0', term: 1 }, h.at(1000));
    const client = await h.stream({ query: `?lastEventId=${h.feed.current().id}` });
    await client.next(); // retry
    await h.clock.advance(HEARTBEAT_MS);
    expect(await client.next()).toEqual({ comment: 'heartbeat' });
  });

  it('refuses streams past maxClients with a 503, and admits again once one leaves', async () => {
    const h = await setup({ maxClients: 2 });
    const first = await h.stream();
    await h.stream();
    const refused = await getJson(`${h.server.origin}/v1/fault/stream`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.json).toEqual({ error: { code: 'unavailable', message: '2 streams open already' } });
    first.close();
    await until(() => h.app.streams === 1);
    const again = await h.stream();
    expect(again.status).toBe(200);
    const refusals = await h.registry.getSingleMetric('npu_fault_agent_local_streams_refused_total')?.get();
    expect(refusals?.values.find((v) => v.labels.reason === 'full')?.value).toBe(1);
  });

  it('stops its heartbeat when the last client leaves', async () => {
    const h = await setup();
    const client = await h.stream();
    expect(h.clock.pending).toBe(1);
    client.close();
    await until(() => h.app.streams === 0);
    expect(h.clock.pending).toBe(0);
  });

  it('disconnects a client that stopped reading; new clients are served', async () => {
    const h = await setup({ maxBufferedBytes: 16 * 1024 });
    // A raw client that sends its request and never reads: its socket buffers fill up.
    const slow = connect(h.server.port, '127.0.0.1');
    cleanups.push(() => void slow.destroy());
    slow.pause();
    slow.write(`GET /v1/fault/stream HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n`);
    await until(() => h.app.streams === 1);
    const padding = 'x'.repeat(64 * 1024);
    for (let n = 1; h.app.streams > 0; n++) {
      if (n > 1000) throw new Error('the slow client was never dropped');
      h.feed.update({ entry: { n, padding }, leader: 'c-0', term: 1 }, h.at(n));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const dropped = await h.registry.getSingleMetric('npu_fault_agent_local_streams_dropped_total')?.get();
    expect(dropped?.values.find((v) => v.labels.reason === 'slow')?.value).toBe(1);
    // The server is none the worse: a new client gets the current state.
    const client = await h.stream();
    await client.next();
    expect(faultEvent(h, await client.next())).toMatchObject({ entry: h.feed.current().entry });
  });

  it('close() ends every stream and refuses new ones', async () => {
    const h = await setup();
    const client = await h.stream();
    h.app.close();
    await client.ended;
    expect(h.app.streams).toBe(0);
    const refused = await getJson(`${h.server.origin}/v1/fault/stream`);
    expect(refused.status).toBe(503);
    expect(refused.json).toEqual({ error: { code: 'unavailable', message: 'the agent is stopping' } });
  });

  it('open streams do not hold the platform server when it stops (close() wired to its signal)', async () => {
    const feed = createFaultFeed();
    const clock = new FakeClock();
    const app = createLocalApp(
      { feed, lastSample: () => null, node: NODE, clock, log, registry: new Registry() },
      {
        heartbeatMs: HEARTBEAT_MS,
      },
    );
    // The grace timer is on the fake clock, never advanced: only ending the streams lets it stop.
    const server = createHttpServer({
      host: '127.0.0.1',
      port: 0,
      log,
      handler: app,
      clock,
      gracePeriodMs: 10_000,
    });
    const serving: Runnable = {
      name: server.name,
      start: (signal) => {
        signal.addEventListener('abort', () => app.close(), { once: true });
        return server.start(signal);
      },
    };
    const stop = new AbortController();
    const running = serving.start(stop.signal);
    const { port } = await server.listening;
    const client = await openSse(`http://127.0.0.1:${port}/v1/fault/stream`);
    cleanups.push(() => client.close());
    await client.next();
    stop.abort();
    await running;
    await client.ended;
  });
});

import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { followStatus } from './follow-status.js';
import type { StatusFollower } from './follower.js';
import { agentUrl, createSseParser, type SseMessage } from './sse-transport.js';
import { device, nodeEntry, waitFor } from './testing.js';
import type { FailedDevice, FollowError, StatusUpdate } from './types.js';

/** A stand-in for the agent's /v1/fault/stream, in its exact format (agent/local/fault-stream.ts). */
async function fakeAgent(node = 'n1') {
  const clients = new Set<ServerResponse>();
  const connections: { lastEventId: string | undefined }[] = [];
  const connected = new Set<() => void>();
  let state = {
    id: 0,
    entry: null as unknown,
    leader: null as string | null,
    term: null as number | null,
    at: null as string | null,
  };
  let refuse = 0;
  const event = (): string =>
    `id: ${state.id}\nevent: fault\ndata: ${JSON.stringify({ node, entry: state.entry, id: state.id, leader: state.leader, term: state.term, updated_at: state.at })}\n\n`;
  const server = createServer((req, res) => {
    if (refuse > 0) {
      refuse -= 1;
      res.writeHead(503).end('{"error":{"code":"unavailable","message":"full"}}');
      return;
    }
    const lastEventId = req.headers['last-event-id'] as string | undefined;
    connections.push({ lastEventId });
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
    clients.add(res);
    res.once('close', () => clients.delete(res));
    res.write(`retry: 20\n\n${lastEventId?.trim() === String(state.id) ? '' : event()}`);
    for (const listener of [...connected]) listener();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections,
    onConnect: (listener: () => void) => {
      connected.add(listener);
      return () => connected.delete(listener);
    },
    refuseNext(n: number) {
      refuse = n;
    },
    change(entry: unknown) {
      state = { id: state.id + 1, entry, leader: 'controller-0', term: 2, at: new Date().toISOString() };
      for (const res of clients) res.write(event());
    },
    /** Writes raw text to every stream (to split an event across chunks). */
    raw(text: string) {
      for (const res of clients) res.write(text);
    },
    heartbeat() {
      for (const res of clients) res.write(': heartbeat\n\n');
    },
    /** Ends every stream as an agent restart or a proxy would. */
    cut() {
      for (const res of clients) res.destroy();
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup() {
  const agent = await fakeAgent();
  cleanups.push(agent.close);
  const follower = followStatus({ transport: 'sse', url: agent.url, node: 'n1', initialBackoffMs: 10 });
  cleanups.push(() => follower.close());
  return { agent, follower };
}

const changed = (f: StatusFollower, predicate: (u: StatusUpdate) => boolean, what: string) =>
  waitFor<StatusUpdate>((l) => f.onChange(l), predicate, what);

describe('sse transport', () => {
  it('follows the agent: the state at connect, then each change', async () => {
    const { agent, follower } = await setup();
    agent.change(null);
    expect(await follower.ready()).toMatchObject({
      transport: 'sse',
      node: 'n1',
      health: 'healthy',
      entry: null,
    });
    const failed = waitFor<FailedDevice>(
      (l) => follower.onDeviceFailed(l),
      () => true,
      'a failed device',
    );
    agent.change(nodeEntry('n1', [device('npu3', 'failed')]));
    expect((await failed).device.id).toBe('npu3');
    expect(follower.current()).toMatchObject({
      health: 'failed',
      publisher: { identity: 'controller-0', term: 2 },
    });
  });

  it('reconnects with Last-Event-ID and is not sent what it has', async () => {
    const { agent, follower } = await setup();
    agent.change(nodeEntry('n1', [device('npu1', 'degraded')]));
    await follower.ready();
    const changes: StatusUpdate[] = [];
    follower.onChange((u) => changes.push(u));
    for (let round = 1; round <= 3; round++) {
      const reconnected = waitFor(
        (l) => agent.onConnect(() => l(undefined)),
        () => true,
        `reconnect ${round}`,
      );
      agent.cut();
      await reconnected;
      expect(agent.connections.at(-1)?.lastEventId).toBe(String(round));
      const next = changed(follower, (u) => u.entry?.npus[0]?.id === `npu${round + 1}`, `change ${round}`);
      agent.change(nodeEntry('n1', [device(`npu${round + 1}`, 'degraded')]));
      await next;
    }
    expect(changes.map((c) => c.entry?.npus[0]?.id)).toEqual(['npu2', 'npu3', 'npu4']);
    expect(follower.stats()).toMatchObject({ connects: 4, events: 4 });
  });

  it('backs off through refusals and counts heartbeats as life', async () => {
    const { agent, follower } = await setup();
    agent.change(null);
    await follower.ready();
    const errors: FollowError[] = [];
    follower.onError((e) => errors.push(e));
    agent.refuseNext(2);
    const reconnected = waitFor(
      (l) => agent.onConnect(() => l(undefined)),
      () => true,
      'reconnect after 503s',
    );
    agent.cut();
    await reconnected;
    expect(errors.map((e) => e.kind)).toEqual(['connection', 'http', 'http']);
    expect(errors[1]?.message).toMatch(/HTTP 503/);
    const before = follower.stats().heartbeats ?? 0;
    const split = changed(follower, (u) => u.health === 'degraded', 'an event split over writes');
    agent.heartbeat();
    const text = `id: 9\nevent: fault\ndata: ${JSON.stringify({ node: 'n1', entry: nodeEntry('n1', [device('npu1', 'degraded')]), id: 9, leader: 'c', term: 1, updated_at: null })}\n\n`;
    agent.raw(text.slice(0, 17));
    agent.raw(text.slice(17));
    await split;
    expect(follower.stats().heartbeats).toBe(before + 1);
  });
});

describe('sse parser and url', () => {
  it('parses blocks across chunks, CRLF, comments and multi-line data', () => {
    const messages: SseMessage[] = [];
    const feed = createSseParser((m) => messages.push(m));
    feed('retry: 3000\r\n\r\nid: 5\nevent: fault\nda');
    feed('ta: a\ndata: b\n\n: heartbeat\n\n');
    expect(messages).toEqual([{ retry: 3000 }, { id: '5', event: 'fault', data: 'a\nb' }, { comment: true }]);
  });

  it("defaults to the agent's node-local Service, $NPU_FAULT_AGENT_URL overriding it, and refuses a non-URL", () => {
    expect(agentUrl({ env: {} })).toBe('http://npu-fault-agent.npu-fault-agent.svc:8081');
    expect(agentUrl({ env: { NPU_FAULT_AGENT_URL: 'http://10.1.2.3:8081/' } })).toBe('http://10.1.2.3:8081');
    expect(agentUrl({ url: 'http://[fd00::1]:8081', env: {} })).toBe('http://[fd00::1]:8081');
    expect(() => agentUrl({ env: { NPU_FAULT_AGENT_URL: '10.1.2.3' } })).toThrow(
      /sse url: expected http\(s\)/,
    );
  });
});

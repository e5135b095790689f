import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { followStatus } from './follow-status.js';
import { device, document, nodeEntry, waitFor } from './testing.js';
import type { FollowError, StatusUpdate } from './types.js';

const TOKEN = 'sekrit';

/** A stand-in apiserver for one ConfigMap: list, and watch streams the test feeds. */
async function fakeApiserver() {
  let rv = 100;
  let data: Record<string, string> = { version: '3.0', 'fault.json': JSON.stringify(document(new Date())) };
  const requests: URL[] = [];
  const watches = new Set<ServerResponse>();
  const watching = new Set<() => void>();
  let goneStatus = false;
  const object = () => ({ metadata: { name: 'npu-fault-status-v3', resourceVersion: String(rv) }, data });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push(url);
    if (req.headers.authorization !== `Bearer ${TOKEN}`)
      return void res.writeHead(401).end('{"message":"Unauthorized"}');
    if (url.searchParams.get('watch') !== 'true') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ metadata: { resourceVersion: String(rv) }, items: [object()] }));
    }
    if (goneStatus) {
      goneStatus = false;
      return void res.writeHead(410).end('{"message":"too old resource version"}');
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
    watches.add(res);
    res.once('close', () => watches.delete(res));
    for (const listener of [...watching]) listener();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const send = (event: object) => {
    for (const res of watches) res.write(`${JSON.stringify(event)}\n`);
  };
  return {
    server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    watchStarted: () =>
      waitFor(
        (l) => {
          watching.add(() => l(undefined));
          return () => watching.clear();
        },
        () => true,
        'a watch',
      ),
    modify(doc: object, version = '3.0') {
      rv += 1;
      data = { version, 'fault.json': JSON.stringify(doc) };
      send({ type: 'MODIFIED', object: object() });
    },
    bookmark() {
      rv += 1;
      send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: String(rv) } } });
    },
    /** The 410 as an ERROR event within the stream. */
    expire() {
      send({ type: 'ERROR', object: { kind: 'Status', code: 410, message: 'too old resource version' } });
    },
    nextWatchGone() {
      goneStatus = true;
    },
    end() {
      for (const res of watches) res.end();
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

async function setup(token = TOKEN) {
  const api = await fakeApiserver();
  cleanups.push(api.close);
  const started = token === TOKEN ? api.watchStarted() : Promise.resolve();
  const follower = followStatus({
    transport: 'watch',
    credentials: { server: api.server, token },
    node: 'n1',
    initialBackoffMs: 10,
  });
  cleanups.push(() => follower.close());
  return { api, follower, started };
}

const changed = (
  f: { onChange(l: (u: StatusUpdate) => void): () => void },
  p: (u: StatusUpdate) => boolean,
  what: string,
) => waitFor<StatusUpdate>((l) => f.onChange(l), p, what);
const failing = (nodes: number) => document(new Date(), [nodeEntry('n1', [device(`npu${nodes}`, 'failed')])]);

describe('watch transport', () => {
  it('lists, then watches from the list resourceVersion, resuming from the last event when the watch ends', async () => {
    const { api, follower, started } = await setup();
    expect((await follower.ready()).health).toBe('healthy');
    await started;
    expect(api.requests[1]?.searchParams.get('resourceVersion')).toBe('100');
    expect(api.requests[1]?.searchParams.get('fieldSelector')).toBe('metadata.name=npu-fault-status-v3');
    const next = changed(follower, (u) => u.health === 'failed', 'the modification');
    api.modify(failing(1));
    await next;
    api.bookmark();
    const resumed = api.watchStarted();
    api.end();
    await resumed;
    expect(api.requests.at(-1)?.searchParams.get('resourceVersion')).toBe('102');
    expect(follower.stats()).toMatchObject({ lists: 1, watches: 2, resumes: 1, relists: 0 });
  });

  it('lists again on 410 Gone, as an event or as a status', async () => {
    const { api, follower, started } = await setup();
    await follower.ready();
    await started;
    let again = api.watchStarted();
    api.expire();
    await again;
    expect(follower.stats()).toMatchObject({ lists: 2, relists: 1 });
    api.nextWatchGone();
    again = api.watchStarted();
    api.end();
    await again;
    expect(follower.stats()).toMatchObject({ lists: 3, relists: 2 });
    const next = changed(follower, (u) => u.health === 'failed', 'a change after re-lists');
    api.modify(failing(2));
    await next;
  });

  it('reports another major without losing the last good status, and a refused token', async () => {
    const { api, follower, started } = await setup();
    await follower.ready();
    await started;
    const refused = waitFor<FollowError>(
      (l) => follower.onError(l),
      () => true,
      'the version error',
    );
    api.modify({ ...document(new Date()), version: '4.0' }, '4.0');
    expect((await refused).message).toMatch(/ConfigMap key version: version "4.0" is not 3.x/);
    expect(follower.current()?.document?.version).toBe('3.0');

    const denied = await setup('wrong');
    const error = await waitFor<FollowError>(
      (l) => denied.follower.onError(l),
      () => true,
      'the 401',
    );
    expect(error.message).toMatch(
      /listing configmap ai-infra\/npu-fault-status-v3: HTTP 401 \(Unauthorized\)/,
    );
  });
});

import { afterEach, describe, expect, it } from '@jest/globals';
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { CloudEvent, HTTP } from 'cloudevents';
import {
  SNAPSHOT_EVENT_TYPE,
  fastParseObservationsRequest,
  ingestErrorSchema,
  observationsRequestSchema,
  ingestResponseSchema,
  snapshotSchema,
  type PublishedNode,
  type Snapshot,
} from '../../contracts/index.js';
import { createEngine } from '../../core/engine/index.js';
import { AppError, FakeClock, Registry, createLogger } from '../../platform/index.js';
import {
  TokenReviewUnavailableError,
  UnauthenticatedError,
  type AuthenticatedUser,
} from '../../platform/k8s/index.js';
import {
  MAX_FORWARDED_RAW_BYTES,
  NODE_NAME_EXTRA,
  agentUser,
  createFunctionApp,
  type FunctionAppDeps,
  type FunctionAppOptions,
} from './index.js';
import {
  batchBody,
  binaryEventHeaders,
  createFakeForwarder,
  forwardedText,
  gpuSnapshot,
  postSnapshots,
  serve,
  structuredEvent,
  type FakeForwarder,
  type TestResponse,
  type TestServer,
} from './testing.js';

const AGENT = agentUser('ai-infra');
const NODE = 'gpu-node-1';

/** Tokens the fake authenticate knows: an agent on NODE, on another node, and the odd ones. */
const users: Record<string, AuthenticatedUser> = {
  'good-token': user(AGENT, NODE),
  'node-b-token': user(AGENT, 'gpu-node-2'),
  'other-token': user('system:serviceaccount:ai-infra:someone-else', NODE),
  'unbound-token': user(AGENT),
  'two-nodes-token': { ...user(AGENT), extra: { [NODE_NAME_EXTRA]: [NODE, 'gpu-node-2'] } },
};

function user(username: string, node?: string): AuthenticatedUser {
  return {
    username,
    uid: 'u',
    groups: [],
    extra: node === undefined ? {} : { [NODE_NAME_EXTRA]: [node] },
    audiences: ['npu-fault'],
  };
}

interface Harness {
  server: TestServer;
  forwarder: FakeForwarder;
  registry: Registry;
  clock: FakeClock;
  calls: string[];
  logs: string[];
}

const open: TestServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

async function start(
  overrides: Partial<FunctionAppDeps> = {},
  options: FunctionAppOptions = {},
): Promise<Harness> {
  const forwarder = createFakeForwarder({ leader: 'controller-1', term: 7 });
  const clock = new FakeClock();
  const registry = new Registry();
  const calls: string[] = [];
  const logs: string[] = [];
  const deps: FunctionAppDeps = {
    authenticate: async (token) => {
      calls.push('authenticate');
      const known = users[token];
      if (known) return known;
      if (token === 'review-down') throw new TokenReviewUnavailableError(new Error('connect ECONNREFUSED'));
      if (token === 'review-busy') throw new TokenReviewUnavailableError(undefined, 'token_review_busy');
      throw new UnauthenticatedError('invalid_token', 'the bearer token was not accepted', 'token expired');
    },
    forwarder,
    clock,
    log: createLogger({ level: 'debug', destination: { write: (line: string) => void logs.push(line) } }),
    registry,
    ...overrides,
  };
  const server = await serve(createFunctionApp(deps, options));
  open.push(server);
  return { server, forwarder, registry, clock, calls, logs };
}

/** Every error answer: the status, a one-line `{ error: { code, message } }` JSON body. */
function expectError(response: TestResponse, status: number, code: string): string {
  const body = ingestErrorSchema.safeParse(response.json);
  expect({ status: response.status, code: body.data?.error.code }).toEqual({ status, code });
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(body.data?.error.message).not.toMatch(/\n|\r| {4}at /);
  return body.data?.error.message ?? '';
}

async function metric(registry: Registry, name: string): Promise<Record<string, number>> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === `npu_fault_function_${name}`);
  const out: Record<string, number> = {};
  for (const value of (found?.values ?? []) as {
    labels: Record<string, string | number>;
    value: number;
    metricName?: string;
  }[]) {
    const key = [value.metricName ?? '', ...Object.entries(value.labels).map(([k, v]) => `${k}=${v}`)]
      .join(' ')
      .trim();
    out[key] = value.value;
  }
  return out;
}

/** A real published entry of a failed node, from the engine the controllers run. */
function failedEntry(): PublishedNode {
  const engine = createEngine();
  const snapshot = snapshotSchema.parse(gpuSnapshot({ xids: [79] }));
  engine.observe(snapshot, Date.parse(snapshot.collected_at));
  const entry = engine.nodeEntry(NODE);
  if (!entry) throw new Error('the engine lists no entry for a node with XID 79');
  return entry;
}

describe('POST /v1/snapshots: the answer', () => {
  it('forwards one snapshot and answers with the leader, its term and the node entry', async () => {
    const h = await start();
    const entry = failedEntry();
    h.forwarder.entries.set(NODE, entry);
    const response = await postSnapshots(h.server.url, gpuSnapshot({ xids: [79] }));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(ingestResponseSchema.strict().parse(response.json)).toEqual({
      leader: 'controller-1',
      term: 7,
      results: [{ node: NODE, accepted: true, entry }],
    });
    expect(h.forwarder.calls).toHaveLength(1);
    expect(h.forwarder.calls[0]?.[0]).toMatchObject({ node: NODE, seq: 1 });
  });

  it('forwards a batch whole, in order, with defaults filled in; a duplicate is reported dropped', async () => {
    const h = await start();
    const response = await postSnapshots(
      h.server.url,
      batchBody(gpuSnapshot({ seq: 1 }), gpuSnapshot({ seq: 2 }), gpuSnapshot({ seq: 2 })),
    );
    expect(response.status).toBe(200);
    const body = ingestResponseSchema.parse(response.json);
    expect(body.results.map((r) => [r.accepted, r.dropped])).toEqual([
      [true, undefined],
      [true, undefined],
      [false, 'duplicate'],
    ]);
    expect(h.forwarder.calls.map((call) => call.map((s) => s.seq))).toEqual([[1, 2, 2]]);
    expect(await metric(h.registry, 'snapshots_total')).toEqual({
      'result=accepted': 2,
      'result=dropped': 1,
    });
  });

  it('503 with the forwarder’s Retry-After when no leader answers; nothing is acknowledged', async () => {
    const h = await start();
    h.forwarder.failWith = Object.assign(
      new AppError('leader_unavailable', 'no controller leader answered within 2000 ms', { status: 503 }),
      { retryAfterSeconds: 3 },
    );
    const response = await postSnapshots(h.server.url, gpuSnapshot());
    expect(expectError(response, 503, 'leader_unavailable')).toBe(
      'no controller leader answered within 2000 ms',
    );
    expect(response.headers.get('retry-after')).toBe('3');
  });

  it.each([
    [
      'the forwarder throws',
      (f: FakeForwarder): void => {
        f.failWith = new TypeError('boom at /secret/path');
      },
    ],
    [
      'the forwarder answers too few results',
      (f: FakeForwarder): void => {
        f.answer = { leader: 'c', term: 1, results: [] };
      },
    ],
    [
      'the forwarder answers another node',
      (f: FakeForwarder): void => {
        f.answer = { leader: 'c', term: 1, results: [{ node: 'someone-else', accepted: true, entry: null }] };
      },
    ],
  ])('500 with a generic message when %s, logged', async (_name, breakIt) => {
    const h = await start();
    breakIt(h.forwarder);
    const response = await postSnapshots(h.server.url, gpuSnapshot());
    expect(expectError(response, 500, 'internal')).toBe('internal error');
    expect(response.text).not.toMatch(/boom|secret|results for/);
    expect(h.logs.some((line) => line.includes('"level":"error"'))).toBe(true);
  });

  it('413 when the snapshots of a batch, once defaults are filled in, exceed the body limit; nothing forwarded', async () => {
    const h = await start({}, { maxBodyBytes: 8 * 1024, maxDevicesPerNode: 512 });
    // A small body whose GPUs each grow into whole devices: `{"index": n}` → every field.
    const small = gpuSnapshot() as { payload: { gpus: unknown[] } };
    small.payload.gpus = Array.from({ length: 200 }, (_, index) => ({ index, uuid: `GPU-${index}` }));
    const response = await postSnapshots(h.server.url, batchBody(small));
    expect(expectError(response, 413, 'body_too_large')).toMatch(/once defaults are filled in/);
    expect(h.forwarder.calls).toHaveLength(0);
    // One such snapshot alone is forwarded as it was sent: the controllers fill the defaults
    // in, and what crosses the wire is the body, within the limit.
    const alone = await postSnapshots(h.server.url, small);
    expect(alone.status).toBe(200);
    expect(h.forwarder.options[0]?.bytes).toBe(Buffer.byteLength(JSON.stringify(small)) + 2);
  });

  it('counts requests by status and times them', async () => {
    const h = await start();
    await postSnapshots(h.server.url, gpuSnapshot());
    await postSnapshots(h.server.url, gpuSnapshot(), { token: null });
    await postSnapshots(h.server.url, '{');
    expect(await metric(h.registry, 'requests_total')).toEqual({
      'code=200': 1,
      'code=401': 1,
      'code=400': 1,
    });
    const histogram = await metric(h.registry, 'request_duration_seconds');
    expect(histogram['npu_fault_function_request_duration_seconds_count']).toBe(3);
    expect(await metric(h.registry, 'auth_failures_total')).toEqual({ 'reason=missing_token': 1 });
    expect(await metric(h.registry, 'validation_failures_total')).toEqual({ 'reason=invalid_json': 1 });
  });
});

describe('POST /v1/snapshots: credentials bound to the node', () => {
  it('401 without a token, nothing forwarded', async () => {
    const h = await start();
    const response = await postSnapshots(h.server.url, gpuSnapshot(), { token: null });
    expect(expectError(response, 401, 'missing_token')).toBe('missing Authorization: Bearer <token> header');
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="npu-fault"');
    expect(h.calls).toEqual([]);
    expect(h.forwarder.calls).toEqual([]);
  });

  it('401 invalid_request for a header that is not a bearer token', async () => {
    const h = await start();
    const response = await postSnapshots(h.server.url, gpuSnapshot(), {
      token: null,
      headers: { authorization: 'Basic Zm9vOmJhcg==' },
    });
    expectError(response, 401, 'malformed_token');
    expect(response.headers.get('www-authenticate')).toBe(
      'Bearer realm="npu-fault", error="invalid_request"',
    );
  });

  it('401 invalid_token for a refused token; the reason is logged, never the token', async () => {
    const h = await start();
    const response = await postSnapshots(h.server.url, gpuSnapshot(), { token: 'bad-token' });
    expect(expectError(response, 401, 'invalid_token')).toBe('the bearer token was not accepted');
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="npu-fault", error="invalid_token"');
    expect(h.logs.join('')).toContain('token expired');
    expect(h.logs.join('')).not.toContain('bad-token');
  });

  it('503 with Retry-After when TokenReview is unavailable', async () => {
    const h = await start({}, { retryAfterSeconds: 2 });
    const response = await postSnapshots(h.server.url, gpuSnapshot(), { token: 'review-down' });
    expectError(response, 503, 'token_review_unavailable');
    expect(response.headers.get('retry-after')).toBe('2');
    expect(await metric(h.registry, 'auth_failures_total')).toEqual({ 'reason=token_review_unavailable': 1 });
  });

  it('503 with Retry-After, counted but not logged, when too many token reviews are under way', async () => {
    const h = await start({}, { retryAfterSeconds: 2 });
    const response = await postSnapshots(h.server.url, gpuSnapshot(), { token: 'review-busy' });
    expect(expectError(response, 503, 'token_review_busy')).toBe(
      'too many token reviews under way; retry later',
    );
    expect(response.headers.get('retry-after')).toBe('2');
    expect(await metric(h.registry, 'auth_failures_total')).toEqual({ 'reason=token_review_busy': 1 });
    expect(h.logs.join('')).not.toContain('token_review_busy');
    expect(h.logs.join('')).not.toContain('too many token reviews');
    expect(h.forwarder.calls).toEqual([]);
  });

  it('403 for another ServiceAccount, naming it', async () => {
    const h = await start();
    const response = await postSnapshots(h.server.url, gpuSnapshot(), { token: 'other-token' });
    expect(expectError(response, 403, 'forbidden_user')).toBe(
      'user "system:serviceaccount:ai-infra:someone-else" may not post snapshots',
    );
  });

  it('allows the agent of the configured namespace, or the configured users', async () => {
    const inOther = await start({}, { agentNamespace: 'elsewhere' });
    expect((await postSnapshots(inOther.server.url, gpuSnapshot())).status).toBe(403);
    const listed = await start({}, { allowedUsers: ['system:serviceaccount:ai-infra:someone-else'] });
    expect((await postSnapshots(listed.server.url, gpuSnapshot(), { token: 'other-token' })).status).toBe(
      200,
    );
  });

  it.each(['unbound-token', 'two-nodes-token'])(
    '403 not_node_bound for %s, before the body is read',
    async (token) => {
      const h = await start();
      const response = await postSnapshots(h.server.url, '{', { token });
      expect(expectError(response, 403, 'not_node_bound')).toMatch(/not bound to a pod on a node/);
    },
  );

  it('403 node_mismatch for a token of node B posting node A, naming the field', async () => {
    const h = await start();
    const response = await postSnapshots(h.server.url, gpuSnapshot(), { token: 'node-b-token' });
    expect(expectError(response, 403, 'node_mismatch')).toBe(
      '/node: the token is bound to node "gpu-node-2", not "gpu-node-1"',
    );
    expect(h.forwarder.calls).toEqual([]);
  });

  it('403 for a batch with one snapshot of another node: nothing of it is forwarded', async () => {
    const h = await start();
    const body = batchBody(gpuSnapshot(), gpuSnapshot({ node: 'gpu-node-2', seq: 2 }));
    const response = await postSnapshots(h.server.url, body);
    expect(expectError(response, 403, 'node_mismatch')).toBe(
      '/snapshots/1/node: the token is bound to node "gpu-node-1", not "gpu-node-2"',
    );
    expect(h.forwarder.calls).toEqual([]);
    expect(await metric(h.registry, 'auth_failures_total')).toEqual({ 'reason=node_mismatch': 1 });
  });

  it('names the mismatch inside a structured CloudEvent under /data', async () => {
    const h = await start();
    const response = await postSnapshots(h.server.url, structuredEvent(gpuSnapshot()), {
      token: 'node-b-token',
      headers: { 'content-type': 'application/cloudevents+json' },
    });
    expect(expectError(response, 403, 'node_mismatch')).toMatch(/^\/data\/node: /);
  });
});

describe('POST /v1/snapshots: the request', () => {
  it.each([
    'text/plain',
    'application/jsonp',
    'application/x-www-form-urlencoded',
    'application/cloudevents-batch+json',
  ])('415 for %s', async (type) => {
    const h = await start();
    const response = await postSnapshots(h.server.url, gpuSnapshot(), { headers: { 'content-type': type } });
    expectError(response, 415, 'unsupported_media_type');
    expect(h.forwarder.calls).toEqual([]);
  });

  it('415 for a charset other than UTF-8, and for an unknown Content-Encoding', async () => {
    const h = await start();
    const latin = await postSnapshots(h.server.url, gpuSnapshot(), {
      headers: { 'content-type': 'application/json; charset=latin1' },
    });
    expectError(latin, 415, 'unsupported_charset');
    const snappy = await postSnapshots(h.server.url, 'xx', { headers: { 'content-encoding': 'snappy' } });
    expectError(snappy, 415, 'unsupported_encoding');
  });

  it('413 above maxBodyBytes, counted after inflating (no zip bombs)', async () => {
    const h = await start({}, { maxBodyBytes: 64 * 1024 });
    const ok = await postSnapshots(h.server.url, gzipSync(JSON.stringify(gpuSnapshot())), {
      headers: { 'content-encoding': 'gzip' },
    });
    expect(ok.status).toBe(200);
    const bomb = gzipSync(`{"snapshots":[${' '.repeat(1024 * 1024)}]}`);
    expect(bomb.length).toBeLessThan(64 * 1024);
    const refused = await postSnapshots(h.server.url, bomb, { headers: { 'content-encoding': 'gzip' } });
    expect(expectError(refused, 413, 'body_too_large')).toBe('body larger than 65536 bytes');
    expect(h.forwarder.calls).toHaveLength(1);
  });

  it.each([
    ['gzip-compressed', { 'content-encoding': 'gzip' }, (text: string) => gzipSync(text)],
    [
      'in UTF-16',
      { 'content-type': 'application/json; charset=utf-16le' },
      (text: string) => Buffer.from(text, 'utf16le'),
    ],
  ])('refuses a __proto__ key in a body sent %s', async (_name, headers, encode) => {
    const h = await start();
    const body = JSON.stringify(gpuSnapshot()).replace(
      '"family":',
      '"__proto__":{"polluted":true},"family":',
    );
    const response = await postSnapshots(h.server.url, encode(body), { headers });
    expect(expectError(response, 400, 'forbidden_key')).toBe('/payload/__proto__: forbidden key');
    expect(h.forwarder.calls).toEqual([]);
  });

  it('1 MiB by default', async () => {
    const h = await start();
    const response = await postSnapshots(h.server.url, `{"snapshots":[${' '.repeat(1024 * 1024)}]}`);
    expect(expectError(response, 413, 'body_too_large')).toBe('body larger than 1048576 bytes');
  });

  it.each([
    ['truncated JSON', '{"snapshots":[{"sche'],
    ['a bare string', '"snapshot"'],
    ['NaN', '{"schema":NaN}'],
  ])('400 invalid_json for %s', async (_name, text) => {
    const h = await start();
    expect(expectError(await postSnapshots(h.server.url, text), 400, 'invalid_json')).toMatch(
      /^body is not valid JSON: /,
    );
  });

  const good = JSON.stringify(gpuSnapshot());
  const withBad = (edit: (bad: Record<string, unknown>) => void): string => {
    const bad = JSON.parse(good) as Record<string, unknown>;
    edit(bad);
    return JSON.stringify(batchBody(gpuSnapshot(), bad));
  };
  it.each([
    ['an empty body', '', 'invalid_body', '/schema: required (expected "hdc.health/v1")'],
    ['an array', '[]', 'invalid_body', 'body: expected object, got array'],
    ['an empty batch', '{"snapshots":[]}', 'invalid_body', '/snapshots: expected at least 1 item'],
    [
      'a batch that is not an array',
      '{"snapshots":{}}',
      'invalid_body',
      '/snapshots: expected array, got object',
    ],
    [
      'a wrong type deep in a batch',
      withBad((bad) =>
        Object.assign((bad.payload as { gpus: object[] }).gpus[0] ?? {}, { temperature_gpu: 'hot' }),
      ),
      'invalid_body',
      '/snapshots/1/payload/gpus/0/temperature_gpu: expected number, got string',
    ],
    [
      'an "Infinity" string for a number',
      withBad((bad) =>
        Object.assign((bad.payload as { gpus: object[] }).gpus[0] ?? {}, { power_draw_w: 'Infinity' }),
      ),
      'invalid_body',
      '/snapshots/1/payload/gpus/0/power_draw_w: expected number, got string',
    ],
    [
      'a bad node name',
      withBad((bad) => (bad.node = 'Not_A_Node')),
      'invalid_body',
      '/snapshots/1/node: must be a Kubernetes node name (lower-case DNS subdomain)',
    ],
    [
      'a __proto__ key',
      `{"snapshots":[${good},${good.replace('"family":', '"__proto__":{"polluted":true},"family":')}]}`,
      'forbidden_key',
      '/snapshots/1/payload/__proto__: forbidden key',
    ],
    [
      'constructor.prototype',
      `{"constructor":{"prototype":{"polluted":1}},"snapshots":[${good}]}`,
      'forbidden_key',
      '/constructor: forbidden key',
    ],
    [
      'a __proto__ key spelled with \\u escapes',
      `{"snapshots":[${good.replace('"family":', '"\\u005f\\u005fproto__":{"polluted":true},"family":')}]}`,
      'forbidden_key',
      '/snapshots/0/payload/__proto__: forbidden key',
    ],
    [
      'constructor.prototype spelled with a \\u escape',
      `{"constructor":{"\\u0070rototype":{"polluted":1}},"snapshots":[${good}]}`,
      'forbidden_key',
      '/constructor: forbidden key',
    ],
  ])(
    '400 for %s, naming the field; nothing of the batch is forwarded',
    async (_name, body, code, message) => {
      const h = await start();
      const response = await postSnapshots(h.server.url, body);
      expect(expectError(response, 400, code)).toBe(message);
      expect(h.forwarder.calls).toEqual([]);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    },
  );

  it('400 above maxBatch (500 by default), counting the refused snapshots as invalid', async () => {
    const h = await start({}, { maxBatch: 3 });
    const body = batchBody(...[1, 2, 3, 4].map((seq) => gpuSnapshot({ seq })));
    expect(expectError(await postSnapshots(h.server.url, body), 400, 'invalid_body')).toBe(
      '/snapshots: expected at most 3 items',
    );
    expect(await metric(h.registry, 'snapshots_total')).toEqual({ 'result=invalid': 4 });
    const byDefault = await start();
    const big = batchBody(...Array.from({ length: 501 }, (_, i) => ({ seq: i })));
    expect(expectError(await postSnapshots(byDefault.server.url, big), 400, 'invalid_body')).toBe(
      '/snapshots: expected at most 500 items',
    );
  });

  it('422 too_many_devices for a snapshot over maxDevicesPerNode (32 by default), naming the count; nothing forwarded', async () => {
    const withGpus = (count: number, seq = 1): ReturnType<typeof gpuSnapshot> => {
      const snapshot = gpuSnapshot({ seq });
      const [first] = (snapshot.payload as { gpus: object[] }).gpus;
      const gpus = Array.from({ length: count }, (_, i) => ({ ...first, index: i, uuid: `GPU-flood-${i}` }));
      return { ...snapshot, payload: { family: 'nvidia', gpus } } as ReturnType<typeof gpuSnapshot>;
    };
    const h = await start();
    expect((await postSnapshots(h.server.url, withGpus(32))).status).toBe(200);
    expect(expectError(await postSnapshots(h.server.url, withGpus(33, 2)), 422, 'too_many_devices')).toBe(
      '/payload: lists 33 devices; a node may hold at most 32 (--max-devices-per-node)',
    );
    const small = await start({}, { maxDevicesPerNode: 4 });
    const batch = batchBody(withGpus(4, 1), withGpus(512, 2));
    expect(expectError(await postSnapshots(small.server.url, batch), 422, 'too_many_devices')).toBe(
      '/snapshots/1/payload: lists 512 devices; a node may hold at most 4 (--max-devices-per-node)',
    );
    expect(small.forwarder.calls).toEqual([]);
    expect(await metric(small.registry, 'snapshots_total')).toEqual({ 'result=invalid': 2 });
    expect(await metric(small.registry, 'validation_failures_total')).toEqual({
      'reason=too_many_devices': 1,
    });
  });

  it('422 simulated_collector for a snapshot of collector "sim" unless allowSimulatedCollectors, naming the field; nothing forwarded', async () => {
    const sim = (seq: number): ReturnType<typeof gpuSnapshot> => ({
      ...gpuSnapshot({ seq }),
      collector: 'sim',
    });
    const h = await start();
    expect(expectError(await postSnapshots(h.server.url, sim(1)), 422, 'simulated_collector')).toBe(
      '/collector: "sim" is a simulated collector, refused unless the function runs with --allow-simulated-collectors',
    );
    // One simulated snapshot refuses its whole batch, and says which.
    const batch = batchBody(gpuSnapshot({ seq: 2 }), sim(3));
    expect(expectError(await postSnapshots(h.server.url, batch), 422, 'simulated_collector')).toMatch(
      /^\/snapshots\/1\/collector: "sim" is a simulated collector/,
    );
    expect(h.forwarder.calls).toEqual([]);
    expect(await metric(h.registry, 'snapshots_total')).toEqual({ 'result=invalid': 3 });
    expect(await metric(h.registry, 'validation_failures_total')).toEqual({
      'reason=simulated_collector': 2,
    });
    // A real collector is accepted as ever; with the flag (demos, tests) so is the simulator.
    expect((await postSnapshots(h.server.url, gpuSnapshot({ seq: 4 }))).status).toBe(200);
    const demo = await start({}, { allowSimulatedCollectors: true });
    expect((await postSnapshots(demo.server.url, sim(1))).status).toBe(200);
    expect(demo.forwarder.calls.map((call) => call.map((s) => s.collector))).toEqual([['sim']]);
  });

  it.each(['GET', 'PUT', 'DELETE', 'PATCH'])('405 for %s, with Allow: POST', async (method) => {
    const h = await start();
    const response = await postSnapshots(h.server.url, '{}', { method });
    expectError(response, 405, 'method_not_allowed');
    expect(response.headers.get('allow')).toBe('POST');
    expect(h.calls).toEqual([]);
  });

  it.each(['/', '/v1/snapshot', '/V1/snapshots', '/v1/snapshots/', '/v1/snapshots/x', '/v1/observations'])(
    '404 for %s',
    async (path) => {
      const h = await start();
      expectError(await postSnapshots(`${h.server.origin}${path}`, gpuSnapshot()), 404, 'not_found');
      expect(h.calls).toEqual([]);
    },
  );

  it('takes the path without its query: /v1/snapshots?x=1 is the snapshots endpoint', async () => {
    const h = await start();
    const response = await postSnapshots(`${h.server.url}?x=1`, gpuSnapshot());
    expect(response.status).toBe(200);
    expect(h.calls).toHaveLength(1);
    const elsewhere = await postSnapshots(`${h.server.origin}/v1/snapshot?/v1/snapshots`, gpuSnapshot());
    expectError(elsewhere, 404, 'not_found');
  });
});

describe('POST /v1/snapshots: CloudEvents', () => {
  it('binary mode: the ce-* headers are the attributes, the body the snapshot (SDK-built)', async () => {
    const h = await start();
    const message = HTTP.binary(
      new CloudEvent({ type: SNAPSHOT_EVENT_TYPE, source: '/agent/gpu-node-1', data: gpuSnapshot() }),
    );
    const response = await postSnapshots(h.server.url, message.body, {
      headers: message.headers as Record<string, string>,
    });
    expect(response.status).toBe(200);
    expect(h.forwarder.calls[0]?.[0]?.node).toBe(NODE);
  });

  it('structured mode: the envelope is the body, the batch its data (SDK-built)', async () => {
    const h = await start();
    const message = HTTP.structured(
      new CloudEvent({
        type: SNAPSHOT_EVENT_TYPE,
        source: '/agent/gpu-node-1',
        datacontenttype: 'application/json',
        data: batchBody(gpuSnapshot({ seq: 1 }), gpuSnapshot({ seq: 2 })),
      }),
    );
    expect(message.headers['content-type']).toMatch(/^application\/cloudevents\+json/);
    const response = await postSnapshots(h.server.url, message.body, {
      headers: message.headers as Record<string, string>,
    });
    expect(response.status).toBe(200);
    expect(ingestResponseSchema.parse(response.json).results).toHaveLength(2);
  });

  const structured = { 'content-type': 'application/cloudevents+json' };
  it.each([
    [
      'binary: another type',
      binaryEventHeaders({ type: 'io.example.other' }),
      gpuSnapshot(),
      'ce-type: expected io.npu-fault.snapshot.v1, got "io.example.other"',
    ],
    [
      'binary: no ce-source',
      { ...binaryEventHeaders(), 'ce-source': '' },
      gpuSnapshot(),
      'ce-source: must NOT have fewer than 1 characters',
    ],
    ['binary: no ce-id', { ...binaryEventHeaders(), 'ce-id': '' }, gpuSnapshot(), 'ce-id: required'],
    [
      'binary: specversion 0.3',
      binaryEventHeaders({ specversion: '0.3' }),
      gpuSnapshot(),
      'ce-specversion: expected 1.0, got "0.3"',
    ],
    [
      'binary: a bad extension name',
      { ...binaryEventHeaders(), 'ce-Bad_Ext': 'x' },
      gpuSnapshot(),
      'body: invalid CloudEvent: invalid attribute name: "bad_ext"',
    ],
    ['structured: no id', structured, structuredEvent(gpuSnapshot(), { id: undefined }), '/id: required'],
    [
      'structured: no specversion',
      structured,
      structuredEvent(gpuSnapshot(), { specversion: undefined }),
      '/specversion: required',
    ],
    [
      'structured: a numeric type',
      structured,
      structuredEvent(gpuSnapshot(), { type: 5 }),
      '/type: must be string',
    ],
    ['structured: no data', structured, structuredEvent(undefined), '/data: required (expected object)'],
    [
      'structured: data_base64',
      structured,
      structuredEvent(undefined, { data_base64: 'e30=' }),
      '/data_base64: not accepted: send the snapshot as JSON data',
    ],
    [
      'structured: text data',
      structured,
      structuredEvent('x', { datacontenttype: 'text/plain' }),
      '/datacontenttype: expected application/json',
    ],
    [
      'structured: an array',
      structured,
      [structuredEvent(gpuSnapshot())],
      'body: expected a CloudEvent object, got array',
    ],
  ])('400 invalid_cloudevent for %s', async (_name, headers, body, message) => {
    const h = await start();
    const response = await postSnapshots(h.server.url, body, { headers: headers as Record<string, string> });
    expect(expectError(response, 400, 'invalid_cloudevent')).toBe(message);
    expect(h.forwarder.calls).toEqual([]);
  });

  it('400 naming the field under /data for an invalid snapshot in a structured event', async () => {
    const h = await start();
    const response = await postSnapshots(
      h.server.url,
      structuredEvent(batchBody({ ...gpuSnapshot(), seq: -1 })),
      {
        headers: structured,
      },
    );
    expect(expectError(response, 400, 'invalid_body')).toMatch(/^\/data\/snapshots\/0\/seq: /);
  });

  it('accepts configured event types', async () => {
    const h = await start({}, { eventTypes: ['io.example.snap'] });
    const headers = binaryEventHeaders({ type: 'io.example.snap' });
    expect((await postSnapshots(h.server.url, gpuSnapshot(), { headers })).status).toBe(200);
  });
});

describe('POST /v1/snapshots: a slow body', () => {
  /** Sends the headers and half a body, and resolves with the answer (the socket may then close). */
  function postHalf(server: TestServer): Promise<TestResponse> {
    const text = JSON.stringify(gpuSnapshot());
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: server.port,
          path: '/v1/snapshots',
          method: 'POST',
          headers: {
            authorization: 'Bearer good-token',
            'content-type': 'application/json',
            'content-length': String(text.length),
          },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: new Headers(res.headers as Record<string, string>),
              text: body,
              json: JSON.parse(body) as unknown,
            }),
          );
        },
      );
      req.on('error', (error) => reject(error));
      req.write(text.slice(0, text.length / 2));
    });
  }

  it('408 body_timeout when the body is not whole within bodyTimeoutMs, and the connection closes', async () => {
    const h = await start({}, { bodyTimeoutMs: 5000 });
    const answer = postHalf(h.server);
    // The deadline is scheduled once the credentials are checked: wait for that timer.
    while (h.clock.pending === 0) await new Promise((resolve) => setImmediate(resolve));
    await h.clock.advance(4999);
    await h.clock.advance(1);
    const response = await answer;
    expect(expectError(response, 408, 'body_timeout')).toBe('body not received within 5000 ms');
    expect(response.headers.get('connection')).toBe('close');
    expect(h.forwarder.calls).toEqual([]);
    expect(await metric(h.registry, 'validation_failures_total')).toEqual({ 'reason=body_timeout': 1 });
    expect(await metric(h.registry, 'requests_total')).toEqual({ 'code=408': 1 });
  });

  it('cancels the deadline once the body is read', async () => {
    const h = await start({}, { bodyTimeoutMs: 5000 });
    expect((await postSnapshots(h.server.url, gpuSnapshot())).status).toBe(200);
    expect(h.clock.pending).toBe(0);
  });
});

describe('createFunctionApp options', () => {
  const deps = (): FunctionAppDeps => ({
    authenticate: async () => user(AGENT, NODE),
    forwarder: createFakeForwarder(),
    clock: new FakeClock(),
    log: createLogger({ level: 'silent' }),
    registry: new Registry(),
  });

  it.each([
    [{ allowedUsers: [] }, 'function allowedUsers: expected at least one user'],
    [{ eventTypes: [] }, 'function eventTypes: expected at least one type'],
    [{ maxBodyBytes: 0 }, 'function maxBodyBytes: expected a positive integer, got 0'],
    [{ bodyTimeoutMs: 1.5 }, 'function bodyTimeoutMs: expected a positive integer, got 1.5'],
    [{ maxBatch: -1 }, 'function maxBatch: expected a positive integer, got -1'],
  ] as [FunctionAppOptions, string][])('refuses %j', (options, message) => {
    expect(() => createFunctionApp(deps(), options)).toThrow(message);
  });
});

/**
 * The snapshots a controller takes from forwarded observation items, as its endpoint reads
 * them (controller/observations/validate.ts: the contract's fast path, else the schema): both
 * are run, and must agree.
 */
function controllerView(items: string | undefined): Snapshot[] {
  const body = JSON.parse(`{"observations":[${items ?? ''}]}`) as unknown;
  const bySchema = observationsRequestSchema(500).parse(body);
  const fast = fastParseObservationsRequest(body, 500);
  if (fast !== undefined) expect(fast).toEqual(bySchema);
  return bySchema.observations.map((observation) => observation.snapshot);
}

describe('POST /v1/snapshots: the bytes forwarded', () => {
  const text = JSON.stringify(gpuSnapshot({ xids: [79] }));

  it('forwards one plain-JSON snapshot as the bytes it validated; the controllers take the same snapshot', async () => {
    const h = await start();
    expect((await postSnapshots(h.server.url, text)).status).toBe(200);
    const [options] = h.forwarder.options;
    expect(typeof options?.json).not.toBe('string');
    expect(forwardedText(options ?? {})).toBe(`{"snapshot":${text}}`);
    expect(options?.bytes).toBe(Buffer.byteLength(text) + 2);
    const validated = h.forwarder.calls[0]?.[0];
    expect(controllerView(forwardedText(options ?? {}))).toEqual([validated]);
    expect(controllerView(`{"snapshot":${JSON.stringify(validated)}}`)).toEqual([validated]);
  });

  it('unknown keys are forwarded and stripped by the controllers: they take the snapshot validated here', async () => {
    const h = await start();
    const padded = text
      .replace('{', '{"agent_note":{"x":[1,2,3]},')
      .replace('"family":', '"vendor_extra":"anything","family":');
    expect(padded).not.toBe(text);
    expect((await postSnapshots(h.server.url, padded)).status).toBe(200);
    const forwarded = forwardedText(h.forwarder.options[0] ?? {});
    expect(forwarded).toContain('agent_note');
    const validated = h.forwarder.calls[0]?.[0];
    expect(validated).not.toHaveProperty('agent_note');
    expect(controllerView(forwarded)).toEqual([validated]);
  });

  it('duplicate keys: the controllers take the value validated here (the last), node binding included', async () => {
    const h = await start();
    // The token is bound to gpu-node-1; an earlier "node" of another node is overridden by the last.
    const duplicated = `{"node":"gpu-node-2","seq":99,${text.slice(1)}`;
    expect((await postSnapshots(h.server.url, duplicated)).status).toBe(200);
    const validated = h.forwarder.calls[0]?.[0];
    expect(validated).toMatchObject({ node: NODE, seq: 1 });
    expect(controllerView(forwardedText(h.forwarder.options[0] ?? {}))).toEqual([validated]);
    // And the other way round: the last "node" is another node's, refused, nothing forwarded.
    const other = `${text.slice(0, -1)},"node":"gpu-node-2"}`;
    expectError(await postSnapshots(h.server.url, other), 403, 'node_mismatch');
    expect(h.forwarder.calls).toHaveLength(1);
  });

  it('a body over MAX_FORWARDED_RAW_BYTES is re-serialised: its padding is not forwarded', async () => {
    const h = await start();
    const padding = 'x'.repeat(MAX_FORWARDED_RAW_BYTES);
    const big = text.replace('{', `{"padding":"${padding}",`);
    expect((await postSnapshots(h.server.url, big)).status).toBe(200);
    const [options] = h.forwarder.options;
    expect(typeof options?.json).toBe('string');
    expect(options?.json).not.toContain(padding);
    const validated = h.forwarder.calls[0]?.[0];
    expect(options?.json).toBe(`{"snapshot":${JSON.stringify(validated)}}`);
    expect(options?.bytes).toBe(Buffer.byteLength(JSON.stringify(validated)) + 2);
    expect(controllerView(forwardedText(options ?? {}))).toEqual([validated]);
  });

  it('a gzip-compressed or byte-order-marked body is forwarded as its inflated UTF-8 bytes, the mark left off', async () => {
    const h = await start();
    await postSnapshots(h.server.url, gzipSync(text), { headers: { 'content-encoding': 'gzip' } });
    await postSnapshots(h.server.url, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]));
    expect(h.forwarder.options.map((options) => forwardedText(options))).toEqual([
      `{"snapshot":${text}}`,
      `{"snapshot":${text}}`,
    ]);
  });

  it('batches, CloudEvents and UTF-16 bodies are forwarded re-serialised from the validated snapshots', async () => {
    const h = await start();
    const snapshot = JSON.parse(text) as unknown;
    await postSnapshots(h.server.url, batchBody(snapshot));
    await postSnapshots(h.server.url, text, { headers: binaryEventHeaders() });
    await postSnapshots(h.server.url, structuredEvent(snapshot), {
      headers: { 'content-type': 'application/cloudevents+json' },
    });
    await postSnapshots(h.server.url, Buffer.from(text, 'utf16le'), {
      headers: { 'content-type': 'application/json; charset=utf-16le' },
    });
    expect(h.forwarder.calls).toHaveLength(4);
    h.forwarder.options.forEach((options, i) => {
      const validated = h.forwarder.calls[i]?.[0];
      expect(options.json).toBe(`{"snapshot":${JSON.stringify(validated)}}`);
      expect(controllerView(forwardedText(options))).toEqual([validated]);
    });
  });
});

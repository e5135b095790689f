import { afterEach, describe, expect, it } from '@jest/globals';
import { gzipSync } from 'node:zlib';
import type { PublishedNode, Snapshot } from '../../contracts/index.js';
import { createEngine } from '../../core/engine/index.js';
import { AppError, FakeClock, Registry, createLogger } from '../../platform/index.js';
import {
  TokenReviewUnavailableError,
  UnauthenticatedError,
  type AuthenticatedUser,
} from '../../platform/k8s/index.js';
import type { Leadership } from '../leader-election/index.js';
import {
  DEFAULT_ALLOWED_USERS,
  createObservationsApp,
  type AcceptResult,
  type ObservationsAppDeps,
  type ObservationsAppOptions,
} from './app.js';
import {
  followerResponseSchema,
  leaderResponseSchema,
  observationsErrorSchema,
} from '../../contracts/index.js';
import {
  gpuSnapshot,
  observationsBody,
  postObservations,
  serve,
  type TestResponse,
  type TestServer,
} from './testing.js';

const FUNCTION_USER = DEFAULT_ALLOWED_USERS[0] as string;
const OTHER_USER = 'system:serviceaccount:ai-infra:someone-else';

const user = (username: string): AuthenticatedUser => ({
  username,
  uid: 'u',
  groups: [],
  extra: {},
  audiences: [],
});

/** One app on a real port, with a real engine behind `accept`/`entryFor` and a record of the calls. */
interface Harness {
  server: TestServer;
  registry: Registry;
  clock: FakeClock;
  calls: string[];
  accepted: Snapshot[];
  logs: string[];
  lead: { current: Leadership };
}

const open: TestServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

async function start(
  overrides: Partial<ObservationsAppDeps> = {},
  options: ObservationsAppOptions = {},
): Promise<Harness> {
  const engine = createEngine();
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 30));
  const registry = new Registry();
  const calls: string[] = [];
  const accepted: Snapshot[] = [];
  const logs: string[] = [];
  const lead: { current: Leadership } = { current: { leading: true, term: 7 } };
  const deps: ObservationsAppDeps = {
    authenticate: async (token) => {
      calls.push('authenticate');
      if (token === 'good-token') return user(FUNCTION_USER);
      if (token === 'other-token') return user(OTHER_USER);
      if (token === 'review-down') throw new TokenReviewUnavailableError(new Error('connect ECONNREFUSED'));
      throw new UnauthenticatedError('invalid_token', 'the bearer token was not accepted', 'token expired');
    },
    accept: (snapshots, now): AcceptResult[] => {
      calls.push('accept');
      accepted.push(...snapshots);
      return snapshots.map((snapshot) => engine.observe(snapshot, now));
    },
    entryFor: (node): PublishedNode | null => {
      calls.push(`entryFor ${node}`);
      return engine.nodeEntry(node);
    },
    leadership: () => {
      calls.push('leadership');
      return lead.current;
    },
    identity: 'controller-0',
    leaderIdentity: () => 'controller-1',
    clock,
    log: createLogger({ level: 'debug', destination: { write: (line: string) => void logs.push(line) } }),
    registry,
    ...overrides,
  };
  const server = await serve(createObservationsApp(deps, options));
  open.push(server);
  return { server, registry, clock, calls, accepted, logs, lead };
}

/** Every error answer: the status, a one-line `{ error: { code, message } }` body, JSON typed. */
function expectError(response: TestResponse, status: number, code: string): string {
  expect({
    status: response.status,
    code: (response.json as { error?: { code?: string } })?.error?.code,
  }).toEqual({
    status,
    code,
  });
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = observationsErrorSchema.parse(response.json);
  expect(body.error.message).not.toMatch(/\n|\r| {4}at /);
  return body.error.message;
}

async function metric(registry: Registry, name: string): Promise<Record<string, number>> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === `npu_fault_controller_${name}`);
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

describe('POST /v1/observations: authentication', () => {
  it('401 without a token, no error code in WWW-Authenticate, nothing accepted', async () => {
    const h = await start();
    const response = await postObservations(h.server.url, observationsBody(gpuSnapshot()), { token: null });
    expect(expectError(response, 401, 'missing_token')).toBe('missing Authorization: Bearer <token> header');
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="npu-fault"');
    expect(h.calls).toEqual([]);
  });

  it('401 invalid_request for a header that is not a bearer token', async () => {
    const h = await start();
    const response = await postObservations(h.server.url, observationsBody(gpuSnapshot()), {
      token: null,
      headers: { authorization: 'Basic Zm9vOmJhcg==' },
    });
    expectError(response, 401, 'malformed_token');
    expect(response.headers.get('www-authenticate')).toBe(
      'Bearer realm="npu-fault", error="invalid_request"',
    );
  });

  it('401 invalid_token for a token the apiserver refuses; its reason stays in the log', async () => {
    const h = await start();
    const response = await postObservations(h.server.url, observationsBody(gpuSnapshot()), {
      token: 'bad-token',
    });
    expect(expectError(response, 401, 'invalid_token')).toBe('the bearer token was not accepted');
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="npu-fault", error="invalid_token"');
    expect(response.text).not.toContain('expired');
    expect(h.logs.join('')).toContain('token expired');
    expect(h.calls).toEqual(['authenticate']);
  });

  it('403 for an authenticated user that is not allowed, naming the user', async () => {
    const h = await start();
    const response = await postObservations(h.server.url, observationsBody(gpuSnapshot()), {
      token: 'other-token',
    });
    expect(expectError(response, 403, 'forbidden')).toBe(`user "${OTHER_USER}" may not post observations`);
    expect(h.calls).toEqual(['authenticate']);
  });

  it('allows the configured users instead of the default', async () => {
    const h = await start({}, { allowedUsers: [OTHER_USER] });
    expect(
      (await postObservations(h.server.url, observationsBody(gpuSnapshot()), { token: 'other-token' }))
        .status,
    ).toBe(200);
    expect((await postObservations(h.server.url, observationsBody(gpuSnapshot({ seq: 2 })))).status).toBe(
      403,
    );
  });

  it('503 with Retry-After when TokenReview is unavailable (a retry, not a 401)', async () => {
    const h = await start({}, { retryAfterSeconds: 2 });
    const response = await postObservations(h.server.url, observationsBody(gpuSnapshot()), {
      token: 'review-down',
    });
    expectError(response, 503, 'token_review_unavailable');
    expect(response.headers.get('retry-after')).toBe('2');
    expect(h.calls).toEqual(['authenticate']);
  });

  it('never logs a token', async () => {
    const h = await start();
    for (const token of ['bad-token', 'review-down', 'good-token', 'other-token']) {
      await postObservations(h.server.url, observationsBody(gpuSnapshot()), { token });
    }
    expect(h.logs.length).toBeGreaterThan(3);
    expect(h.logs.join('')).not.toMatch(/bad-token|review-down|good-token|other-token/);
  });
});

describe('POST /v1/observations: the request', () => {
  it.each([
    ['text/plain', 'text/plain'],
    ['a JSON look-alike', 'application/jsonp'],
    ['form data', 'application/x-www-form-urlencoded'],
  ])('415 for %s', async (_name, type) => {
    const h = await start();
    const response = await postObservations(h.server.url, observationsBody(gpuSnapshot()), {
      headers: { 'content-type': type },
    });
    expectError(response, 415, 'unsupported_media_type');
    expect(h.calls).toEqual(['authenticate']);
  });

  it('415 without a Content-Type', async () => {
    const h = await start();
    const response = await fetch(h.server.url, {
      method: 'POST',
      headers: { authorization: 'Bearer good-token' },
      body: new Uint8Array(Buffer.from(JSON.stringify(observationsBody(gpuSnapshot())))),
    });
    expect(response.status).toBe(415);
  });

  it('415 for a charset other than UTF-8', async () => {
    const h = await start();
    const response = await postObservations(h.server.url, observationsBody(gpuSnapshot()), {
      headers: { 'content-type': 'application/json; charset=latin1' },
    });
    expectError(response, 415, 'unsupported_charset');
  });

  it('accepts application/json with parameters, in any case', async () => {
    const h = await start();
    const response = await postObservations(h.server.url, observationsBody(gpuSnapshot()), {
      headers: { 'content-type': 'Application/JSON; charset=utf-8' },
    });
    expect(response.status).toBe(200);
  });

  it('413 for a body above maxBodyBytes, nothing accepted', async () => {
    const h = await start({}, { maxBodyBytes: 1024 });
    const body = observationsBody(gpuSnapshot(), gpuSnapshot({ seq: 2 }), gpuSnapshot({ seq: 3 }));
    expect(JSON.stringify(body).length).toBeGreaterThan(1024);
    const response = await postObservations(h.server.url, body);
    expect(expectError(response, 413, 'body_too_large')).toBe('body larger than 1024 bytes');
    expect(h.calls).toEqual(['authenticate']);
  });

  it('reads a gzip body, and counts the limit after inflating it (no zip bombs)', async () => {
    const h = await start({}, { maxBodyBytes: 64 * 1024 });
    const small = gzipSync(JSON.stringify(observationsBody(gpuSnapshot())));
    const ok = await postObservations(h.server.url, small, { headers: { 'content-encoding': 'gzip' } });
    expect(ok.status).toBe(200);
    const bomb = gzipSync(`{"observations":[${' '.repeat(1024 * 1024)}]}`);
    expect(bomb.length).toBeLessThan(64 * 1024);
    const refused = await postObservations(h.server.url, bomb, { headers: { 'content-encoding': 'gzip' } });
    expectError(refused, 413, 'body_too_large');
  });

  it('415 for an unknown Content-Encoding', async () => {
    const h = await start();
    const response = await postObservations(h.server.url, 'xx', {
      headers: { 'content-encoding': 'snappy' },
    });
    expectError(response, 415, 'unsupported_encoding');
  });

  it.each([
    ['truncated JSON', '{"observations":[{"snap'],
    ['a bare string', '"observations"'],
    ['a control character', '{"a":"\u0001\n'],
  ])('400 invalid_json for %s, one escaped line', async (_name, text) => {
    const h = await start();
    const message = expectError(await postObservations(h.server.url, text), 400, 'invalid_json');
    expect(message).toMatch(/^body is not valid JSON: /);
  });

  /** A batch of a good snapshot and a second one as `edit` leaves it, as JSON text. */
  const batch = (edit: (bad: Record<string, unknown>) => void): string => {
    const bad = JSON.parse(JSON.stringify(gpuSnapshot({ seq: 2 }))) as Record<string, unknown>;
    edit(bad);
    return JSON.stringify(observationsBody(gpuSnapshot(), bad));
  };
  const good = JSON.stringify(gpuSnapshot());

  it.each([
    ['an empty body', '', '/observations: required (expected array)'],
    ['an array', '[]', 'body: expected object, got array'],
    ['no observations', '{"observations":[]}', '/observations: expected at least 1 item'],
    [
      'a wrong type deep in the batch',
      batch((bad) =>
        Object.assign((bad.payload as { gpus: object[] }).gpus[0] ?? {}, { temperature_gpu: 'hot' }),
      ),
      '/observations/1/snapshot/payload/gpus/0/temperature_gpu: expected number, got string',
    ],
    [
      'a bad node name',
      batch((bad) => (bad.node = 'Not_A_Node')),
      '/observations/1/snapshot/node: must be a Kubernetes node name (lower-case DNS subdomain)',
    ],
    [
      'a __proto__ key',
      `{"observations":[{"snapshot":${good}},{"snapshot":${good.replace('"family":', '"__proto__":{"polluted":true},"family":')}}]}`,
      '/observations/1/snapshot/payload/__proto__: forbidden key',
    ],
    [
      'constructor.prototype',
      `{"observations":[{"constructor":{"prototype":{"polluted":1}},"snapshot":${good}}]}`,
      '/observations/0/constructor: forbidden key',
    ],
    // The raw body's byte search must not clear these: the keys are spelled with escapes.
    [
      'a __proto__ key spelled with \\u escapes',
      `{"observations":[{"snapshot":${good.replace('"family":', '"\\u005f\\u005fproto__":{"polluted":true},"family":')}}]}`,
      '/observations/0/snapshot/payload/__proto__: forbidden key',
    ],
    [
      'constructor.prototype spelled with a \\u escape',
      `{"observations":[{"constructor":{"\\u0070rototype":{"polluted":1}},"snapshot":${good}}]}`,
      '/observations/0/constructor: forbidden key',
    ],
  ])(
    '400 for %s naming the field as a JSON pointer; nothing of the batch is accepted',
    async (_name, body, message) => {
      const h = await start();
      const response = await postObservations(h.server.url, body);
      expect(expectError(response, 400, 'invalid_body')).toBe(message);
      expect(h.calls).toEqual(['authenticate']);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    },
  );

  it('400 above maxBatch observations', async () => {
    const h = await start({}, { maxBatch: 3 });
    const body = observationsBody(...[1, 2, 3, 4].map((seq) => gpuSnapshot({ seq })));
    expect(expectError(await postObservations(h.server.url, body), 400, 'invalid_body')).toBe(
      '/observations: expected at most 3 items',
    );
  });

  it.each(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'])('405 for %s, with Allow: POST', async (method) => {
    const h = await start();
    const response = await postObservations(h.server.url, '{}', { method });
    expectError(response, 405, 'method_not_allowed');
    expect(response.headers.get('allow')).toBe('POST');
    expect(h.calls).toEqual([]);
  });

  it.each(['/', '/v1/observation', '/V1/observations', '/v1/observations/x', '/v2/observations', '/metrics'])(
    '404 for %s',
    async (path) => {
      const h = await start();
      expectError(
        await postObservations(`${h.server.origin}${path}`, observationsBody(gpuSnapshot())),
        404,
        'not_found',
      );
      expect(h.calls).toEqual([]);
    },
  );

  it('accepts a query string on the path', async () => {
    const h = await start();
    expect((await postObservations(`${h.server.url}?x=1`, observationsBody(gpuSnapshot()))).status).toBe(200);
  });
});

describe('POST /v1/observations: the answer', () => {
  it('the leader answers with each node’s published entry: failed for a failing node, null for a healthy one', async () => {
    const h = await start();
    const failing = gpuSnapshot({ node: 'gpu-a', xids: [79] });
    const healthy = gpuSnapshot({ node: 'gpu-b' });
    const response = await postObservations(h.server.url, observationsBody(failing, healthy));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = leaderResponseSchema.parse(response.json);
    expect(body).toMatchObject({ leader: true, identity: 'controller-0', term: 7 });
    expect(
      body.results.map(({ node, accepted, entry }) => ({ node, accepted, listed: entry !== null })),
    ).toEqual([
      { node: 'gpu-a', accepted: true, listed: true },
      { node: 'gpu-b', accepted: true, listed: false },
    ]);
    const entry = body.results[0]?.entry;
    expect(entry?.node).toBe('gpu-a');
    expect(entry?.npus).toEqual([
      expect.objectContaining({ id: 'gpu0', status: 'failed', reason: 'xid-79' }),
    ]);
    expect(entry?.summary).toMatchObject({ total: 2, failed: 1, healthy: 1 });
    expect(h.accepted.map((s) => s.node)).toEqual(['gpu-a', 'gpu-b']);
  });

  it('reads the fence after the observations are in the engine, and asks each node’s entry once', async () => {
    const h = await start();
    const body = observationsBody(
      gpuSnapshot({ seq: 1 }),
      gpuSnapshot({ seq: 2 }),
      gpuSnapshot({ node: 'gpu-b' }),
    );
    expect((await postObservations(h.server.url, body)).status).toBe(200);
    expect(h.calls).toEqual([
      'authenticate',
      'accept',
      'leadership',
      'entryFor gpu-node-1',
      'entryFor gpu-b',
    ]);
  });

  it('says what was dropped: a resend of an applied snapshot is a duplicate', async () => {
    const h = await start();
    const snapshot = gpuSnapshot({ seq: 5 });
    await postObservations(h.server.url, observationsBody(snapshot));
    const body = leaderResponseSchema.parse(
      (await postObservations(h.server.url, observationsBody(snapshot, gpuSnapshot({ seq: 4 })))).json,
    );
    expect(body.results.map(({ accepted, dropped }) => ({ accepted, dropped }))).toEqual([
      { accepted: false, dropped: 'duplicate' },
      { accepted: false, dropped: 'out-of-order' },
    ]);
    expect(await metric(h.registry, 'observations_total')).toEqual({
      'result=accepted': 1,
      'result=duplicate': 1,
      'result=out-of-order': 1,
    });
  });

  it('a follower accepts too and names the leader; no entries', async () => {
    const h = await start();
    h.lead.current = { leading: false };
    const response = await postObservations(h.server.url, observationsBody(gpuSnapshot({ xids: [79] })));
    expect(response.status).toBe(200);
    const body = followerResponseSchema.strict().parse(response.json);
    expect(body).toEqual({
      leader: false,
      identity: 'controller-0',
      leader_identity: 'controller-1',
      results: [{ node: 'gpu-node-1', accepted: true }],
    });
    expect(h.calls).toEqual(['authenticate', 'accept', 'leadership']);
  });

  it('a follower that knows no leader says null', async () => {
    const h = await start({ leaderIdentity: () => undefined });
    h.lead.current = { leading: false };
    const body = followerResponseSchema.parse(
      (await postObservations(h.server.url, observationsBody(gpuSnapshot()))).json,
    );
    expect(body.leader_identity).toBeNull();
  });

  it('answers an AppError of accept with its status (503 with Retry-After while not ready)', async () => {
    const h = await start({
      accept: () => {
        throw new AppError('not_ready', 'the engine is not seeded yet', { status: 503 });
      },
    });
    const response = await postObservations(h.server.url, observationsBody(gpuSnapshot()));
    expect(expectError(response, 503, 'not_ready')).toBe('the engine is not seeded yet');
    expect(response.headers.get('retry-after')).toBe('1');
  });

  it.each([
    [
      'accept throws',
      {
        accept: () => {
          throw new TypeError('boom at /secret/path');
        },
      },
    ],
    ['accept returns too few results', { accept: () => [] }],
  ] as [string, Partial<ObservationsAppDeps>][])(
    '500 with a generic message when %s, logged',
    async (_name, overrides) => {
      const h = await start(overrides);
      const response = await postObservations(h.server.url, observationsBody(gpuSnapshot()));
      expect(expectError(response, 500, 'internal')).toBe('internal error');
      expect(response.text).not.toMatch(/boom|secret|results for/);
      expect(
        h.logs.some(
          (line) => line.includes('"level":"error"') && line.includes('observations request failed'),
        ),
      ).toBe(true);
    },
  );

  it('counts requests by status and times them', async () => {
    const h = await start();
    await postObservations(h.server.url, observationsBody(gpuSnapshot()));
    await postObservations(h.server.url, observationsBody(gpuSnapshot()), { token: null });
    await postObservations(h.server.url, '{', {});
    expect(await metric(h.registry, 'observation_requests_total')).toEqual({
      'code=200': 1,
      'code=401': 1,
      'code=400': 1,
    });
    const histogram = await metric(h.registry, 'observation_request_duration_seconds');
    expect(histogram['npu_fault_controller_observation_request_duration_seconds_count']).toBe(3);
  });
});

describe('createObservationsApp options', () => {
  const deps = (): ObservationsAppDeps => ({
    authenticate: async () => user(FUNCTION_USER),
    accept: () => [],
    entryFor: () => null,
    leadership: () => ({ leading: false }),
    identity: 'c',
    leaderIdentity: () => null,
    clock: new FakeClock(),
    log: createLogger({ level: 'silent' }),
    registry: new Registry(),
  });

  it.each([
    [{ allowedUsers: [] }, 'observations allowedUsers: expected at least one user'],
    [{ maxBodyBytes: 0 }, 'observations maxBodyBytes: expected a positive integer, got 0'],
    [{ retryAfterSeconds: 1.5 }, 'observations retryAfterSeconds: expected a positive integer, got 1.5'],
    [{ maxBatch: -1 }, 'observations maxBatch: expected a positive integer, got -1'],
  ] as [ObservationsAppOptions, string][])('refuses %j', (options, message) => {
    expect(() => createObservationsApp(deps(), options)).toThrow(message);
  });
});

/**
 * The endpoint on plain node:http answers as the express app it replaced (decisions/0055):
 * the same requests, sent as raw bytes to both, get the same status, headers and body bytes,
 * and leave the same metrics. The reference below is the former app, kept here only to be
 * compared with; its body-parser's two documented differences (a compressed body that does
 * not inflate, UTF-7/UTF-32) are left out.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { OBSERVATIONS_PATH, type PublishedNode } from '../../contracts/index.js';
import { createEngine } from '../../core/engine/index.js';
import {
  AppError,
  FakeClock,
  Registry,
  createLogger,
  httpFailureOf,
  mayHoldPollutingKey,
  sendHttpFailure,
  type RequestHandler,
} from '../../platform/index.js';
import { TokenReviewUnavailableError, UnauthenticatedError, bearerToken } from '../../platform/k8s/index.js';
import type { Leadership } from '../leader-election/index.js';
import { DEFAULT_ALLOWED_USERS, createObservationsApp, type ObservationsAppDeps } from './app.js';
import { createObservationsMetrics } from './metrics.js';
import { gpuSnapshot, observationsBody, serve, type TestServer } from './testing.js';
import { observationsLimit, parseObservationsBody } from './validate.js';

const MAX_BODY_BYTES = 16 * 1024;
const MAX_BATCH = 4;
const FUNCTION_USER = DEFAULT_ALLOWED_USERS[0] as string;

/** The former express app (as of f2c53ca), answering from the same deps. */
function expressReference(deps: ObservationsAppDeps): RequestHandler {
  const allowed = new Set([FUNCTION_USER]);
  const limit = observationsLimit(MAX_BATCH);
  const metrics = createObservationsMetrics(deps.registry, 'controller');
  const log = deps.log.child({ component: 'observations' });
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.use((_req, res, next) => {
    const start = deps.clock.monotonic();
    res.on('finish', () => {
      metrics.requests.inc({ code: String(res.statusCode) });
      metrics.seconds.observe((deps.clock.monotonic() - start) / 1000);
    });
    next();
  });
  app
    .route(OBSERVATIONS_PATH)
    .post(
      async (req: express.Request, _res: express.Response, next: express.NextFunction) => {
        const user = await deps.authenticate(bearerToken(req.headers.authorization));
        if (!allowed.has(user.username))
          throw new AppError('forbidden', `user "${user.username}" may not post observations`, {
            status: 403,
          });
        next();
      },
      (req: express.Request, _res: express.Response, next: express.NextFunction) => {
        const mediaType = req.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase();
        if (mediaType !== 'application/json')
          throw new AppError('unsupported_media_type', 'Content-Type must be application/json', {
            status: 415,
          });
        next();
      },
      express.json({
        limit: MAX_BODY_BYTES,
        strict: true,
        type: () => true,
        verify: (_req: IncomingMessage, res: ServerResponse, raw: Buffer, charset: string) => {
          (res as express.Response).locals.mayPollute = mayHoldPollutingKey(raw, charset);
        },
      }),
      (req: express.Request, res: express.Response) => {
        const request = parseObservationsBody(req.body, limit, res.locals.mayPollute !== false);
        const snapshots = request.observations.map((observation) => observation.snapshot);
        const now = deps.clock.now();
        const accepted = deps.accept(snapshots, now);
        if (accepted.length !== snapshots.length) throw new Error('accept returned too few results');
        const results = snapshots.map((snapshot, i) => {
          const { accepted: ok, dropped } = accepted[i]!;
          metrics.observations.inc({ result: ok ? 'accepted' : (dropped ?? 'unknown') });
          return { node: snapshot.node, accepted: ok, ...(dropped === undefined ? {} : { dropped }) };
        });
        const lead = deps.leadership();
        res.setHeader('Cache-Control', 'no-store');
        if (!lead.leading) {
          const leaderIdentity = deps.leaderIdentity() ?? null;
          res
            .status(200)
            .json({ leader: false, identity: deps.identity, leader_identity: leaderIdentity, results });
          return;
        }
        const entries = new Map<string, PublishedNode | null>();
        const entryOf = (node: string): PublishedNode | null => {
          if (!entries.has(node)) entries.set(node, deps.entryFor(node, now));
          return entries.get(node) ?? null;
        };
        res.status(200).json({
          leader: true,
          identity: deps.identity,
          term: lead.term,
          results: results.map((result) => ({ ...result, entry: entryOf(result.node) })),
        });
      },
    )
    .all(() => {
      throw new AppError('method_not_allowed', `${OBSERVATIONS_PATH} accepts only POST`, { status: 405 });
    });
  app.use(() => {
    throw new AppError('not_found', 'not found', { status: 404 });
  });
  app.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
    sendHttpFailure(res, httpFailureOf(error, MAX_BODY_BYTES), {
      log,
      what: 'observations',
      retryAfterSeconds: 1,
      error,
    }),
  );
  return (req: IncomingMessage, res: ServerResponse) => app(req, res);
}

/** One side: a real engine, a fake clock, its own registry, a leadership the test switches. */
interface Side {
  server: TestServer;
  registry: Registry;
  lead: { current: Leadership };
  fail: { accept?: Error };
}

async function side(build: (deps: ObservationsAppDeps) => RequestHandler): Promise<Side> {
  const engine = createEngine();
  const registry = new Registry();
  const lead: { current: Leadership } = { current: { leading: true, term: 3 } };
  const fail: { accept?: Error } = {};
  const deps: ObservationsAppDeps = {
    authenticate: async (token) => {
      if (token === 'good-token')
        return { username: FUNCTION_USER, uid: 'u', groups: [], extra: {}, audiences: [] };
      if (token === 'other-token')
        return { username: 'someone', uid: 'u', groups: [], extra: {}, audiences: [] };
      if (token === 'review-down') throw new TokenReviewUnavailableError(new Error('connect ECONNREFUSED'));
      throw new UnauthenticatedError('invalid_token', 'the bearer token was not accepted', 'expired');
    },
    accept: (snapshots, now) => {
      if (fail.accept) throw fail.accept;
      return snapshots.map((snapshot) => engine.observe(snapshot, now));
    },
    entryFor: (node) => engine.nodeEntry(node),
    leadership: () => lead.current,
    identity: 'controller-0',
    leaderIdentity: () => 'controller-1',
    clock: new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 30)),
    log: createLogger({ level: 'silent' }),
    registry,
  };
  return { server: await serve(build(deps)), registry, lead, fail };
}

/** An answer as read off the socket: status line, headers but those of the connection, body bytes. */
interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `head` (request line and headers, CRLF-separated, no blank line) and `body` as raw bytes. */
function rawRequest(port: number, head: string, body: Buffer | string = ''): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).toLowerCase();
        if (!['date', 'connection', 'keep-alive'].includes(name))
          headers[name] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, body: text.slice(split + 4) });
    });
    socket.write(`${head}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    socket.write(body); // not ended: the server closes it after answering (Connection: close)
  });
}

/** A request with a Content-Length, JSON typed and a good token unless `headers` says otherwise. */
function post(
  body: Buffer | string,
  headers: Record<string, string | null> = {},
  target = OBSERVATIONS_PATH,
) {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const all: Record<string, string | null> = {
    authorization: 'Bearer good-token',
    'content-type': 'application/json',
    'content-length': String(bytes.length),
    ...headers,
  };
  const lines = Object.entries(all)
    .filter((entry): entry is [string, string] => entry[1] !== null)
    .map(([name, value]) => `${name}: ${value}`);
  return { head: [`POST ${target} HTTP/1.1`, ...lines].join('\r\n'), body: bytes };
}

/** A body sent chunked (no Content-Length), in chunks of `size` bytes. */
function chunked(body: Buffer | string, size: number, headers: Record<string, string | null> = {}) {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) {
    const piece = bytes.subarray(i, i + size);
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return post(Buffer.concat(parts), { 'content-length': null, 'transfer-encoding': 'chunked', ...headers });
}

let seq = 0;
const batch = (...extra: Parameters<typeof gpuSnapshot>[0][]): string =>
  JSON.stringify(
    observationsBody(
      gpuSnapshot({ node: 'gpu-a', seq: ++seq, xids: [79] }),
      gpuSnapshot({ node: 'gpu-b', seq }),
      ...extra.map((options) => gpuSnapshot({ seq, ...options })),
    ),
  );
const good = JSON.stringify(gpuSnapshot());

/** Each case: a name, the request, and the status both must answer. */
const cases: [string, () => { head: string; body: Buffer }, number][] = [
  ['a leader answer', () => post(batch()), 200],
  [
    'a resend (duplicates)',
    () => post(JSON.stringify(observationsBody(gpuSnapshot({ node: 'gpu-a', seq: 1 })))),
    200,
  ],
  ['a chunked body', () => chunked(batch(), 100), 200],
  ['a gzip body', () => post(gzipSync(batch()), { 'content-encoding': 'gzip' }), 200],
  ['a chunked gzip body', () => chunked(gzipSync(batch()), 64, { 'content-encoding': 'GZIP' }), 200],
  ['a deflate body', () => post(deflateSync(batch()), { 'content-encoding': 'deflate' }), 200],
  ['a br body', () => post(brotliCompressSync(batch()), { 'content-encoding': 'br' }), 200],
  ['identity encoding', () => post(batch(), { 'content-encoding': 'identity' }), 200],
  [
    'a UTF-8 byte order mark',
    () => post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(batch())])),
    200,
  ],
  [
    'a UTF-16LE body',
    () => post(Buffer.from(batch(), 'utf16le'), { 'content-type': 'application/json; charset=utf-16le' }),
    200,
  ],
  [
    'Content-Type in capitals with parameters',
    () => post(batch(), { 'content-type': 'Application/JSON; Charset="UTF-8"' }),
    200,
  ],
  ['a query string', () => post(batch(), {}, `${OBSERVATIONS_PATH}?x=1`), 200],
  ['a fragment on the target', () => post(batch(), {}, `${OBSERVATIONS_PATH}#x`), 200],
  ['an absolute-form target', () => post(batch(), {}, `http://127.0.0.1${OBSERVATIONS_PATH}`), 200],
  ['no token', () => post(batch(), { authorization: null }), 401],
  ['a Basic header', () => post(batch(), { authorization: 'Basic Zm9vOmJhcg==' }), 401],
  ['a refused token', () => post(batch(), { authorization: 'Bearer bad-token' }), 401],
  ['TokenReview down', () => post(batch(), { authorization: 'Bearer review-down' }), 503],
  ['another user', () => post(batch(), { authorization: 'Bearer other-token' }), 403],
  [
    'another user, wrong type, too large',
    () =>
      post('x'.repeat(MAX_BODY_BYTES + 1), {
        authorization: 'Bearer other-token',
        'content-type': 'text/plain',
      }),
    403,
  ],
  ['text/plain', () => post(batch(), { 'content-type': 'text/plain' }), 415],
  ['no Content-Type', () => post(batch(), { 'content-type': null }), 415],
  [
    'wrong type and too large',
    () => post('x'.repeat(MAX_BODY_BYTES + 1), { 'content-type': 'application/jsonp' }),
    415,
  ],
  ['latin1', () => post(batch(), { 'content-type': 'application/json; charset=latin1' }), 415],
  ['an unknown Content-Encoding', () => post('xx', { 'content-encoding': 'snappy' }), 415],
  ['too large, declared', () => post(`{"observations":[${' '.repeat(MAX_BODY_BYTES)}]}`), 413],
  ['too large, chunked', () => chunked(`{"observations":[${' '.repeat(MAX_BODY_BYTES)}]}`, 1000), 413],
  [
    'too large once inflated',
    () => post(gzipSync(`{"observations":[${' '.repeat(1024 * 1024)}]}`), { 'content-encoding': 'gzip' }),
    413,
  ],
  ['too large and not JSON', () => post('{'.repeat(MAX_BODY_BYTES + 1)), 413],
  ['truncated JSON', () => post('{"observations":[{"snap'), 400],
  ['a bare string', () => post('"observations"'), 400],
  ['leading whitespace then a number', () => post(' \n 42'), 400],
  ['a control character', () => post('{"a":"\u0001\n'), 400],
  ['an empty body', () => post(''), 400],
  ['no body at all', () => post('', { 'content-length': null }), 400],
  ['an empty chunked body', () => chunked('', 1), 400],
  ['an array', () => post('[]'), 400],
  ['too many observations', () => post(batch({ node: 'gpu-c' }, { node: 'gpu-d' }, { node: 'gpu-e' })), 400],
  [
    'a bad field deep in the batch',
    () => post(batch().replace('"temperature_gpu":', '"temperature_gpu":"hot","x":')),
    400,
  ],
  [
    'a __proto__ key',
    () =>
      post(`{"observations":[{"snapshot":${good.replace('"family":', '"__proto__":{"p":1},"family":')}}]}`),
    400,
  ],
  [
    'a __proto__ key spelled with escapes',
    () =>
      post(
        `{"observations":[{"snapshot":${good.replace('"family":', '"\\u005f\\u005fproto__":{"p":1},"family":')}}]}`,
      ),
    400,
  ],
  [
    'constructor.prototype',
    () => post(`{"observations":[{"constructor":{"prototype":{"p":1}},"snapshot":${good}}]}`),
    400,
  ],
  ['GET', () => ({ head: `GET ${OBSERVATIONS_PATH} HTTP/1.1`, body: Buffer.alloc(0) }), 405],
  [
    'PUT with a body',
    () => {
      const request = post(batch());
      return { ...request, head: request.head.replace('POST', 'PUT') };
    },
    405,
  ],
  ['OPTIONS', () => ({ head: `OPTIONS ${OBSERVATIONS_PATH} HTTP/1.1`, body: Buffer.alloc(0) }), 405],
  ['a trailing slash', () => post(batch(), {}, `${OBSERVATIONS_PATH}/`), 404],
  ['another case', () => post(batch(), {}, OBSERVATIONS_PATH.toUpperCase()), 404],
  ['a percent-encoded path', () => post(batch(), {}, OBSERVATIONS_PATH.replace('o', '%6F')), 404],
  ['a double slash', () => post(batch(), {}, `/${OBSERVATIONS_PATH}`), 404],
  ['the root', () => post(batch(), {}, '/'), 404],
  ['GET /metrics', () => ({ head: 'GET /metrics HTTP/1.1', body: Buffer.alloc(0) }), 404],
];

describe('the node:http endpoint answers as the express app did', () => {
  let plain: Side;
  let reference: Side;
  beforeAll(async () => {
    plain = await side((deps) =>
      createObservationsApp(deps, { maxBatch: MAX_BATCH, maxBodyBytes: MAX_BODY_BYTES }),
    );
    reference = await side(expressReference);
  });
  afterAll(async () => {
    await plain.server.close();
    await reference.server.close();
  });

  const both = async (request: { head: string; body: Buffer }): Promise<[RawAnswer, RawAnswer]> => [
    await rawRequest(reference.server.port, request.head, request.body),
    await rawRequest(plain.server.port, request.head, request.body),
  ];

  it.each(cases)('%s', async (_name, build, status) => {
    const [expected, actual] = await both(build());
    expect(expected.status).toBe(status);
    expect(actual).toEqual(expected);
  });

  it('a follower’s answer, and accept’s failures (503 and a generic 500)', async () => {
    for (const s of [plain, reference]) s.lead.current = { leading: false };
    const [follower, followerPlain] = await both(post(batch()));
    expect(follower.status).toBe(200);
    expect(followerPlain).toEqual(follower);
    for (const s of [plain, reference])
      s.fail.accept = new AppError('not_ready', 'not seeded yet', { status: 503 });
    const [notReady, notReadyPlain] = await both(post(batch()));
    expect(notReady.status).toBe(503);
    expect(notReadyPlain).toEqual(notReady);
    for (const s of [plain, reference]) s.fail.accept = new TypeError('boom at /secret');
    const [internal, internalPlain] = await both(post(batch()));
    expect(internal.status).toBe(500);
    expect(internalPlain).toEqual(internal);
    for (const s of [plain, reference]) {
      s.lead.current = { leading: true, term: 3 };
      delete s.fail.accept;
    }
  });

  it('the 200 answer’s headers are res.json’s: type, length, no-store, no ETag, no X-Powered-By', async () => {
    const [expected, { headers, body }] = await both(post(batch()));
    expect(headers).toEqual(expected.headers);
    expect(headers).toEqual({
      'cache-control': 'no-store',
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
    });
  });

  it('leaves the same metrics (the fake clocks never move, so the durations agree too)', async () => {
    expect(await plain.registry.metrics()).toEqual(await reference.registry.metrics());
    expect(await plain.registry.metrics()).toMatch(/observation_requests_total\{code="415"\} 5/);
  });
});

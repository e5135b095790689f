/**
 * Property tests of the endpoint against hostile bodies, on a real port: whatever the body
 * (random bytes, deep nesting, huge arrays, prototype keys, NaN/Infinity, wrong types,
 * truncated JSON, CloudEvent envelopes, bodies trickled in small pieces), the answer is a 200
 * matching the response schema or a 4xx with a one-line JSON error; never a 5xx, never a
 * crash, and nothing forwarded from a request that was refused.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { request } from 'node:http';
import { ingestErrorSchema, ingestResponseSchema } from '../../contracts/index.js';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import { NODE_NAME_EXTRA, agentUser, createFunctionApp } from './index.js';
import {
  batchBody,
  createFakeForwarder,
  gpuSnapshot,
  postSnapshots,
  serve,
  structuredEvent,
  type FakeForwarder,
  type TestResponse,
  type TestServer,
} from './testing.js';

const MAX_BATCH = 8;
const MAX_BODY_BYTES = 64 * 1024;
const NODE = 'gpu-node-1';

let server: TestServer;
let forwarder: FakeForwarder;

beforeAll(async () => {
  forwarder = createFakeForwarder();
  const handler = createFunctionApp(
    {
      authenticate: async () => ({
        username: agentUser('ai-infra'),
        uid: '',
        groups: [],
        extra: { [NODE_NAME_EXTRA]: [NODE] },
        audiences: ['npu-fault'],
      }),
      forwarder,
      clock: new FakeClock(),
      log: createLogger({ level: 'silent' }),
      registry: new Registry(),
    },
    { maxBatch: MAX_BATCH, maxBodyBytes: MAX_BODY_BYTES },
  );
  server = await serve(handler);
});

afterAll(async () => {
  await server.close();
});

/** The invariant of every answer; returns whether the request was accepted (200). */
function expectWellFormed(response: TestResponse): boolean {
  if (response.status === 200) {
    expect(ingestResponseSchema.safeParse(response.json).success).toBe(true);
    return true;
  }
  expect(response.status).toBeGreaterThanOrEqual(400);
  expect(response.status).toBeLessThan(500);
  const parsed = ingestErrorSchema.safeParse(response.json);
  expect(parsed.success).toBe(true);
  expect(parsed.data?.error.message).not.toMatch(/[\n\r]|\bat .+:\d+:\d+/);
  return false;
}

/** Posts `body` and checks the invariant, including that a refusal forwarded nothing. */
async function check(body: string | Uint8Array, headers?: Record<string, string>): Promise<TestResponse> {
  const before = forwarder.calls.length;
  const response = await postSnapshots(server.url, body, headers ? { headers } : {});
  if (!expectWellFormed(response)) expect(forwarder.calls.length).toBe(before);
  return response;
}

let seq = 0;
const validBody = (): Record<string, unknown> =>
  batchBody(gpuSnapshot({ seq: ++seq, xids: [79] }), gpuSnapshot({ seq: ++seq })) as Record<string, unknown>;

type Path = (string | number)[];

/** Paths of every value inside `value` (containers included), root excluded. */
function pathsOf(value: unknown, prefix: Path = []): Path[] {
  if (value === null || typeof value !== 'object') return [];
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((item: unknown, i) => [i, item])
    : Object.entries(value);
  return entries.flatMap(([key, item]) => [[...prefix, key], ...pathsOf(item, [...prefix, key])]);
}

function setAt(root: unknown, path: Path, value: unknown): void {
  let at = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  at[path[path.length - 1] as string | number] = value;
}

const keys = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'snapshots', 'node', 'seq', 'family', 'data'),
  fc.string({ maxLength: 12 }),
);
const nastyScalars = fc.constantFrom(
  'NaN',
  'Infinity',
  '-Infinity',
  '1e400',
  '',
  '\u0000',
  -1,
  1e308,
  2 ** 53 + 1,
);
const hostileJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 2 }),
    nastyScalars,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(keys, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** Sends `text` in `pieces` writes, yielding to the event loop between them. */
function postTrickled(text: string, cuts: number[]): Promise<TestResponse> {
  const bytes = Buffer.from(text);
  const points = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path: '/v1/snapshots',
        method: 'POST',
        headers: {
          authorization: 'Bearer t',
          'content-type': 'application/json',
          'content-length': String(bytes.length),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(body) as unknown;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: new Headers(), text: body, json });
        });
      },
    );
    req.on('error', reject);
    const write = async (): Promise<void> => {
      let from = 0;
      for (const to of [...points, bytes.length]) {
        req.write(bytes.subarray(from, to));
        from = to;
        await new Promise((next) => setImmediate(next));
      }
      req.end();
    };
    void write();
  });
}

describe('POST /v1/snapshots under hostile bodies', () => {
  it('random bytes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 4096 }), async (bytes) => {
        await check(bytes);
      }),
    );
  });

  it('truncated JSON is always a 400', async () => {
    await fc.assert(
      fc.asyncProperty(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), async (cut) => {
        const text = JSON.stringify(validBody());
        const response = await check(text.slice(0, Math.floor(cut * text.length)));
        expect(response.status).toBe(400);
      }),
    );
  });

  it('any value in any place of a valid body: 200 or a 4xx, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), hostileJson, async (where, value) => {
        const body = validBody();
        const paths = pathsOf(body);
        setAt(body, paths[where % paths.length] as Path, value);
        await check(JSON.stringify(body));
      }),
    );
  });

  it('random JSON bodies, prototype keys included, plain and as CloudEvents', async () => {
    await fc.assert(
      fc.asyncProperty(hostileJson, fc.boolean(), async (value, asEvent) => {
        if (!asEvent) await check(JSON.stringify(value));
        else
          await check(JSON.stringify(structuredEvent(value)), {
            'content-type': 'application/cloudevents+json',
          });
      }),
    );
  });

  it('random CloudEvent envelopes around a valid batch', async () => {
    await fc.assert(
      fc.asyncProperty(fc.dictionary(keys, hostileJson, { maxKeys: 5 }), async (attributes) => {
        const envelope = { ...structuredEvent(validBody()), ...attributes };
        await check(JSON.stringify(envelope), { 'content-type': 'application/cloudevents+json' });
      }),
    );
  });

  it('a __proto__ key in any object of a valid body is refused naming where', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.jsonValue({ maxDepth: 1 }), async (where, value) => {
        const body = validBody();
        const objects = [[], ...pathsOf(body)].filter((path) => {
          let at: unknown = body;
          for (const key of path) at = (at as Record<string | number, unknown>)[key];
          return at !== null && typeof at === 'object' && !Array.isArray(at);
        });
        const path = objects[where % objects.length] as Path;
        setAt(body, [...path, 'polluting-marker'], value);
        const response = await check(JSON.stringify(body).replace('"polluting-marker"', '"__proto__"'));
        expect(response.status).toBe(400);
        const pointer = path.map((key) => `/${key}`).join('');
        expect((response.json as { error: { message: string } }).error.message).toBe(
          `${pointer}/__proto__: forbidden key`,
        );
      }),
    );
  });

  it('deep nesting is refused, not a stack overflow', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1000, max: 20_000 }), fc.boolean(), async (depth, objects) => {
        const text = objects
          ? `${'{"snapshots":'.repeat(depth)}1${'}'.repeat(depth)}`
          : `{"snapshots":${'['.repeat(depth)}${']'.repeat(depth)}}`;
        const response = await check(text);
        expect([400, 413]).toContain(response.status);
      }),
      { numRuns: 20 },
    );
  });

  it('batches above maxBatch and oversized arrays are refused whole', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: MAX_BATCH + 1, max: MAX_BATCH * 20 }),
        fc.integer({ min: 513, max: 3000 }),
        fc.boolean(),
        async (batch, devices, manyDevices) => {
          const body = manyDevices
            ? batchBody({
                ...gpuSnapshot({ seq: ++seq }),
                payload: {
                  family: 'nvidia',
                  gpus: Array.from({ length: devices }, (_, index) => ({ index })),
                },
              })
            : batchBody(...Array.from({ length: batch }, () => gpuSnapshot({ seq: ++seq })));
          const response = await check(JSON.stringify(body));
          expect([400, 413]).toContain(response.status);
        },
      ),
      { numRuns: 30 },
    );
  });

  it('a body trickled in pieces gets the answer it gets whole', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constant(null), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 12 }),
        async (truncate, cuts) => {
          const full = JSON.stringify(validBody());
          const text = truncate === null ? full : full.slice(0, Math.floor(truncate * full.length));
          const before = forwarder.calls.length;
          const response = await postTrickled(text, cuts);
          expect(expectWellFormed(response)).toBe(truncate === null);
          if (truncate !== null) expect(forwarder.calls.length).toBe(before);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('still serves a valid batch afterwards', async () => {
    const response = await check(JSON.stringify(validBody()));
    expect(response.status).toBe(200);
  });
});

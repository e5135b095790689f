/**
 * Property tests of the endpoint against hostile bodies, on a real port with a real engine:
 * whatever the body, the answer is a 200 that matches the response schema or a 4xx with a
 * one-line JSON error; never a 5xx, never a crash, and never an observation accepted from
 * a batch that was refused.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createEngine } from '../../core/engine/index.js';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import { createObservationsApp } from './app.js';
import { observationsErrorSchema, observationsResponseSchema } from '../../contracts/index.js';
import {
  gpuSnapshot,
  observationsBody,
  postObservations,
  serve,
  type TestResponse,
  type TestServer,
} from './testing.js';

const MAX_BATCH = 8;
const MAX_BODY_BYTES = 64 * 1024;

let server: TestServer;
/** Observations accepted so far, to check that a refused batch added none. */
let acceptCalls = 0;

beforeAll(async () => {
  const engine = createEngine();
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 1));
  const handler = createObservationsApp(
    {
      authenticate: async () => ({ username: 'fn', uid: '', groups: [], extra: {}, audiences: [] }),
      accept: (snapshots, now) => {
        acceptCalls++;
        return snapshots.map((snapshot) => engine.observe(snapshot, now));
      },
      entryFor: (node) => engine.nodeEntry(node),
      leadership: () => ({ leading: true, term: 1 }),
      identity: 'controller-0',
      leaderIdentity: () => 'controller-0',
      clock,
      log: createLogger({ level: 'silent' }),
      registry: new Registry(),
    },
    { allowedUsers: ['fn'], maxBatch: MAX_BATCH, maxBodyBytes: MAX_BODY_BYTES },
  );
  server = await serve(handler);
});

afterAll(async () => {
  await server.close();
});

/** The invariant of every answer; returns whether the batch was accepted (200). */
function expectWellFormed(response: TestResponse): boolean {
  if (response.status === 200) {
    expect(observationsResponseSchema.safeParse(response.json).success).toBe(true);
    return true;
  }
  expect(response.status).toBeGreaterThanOrEqual(400);
  expect(response.status).toBeLessThan(500);
  const parsed = observationsErrorSchema.safeParse(response.json);
  expect(parsed.success).toBe(true);
  expect(parsed.data?.error.message).not.toMatch(/[\n\r]|\bat .+:\d+:\d+/);
  return false;
}

/** Posts `body` and checks the invariant, including that a refusal accepted nothing. */
async function check(body: string | Uint8Array): Promise<TestResponse> {
  const before = acceptCalls;
  const response = await postObservations(server.url, body);
  if (!expectWellFormed(response)) expect(acceptCalls).toBe(before);
  return response;
}

/** Valid bodies to start from: a failing node and a healthy one, seq growing per run. */
let seq = 0;
const validBody = (): Record<string, unknown> =>
  observationsBody(gpuSnapshot({ seq: ++seq, xids: [79] }), gpuSnapshot({ node: 'gpu-b', seq })) as Record<
    string,
    unknown
  >;

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
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'observations',
    'snapshot',
    'node',
    'seq',
    'family',
  ),
  fc.string({ maxLength: 12 }),
);
const hostileJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 2 }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(keys, tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe('POST /v1/observations under hostile bodies', () => {
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

  it('random JSON bodies, prototype keys included', async () => {
    await fc.assert(
      fc.asyncProperty(hostileJson, async (value) => {
        await check(JSON.stringify(value));
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
        const text = JSON.stringify(body).replace('"polluting-marker"', '"__proto__"');
        const response = await check(text);
        expect(response.status).toBe(400);
        const pointer = path.map((key) => `/${key}`).join('');
        expect((response.json as { error: { message: string } }).error.message).toBe(
          `${pointer}/__proto__: forbidden key`,
        );
      }),
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
            ? observationsBody({
                ...gpuSnapshot({ seq: ++seq }),
                payload: {
                  family: 'nvidia',
                  gpus: Array.from({ length: devices }, (_, index) => ({ index })),
                },
              })
            : observationsBody(...Array.from({ length: batch }, (_, i) => gpuSnapshot({ seq: ++seq + i })));
          const response = await check(JSON.stringify(body));
          expect([400, 413]).toContain(response.status);
        },
      ),
      { numRuns: 30 },
    );
  });

  it('still serves a valid batch afterwards', async () => {
    const response = await check(JSON.stringify(validBody()));
    expect(response.status).toBe(200);
  });
});

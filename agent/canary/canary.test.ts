import { afterEach, describe, expect, it } from '@jest/globals';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createEngine } from '../../core/engine/index.js';
import { at, npuSnapshot } from '../../core/engine/testing.js';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import { serve, type TestServer } from '../../platform/testing.js';
import { memoryLogger } from '../probe/testing.js';
import { createCanary, type Canary, type CanaryDeps, type CanaryOptions } from './canary.js';
import { canaryConfigSchema } from './config.js';
import {
  STAND_IN_MODEL,
  refusedUrl,
  startStandInInferenceServer,
  type StandInBehaviour,
  type StandInInferenceServer,
} from './testing.js';

const silent = createLogger({ level: 'silent' });
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function standIn(): Promise<StandInInferenceServer> {
  const server = await startStandInInferenceServer();
  closers.push(() => server.close());
  return server;
}

/** The canary's settings as the agent's config gives them: the section's defaults, `url` set. */
function settings(url: string, section: Record<string, unknown> = {}): CanaryOptions {
  return { ...canaryConfigSchema.parse({ url, ...section }), url };
}

interface Harness {
  canary: Canary;
  clock: FakeClock;
  registry: Registry;
}

function canaryFor(options: CanaryOptions, deps: Partial<CanaryDeps> = {}): Harness {
  const clock = new FakeClock();
  const registry = new Registry();
  const canary = createCanary(options, { clock, log: silent, registry, ...deps });
  return { canary, clock, registry };
}

async function checksByResult(registry: Registry): Promise<Record<string, number>> {
  const metric = await registry.getSingleMetric('npu_fault_agent_canary_checks_total')?.get();
  return Object.fromEntries((metric?.values ?? []).map((v) => [String(v.labels.result), v.value]));
}

describe('the inference canary against the stand-in server', () => {
  it('passes on a right answer: the chat request is the fixed prompt, greedy, a few tokens, to the listed model', async () => {
    const server = await standIn();
    const { canary, registry } = canaryFor(settings(server.url));
    expect(canary.verdict()).toEqual({
      ok: true,
      consecutiveFailures: 0,
      at: null,
      result: null,
      error: null,
    });
    await canary.check();
    expect(canary.verdict()).toEqual({
      ok: true,
      consecutiveFailures: 0,
      at: '2026-01-01T00:00:00.000Z',
      result: 'pass',
      error: null,
    });
    expect(server.requests).toEqual([
      { method: 'GET', path: '/v1/models', body: undefined },
      {
        method: 'POST',
        path: '/v1/chat/completions',
        body: {
          model: STAND_IN_MODEL,
          messages: [{ role: 'user', content: 'What is 2+3? Answer with the number only.' }],
          temperature: 0,
          max_tokens: 16,
          stream: false,
        },
      },
    ]);
    expect((await checksByResult(registry)).pass).toBe(1);
  });

  it('fails on a wrong answer, and two in a row are what the engine raises inference-canary-failed on', async () => {
    const server = await standIn();
    const { canary, registry } = canaryFor(settings(server.url));
    const engine = createEngine();
    let seq = 0;
    // What agent.ts sends: the verdict's consecutive failures in the snapshot's `canary`.
    const reasonsAfterSnapshot = (): readonly string[] => {
      seq++;
      engine.observe(
        npuSnapshot({ seq, t: seq, canaryFailures: canary.verdict().consecutiveFailures }, [{ npu: 0 }]),
        at(seq),
      );
      return engine.nodeEntry('node-a')?.npus[0]?.reasons ?? [];
    };

    await canary.check();
    expect(reasonsAfterSnapshot()).not.toContain('inference-canary-failed');
    server.behave('wrong');
    await canary.check();
    expect(canary.verdict()).toMatchObject({
      ok: false,
      consecutiveFailures: 1,
      result: 'wrong-answer',
      error: String.raw`answer "6" does not match /\b5\b/`,
    });
    expect(reasonsAfterSnapshot()).not.toContain('inference-canary-failed');
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: false, consecutiveFailures: 2, result: 'wrong-answer' });
    expect(reasonsAfterSnapshot()).toContain('inference-canary-failed');

    server.behave('right');
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: true, consecutiveFailures: 0, result: 'pass', error: null });
    expect(reasonsAfterSnapshot()).not.toContain('inference-canary-failed');
    expect(await checksByResult(registry)).toMatchObject({ pass: 2, 'wrong-answer': 2, timeout: 0 });
  });

  it('asks /v1/completions with a prompt when api is completions, and judges its text', async () => {
    const server = await standIn();
    const { canary } = canaryFor(
      settings(server.url, {
        api: 'completions',
        model: STAND_IN_MODEL,
        prompt: 'Q: 20 + 22 = ?\nA:',
        seed: 7,
        expect: '42',
      }),
    );
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: true, result: 'pass' });
    expect(server.requests).toEqual([
      {
        method: 'POST',
        path: '/v1/completions',
        body: {
          model: STAND_IN_MODEL,
          prompt: 'Q: 20 + 22 = ?\nA:',
          temperature: 0,
          max_tokens: 16,
          stream: false,
          seed: 7,
        },
      },
    ]);
    server.behave('wrong');
    await canary.check();
    expect(canary.verdict()).toMatchObject({
      ok: false,
      result: 'wrong-answer',
      error: 'answer "43" lacks "42"',
    });
  });

  it.each<[StandInBehaviour, string, string | RegExp]>([
    ['empty', 'empty-answer', 'choices[0].message.content is empty (finish_reason "stop")'],
    ['malformed', 'malformed', 'the answer has no choices'],
    ['not-json', 'malformed', 'the answer is not JSON'],
    [
      'error',
      'http-error',
      'POST /v1/chat/completions answered HTTP 500: "CUDA error: an illegal memory access was encountered"',
    ],
    ['reset', 'unreachable', /^request failed: \S+/],
  ])('fails when the server answers %s: %s', async (behaviour, result, error) => {
    const server = await standIn();
    server.behave(behaviour);
    const { canary, registry } = canaryFor(settings(server.url, { model: STAND_IN_MODEL }));
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: false, consecutiveFailures: 1, result });
    expect(canary.verdict().error).toMatch(error);
    expect(await checksByResult(registry)).toMatchObject({ [result]: 1, pass: 0 });
  });

  it('fails as unreachable when nothing listens (connection refused)', async () => {
    const { canary } = canaryFor(settings(await refusedUrl(), { model: STAND_IN_MODEL }));
    await canary.check();
    expect(canary.verdict()).toMatchObject({
      ok: false,
      result: 'unreachable',
      error: 'request failed: ECONNREFUSED',
    });
  });

  it('fails as timeout when the server takes the request and never answers', async () => {
    const server = await standIn();
    server.behave('silent');
    const { canary, clock, registry } = canaryFor(
      settings(server.url, { model: STAND_IN_MODEL, timeoutMs: 2000 }),
    );
    const checking = canary.check();
    await server.received(1);
    await clock.advance(1999);
    expect(canary.verdict().at).toBeNull(); // still waiting
    await clock.advance(1);
    await checking;
    expect(canary.verdict()).toMatchObject({
      ok: false,
      result: 'timeout',
      error: 'no answer within 2000 ms',
    });
    expect(await checksByResult(registry)).toMatchObject({ timeout: 1 });
  });

  it('passes a slow right answer within the timeout and fails one beyond it', async () => {
    const server = await standIn();
    server.behave('slow');
    const { canary, clock, registry } = canaryFor(settings(server.url, { model: STAND_IN_MODEL }));

    const inTime = canary.check();
    await server.received(1);
    await clock.advance(9_999);
    server.release();
    await inTime;
    expect(canary.verdict()).toMatchObject({ ok: true, result: 'pass' });
    const duration = await registry.getSingleMetric('npu_fault_agent_canary_duration_seconds')?.get();
    const values = (duration?.values ?? []) as Array<{ metricName?: string; value: number }>;
    expect(values.find((v) => v.metricName?.endsWith('_sum'))?.value).toBeCloseTo(9.999);

    const late = canary.check();
    await server.received(2);
    await clock.advance(10_000);
    await late;
    server.release(); // the answer comes after the canary gave up on it
    expect(canary.verdict()).toMatchObject({
      ok: false,
      result: 'timeout',
      error: 'no answer within 10000 ms',
    });
  });

  it('counts the model lookup within the same deadline', async () => {
    let arrived: (path: string) => void = () => undefined;
    const lookup = new Promise<string>((resolve) => (arrived = resolve));
    const server = await serve((req: IncomingMessage) => arrived(req.url ?? '')); // never answers
    closers.push(() => server.close());
    const { canary, clock } = canaryFor(settings(server.origin, { timeoutMs: 1000 }));
    const checking = canary.check();
    expect(await lookup).toBe('/v1/models');
    await clock.advance(1000);
    await checking;
    expect(canary.verdict()).toMatchObject({ result: 'timeout', error: 'no answer within 1000 ms' });
  });
});

describe('the model asked', () => {
  it('is looked up once, kept while checks pass, and looked up again after a failure', async () => {
    const server = await standIn();
    const { canary } = canaryFor(settings(server.url));
    await canary.check();
    await canary.check();
    server.behave('wrong');
    await canary.check();
    server.behave('right');
    await canary.check();
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/models',
      'POST /v1/chat/completions',
      'POST /v1/chat/completions',
      'POST /v1/chat/completions',
      'GET /v1/models',
      'POST /v1/chat/completions',
    ]);
  });

  it('is the configured one when set (no lookup), and a model the server lacks is an http-error', async () => {
    const server = await standIn();
    const { canary } = canaryFor(settings(server.url, { model: 'llama-70b' }));
    await canary.check();
    expect(server.requests.map((r) => r.path)).toEqual(['/v1/chat/completions']);
    expect(canary.verdict()).toMatchObject({
      result: 'http-error',
      error: 'POST /v1/chat/completions answered HTTP 404: "The model `llama-70b` does not exist."',
    });
  });

  it('fails as malformed when the server lists no model', async () => {
    const server = await startStandInInferenceServer({ models: [] });
    closers.push(() => server.close());
    const { canary } = canaryFor(settings(server.url));
    await canary.check();
    expect(canary.verdict()).toMatchObject({
      result: 'malformed',
      error: 'GET /v1/models: no model is listed',
    });
  });
});

describe('the answer check', () => {
  it('with check: false passes any answer in the right shape, but still fails an empty one', async () => {
    const server = await standIn();
    server.behave('wrong');
    const { canary } = canaryFor(settings(server.url, { check: false }));
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: true, result: 'pass' });
    server.behave('empty');
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: false, result: 'empty-answer' });
  });

  it('matches expect case-insensitively', async () => {
    const answers: string[] = ['The answer is FIVE.', 'six'];
    const fetchAnswer: typeof fetch = async () =>
      new Response(JSON.stringify({ choices: [{ message: { content: answers.shift() } }] }), { status: 200 });
    const { canary } = canaryFor(settings('http://inference.test:8000', { model: 'm', expect: 'five' }), {
      fetch: fetchAnswer,
    });
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: true });
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: false, error: 'answer "six" lacks "five"' });
  });

  it('fails an answer over the read cap as malformed, and a redirect as an http-error', async () => {
    const huge: typeof fetch = async () => new Response('x'.repeat(256 * 1024 + 1), { status: 200 });
    const big = canaryFor(settings('http://inference.test:8000', { model: 'm' }), { fetch: huge });
    await big.canary.check();
    expect(big.canary.verdict()).toMatchObject({
      result: 'malformed',
      error: 'the answer is over 262144 bytes',
    });

    let redirected = 0;
    const server: TestServer = await serve((req: IncomingMessage, res: ServerResponse) => {
      if (req.url === '/elsewhere') redirected++;
      res.writeHead(307, { location: '/elsewhere' }).end();
    });
    closers.push(() => server.close());
    const hop = canaryFor(settings(server.origin, { model: 'm' }));
    await hop.canary.check();
    expect(hop.canary.verdict()).toMatchObject({
      result: 'http-error',
      error: 'POST /v1/chat/completions answered HTTP 307',
    });
    expect(redirected).toBe(0);
  });
});

describe('the canary loop', () => {
  it('checks every interval until stopped, logging one line per failing spell', async () => {
    const server = await standIn();
    const { log, lines } = memoryLogger();
    const { canary, clock, registry } = canaryFor(
      settings(server.url, { model: STAND_IN_MODEL, intervalSeconds: 30 }),
      { log },
    );
    const stop = new AbortController();
    const running = canary.start(stop.signal);
    // The n-th check has ended once the metrics count it (the loop then sleeps at once).
    const checked = async (n: number): Promise<void> => {
      const total = async (): Promise<number> =>
        Object.values(await checksByResult(registry)).reduce((a, b) => a + b, 0);
      while ((await total()) < n) await new Promise((resolve) => setImmediate(resolve));
    };
    await checked(1);
    server.behave('wrong');
    for (let n = 2; n <= 4; n++) {
      await clock.advance(30_000);
      await checked(n);
    }
    expect(canary.verdict()).toMatchObject({ consecutiveFailures: 3 });
    server.behave('right');
    await clock.advance(30_000);
    await checked(5);
    expect(canary.verdict()).toMatchObject({ ok: true, consecutiveFailures: 0 });
    stop.abort();
    await running;
    expect(server.requests).toHaveLength(5);
    expect(lines.filter((l) => l.level === 'warn' || l.level === 'info').map((l) => l.msg)).toEqual([
      'inference canary on',
      'inference canary failing',
      'inference canary passes again',
    ]);
    expect(lines.find((l) => l.msg === 'inference canary failing')).toMatchObject({
      result: 'wrong-answer',
      error: String.raw`answer "6" does not match /\b5\b/`,
    });
  });

  it('records nothing for a check the agent stops in the middle of', async () => {
    const server = await standIn();
    server.behave('silent');
    const { canary } = canaryFor(settings(server.url, { model: STAND_IN_MODEL }));
    const stop = new AbortController();
    const checking = canary.check(stop.signal);
    await server.received(1);
    stop.abort();
    await checking;
    expect(canary.verdict()).toMatchObject({ at: null, consecutiveFailures: 0 });
  });
});

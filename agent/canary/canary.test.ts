import { afterEach, describe, expect, it } from '@jest/globals';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FakeClock, createLogger, createRegistry } from '../../platform/index.js';
import { serve, type TestServer } from '../../platform/testing.js';
import { createCanary, type CanaryOptions } from './canary.js';

const log = createLogger({ level: 'silent', component: 'test' });
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** An inference endpoint answering each request with the next scripted reply. */
async function endpoint(
  replies: Array<{ status: number; body: string } | 'hang'>,
): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  server = await serve(async (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    for await (const chunk of req) body += String(chunk);
    bodies.push(body);
    const reply = replies.shift() ?? { status: 200, body: '{"choices":[{"text":"2"}]}' };
    if (reply === 'hang') return; // never answers: the canary's timeout must end it
    res.statusCode = reply.status;
    res.end(reply.body);
  }, '/v1/completions');
  return { url: server.url, bodies };
}

const options = (url: string, extra: Partial<CanaryOptions> = {}): CanaryOptions => ({
  url,
  intervalSeconds: 30,
  timeoutMs: 500,
  body: '{"prompt":"1+1=","max_tokens":1}',
  expect: '"2"',
  ...extra,
});

describe('inference canary', () => {
  it('counts consecutive failures, back to zero on the next pass', async () => {
    const { url, bodies } = await endpoint([
      { status: 500, body: 'boom' },
      { status: 200, body: '{"choices":[{"text":"2"}]}' },
      { status: 200, body: '{"choices":[{"text":"3"}]}' },
      { status: 503, body: 'busy' },
    ]);
    const clock = new FakeClock();
    const canary = createCanary(options(url), { clock, log, registry: createRegistry('agent') });
    expect(canary.verdict()).toEqual({ ok: true, consecutiveFailures: 0, at: null, error: null });
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: false, consecutiveFailures: 1, error: 'HTTP 500' });
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: true, consecutiveFailures: 0, error: null });
    await canary.check();
    expect(canary.verdict()).toMatchObject({
      ok: false,
      consecutiveFailures: 1,
      error: 'answer lacks "\\"2\\""',
    });
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: false, consecutiveFailures: 2, error: 'HTTP 503' });
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: true, consecutiveFailures: 0 });
    expect(bodies[0]).toBe('{"prompt":"1+1=","max_tokens":1}');
  });

  it('counts an endpoint that never answers, or is not there, as a failure', async () => {
    const { url } = await endpoint(['hang']);
    const canary = createCanary(options(url, { timeoutMs: 200 }), {
      clock: new FakeClock(),
      log,
      registry: createRegistry('agent'),
    });
    await canary.check();
    expect(canary.verdict()).toMatchObject({ ok: false, error: 'no answer within 200 ms' });
    const refused = createCanary(options('http://127.0.0.1:9/v1/completions'), {
      clock: new FakeClock(),
      log,
      registry: createRegistry('agent'),
    });
    await refused.check();
    expect(refused.verdict().error).toMatch(/^request failed: /);
  });

  it('checks every interval until stopped', async () => {
    const { url, bodies } = await endpoint([]);
    const clock = new FakeClock();
    const canary = createCanary(options(url), { clock, log, registry: createRegistry('agent') });
    const abort = new AbortController();
    const running = canary.start(abort.signal);
    const until = async (n: number): Promise<void> => {
      while (bodies.length < n || clock.pending === 0) await new Promise((r) => setImmediate(r));
    };
    await until(1);
    await clock.advance(30_000);
    await until(2);
    expect(bodies).toHaveLength(2);
    abort.abort();
    await running;
  });
});

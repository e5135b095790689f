import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { snapshotSchema } from '../contracts/index.js';
import { gpuSnapshot } from '../contracts/testing.js';
import type { ExplainResponse } from '../controller/explain/index.js';
import { createEngine, type NodeExplanation } from '../core/engine/index.js';
import { COMMANDS } from './commands.js';
import {
  describeAnswer,
  ExplainError,
  formatDuration,
  renderExplanation,
  runExplain,
  urlSource,
  type ExplainOptions,
  type ExplainSource,
} from './explain.js';
import { parseTarget } from './clear.js';
import { main } from './main.js';
import { memoryIO } from './testing.js';

const T = Date.UTC(2026, 0, 1);

/** A response from a real engine: gpu0 hot for 3 of 4 samples, gpu1 with a latched XID 79. */
function response(): ExplainResponse {
  const engine = createEngine();
  [40, 90, 91, 92].forEach((temp, i) => {
    const input = gpuSnapshot({ seq: i + 1, collectedAt: new Date(T + i * 10_000).toISOString() });
    const gpus = (input.payload as { gpus: Record<string, unknown>[] }).gpus;
    gpus[0]!.temperature_gpu = temp;
    if (i === 3) gpus[1]!.xid_events = [{ xid: 79, at: input.collected_at }];
    engine.observe(snapshotSchema.parse(input), T + i * 10_000);
  });
  const explanation = engine.explain('gpu-node-1', undefined, T + 32_000) as NodeExplanation;
  return { leader: true, identity: 'controller-0', term: 3, leader_identity: 'controller-0', explanation };
}

const options = (target: string, output: 'text' | 'json' = 'text'): ExplainOptions => ({
  target: parseTarget(target),
  controllerUrl: undefined,
  namespace: 'ai-infra',
  output,
});

const fixed = (answer: () => Promise<ExplainResponse>): ExplainSource => ({
  describe: () => 'test',
  get: answer,
});

describe('npu-fault explain: rendering', () => {
  it('shows the status, reasons with their rules, the window, the timer and the latch with its clear command', () => {
    const text = renderExplanation(response());
    expect(text).toContain('answered by controller-0 (leader, term 3)');
    expect(text).toContain('gpu-node-1/gpu0: HEALTHY since');
    expect(text).toContain('    high-temp (warning): at least 3 of the last 5 samples above 85 °C');
    expect(text).toContain('window: last 4 of 5 samples, oldest first: . H H H');
    expect(text).toContain('healthy → degraded in 60 s');
    expect(text).toContain('gpu-node-1/gpu1: FAILED (xid-79)');
    expect(text).toContain('xid-79 (critical, latched): XID 79 (critical) within the last 5 samples');
    expect(text).toContain('  clear with: npu-fault clear gpu-node-1/gpu1');
    expect(text).toContain('→ unknown (agent-unreachable) in 3 s');
  });

  it('prints the answer as JSON with -o json', async () => {
    const io = memoryIO();
    const answer = response();
    expect(await runExplain(options('gpu-node-1', 'json'), { source: fixed(async () => answer), io })).toBe(
      0,
    );
    expect(JSON.parse(io.out)).toEqual(answer);
  });

  it('formats durations for people', () => {
    expect([formatDuration(42_000), formatDuration(180_000), formatDuration(125_500)]).toEqual([
      '42 s',
      '3 min',
      '2 min 6 s',
    ]);
  });
});

describe('npu-fault explain: errors', () => {
  it('prints a failure in one line and exits 1', async () => {
    const io = memoryIO();
    const source = fixed(async () => {
      throw new ExplainError('the controller at http://x answered forbidden: nope');
    });
    expect(await runExplain(options('gpu-node-1'), { source, io })).toBe(1);
    expect(io.err).toBe('npu-fault explain: the controller at http://x answered forbidden: nope\n');
  });

  it('describes the endpoint’s error answers in one line, with the role a 403 needs', () => {
    const body = JSON.stringify({
      error: { code: 'forbidden', message: 'user "u" may not get explanations' },
    });
    expect(describeAnswer(403, body, 'the controller at http://x')).toBe(
      'the controller at http://x answered forbidden: user "u" may not get explanations ' +
        "(needs 'get' on explanations.npu-fault.io: the npu-fault-operator Role)",
    );
    expect(describeAnswer(404, '{"error":{"message":"node \\"n\\" is not tracked"}}', 'c')).toBe(
      'c answered not found: node "n" is not tracked',
    );
  });

  it('rejects bad usage with exit 2', async () => {
    const io = memoryIO();
    expect(await main(['explain', 'Bad_Node'], io)).toBe(2);
    expect(io.err).toContain('not a Kubernetes node name');
    const io2 = memoryIO();
    expect(await main(['explain', 'n', '-o', 'yaml'], io2)).toBe(2);
    expect(io2.err).toContain('-o must be text or json');
  });

  it('is listed among the commands', () => {
    expect(COMMANDS.explain?.load).toBeDefined();
  });
});

describe('npu-fault explain: --controller-url', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
    server = createServer(handler);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('sends the bearer token to /v1/explain/<node>/<device> and parses the answer', async () => {
    const seen: { url?: string; auth?: string } = {};
    const answer = response();
    const url = await listen((req, res) => {
      seen.url = req.url;
      seen.auth = req.headers.authorization;
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify(answer));
    });
    const got = await urlSource(url, async () => 'Bearer tok').get('gpu-node-1', 'gpu0');
    expect(seen).toEqual({ url: '/v1/explain/gpu-node-1/gpu0', auth: 'Bearer tok' });
    expect(got).toEqual(answer);
  });

  it('turns a 403 into one line', async () => {
    const url = await listen((_req, res) => {
      res.statusCode = 403;
      res.end(JSON.stringify({ error: { code: 'forbidden', message: 'user "x" may not get explanations' } }));
    });
    await expect(urlSource(url, async () => 'Bearer tok').get('n', undefined)).rejects.toThrow(
      `the controller at ${url} answered forbidden: user "x" may not get explanations`,
    );
  });

  it('says when the controller cannot be reached', async () => {
    const url = await listen(() => undefined);
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    await expect(urlSource(url, async () => 'Bearer tok').get('n', undefined)).rejects.toThrow(
      `cannot reach the controller at ${url}: ECONNREFUSED`,
    );
  });
});

import { afterEach, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { snapshotSchema, type ExplainResponse } from '../contracts/index.js';
import { gpuSnapshot } from '../contracts/testing.js';
import { createEngine, type NodeExplanation } from '../core/engine/index.js';
import { COMMANDS } from './commands.js';
import {
  describeAnswer,
  ExplainError,
  formatDuration,
  notAController,
  proxySource,
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

  it('says who holds each device when the agent reported it, and nothing when it did not', () => {
    const answer = response();
    const [gpu0, gpu1] = answer.explanation.devices;
    answer.explanation.devices = [
      { ...gpu0!, pods: [] },
      { ...gpu1!, pods: ['team-a/train-0', 'team-b/infer-1'] },
    ];
    const text = renderExplanation(answer);
    expect(text).toContain('  held by: no pod (the kubelet, through the agent)');
    expect(text).toContain('  held by: team-a/train-0, team-b/infer-1 (the kubelet, through the agent)');
    expect(renderExplanation(response())).not.toContain('held by');
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

  it('describes the endpoint’s error answers in one line', () => {
    const body = JSON.stringify({
      error: { code: 'forbidden', message: 'user "u" may not get explanations' },
    });
    expect(describeAnswer(403, body, 'the controller at http://x')).toBe(
      'the controller at http://x answered forbidden: user "u" may not get explanations',
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

describe('npu-fault explain: through the apiserver (threat: the operator credential sent to a pod)', () => {
  const OPERATOR = 'Bearer operator-cluster-admin-token';
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  /**
   * A stand-in apiserver on loopback that records every request: the Lease names `holder`,
   * the pod is `pod`, a TokenRequest answers `minted`, and the pod proxy answers an
   * explanation. (Which headers the real proxy passes on is the apiserver's documented
   * behaviour; what the CLI puts where is what is tested here.)
   */
  async function apiserver(
    pod: k8s.V1Pod,
    proxyStatus = 200,
  ): Promise<{ config: k8s.KubeConfig; seen: IncomingMessage[] }> {
    const seen: IncomingMessage[] = [];
    const answer = response();
    server = createServer((req, res) => {
      seen.push(req);
      res.setHeader('Content-Type', 'application/json');
      const url = req.url ?? '';
      if (url.includes('/leases/'))
        return void res.end(JSON.stringify({ spec: { holderIdentity: pod.metadata?.name } }));
      if (url.endsWith('/serviceaccounts/npu-fault-explain/token'))
        return void res.end(JSON.stringify({ status: { token: 'minted-explain-token' } }));
      if (url.includes('/proxy/')) {
        res.statusCode = proxyStatus;
        return void res.end(
          proxyStatus === 200
            ? JSON.stringify(answer)
            : JSON.stringify({
                kind: 'Status',
                status: 'Failure',
                message: 'error trying to reach service',
                code: proxyStatus,
              }),
        );
      }
      if (url.includes('/pods/')) return void res.end(JSON.stringify(pod));
      res.statusCode = 404;
      res.end('{}');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const config = new k8s.KubeConfig();
    config.loadFromOptions({
      clusters: [
        {
          name: 'c',
          server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          skipTLSVerify: true,
        },
      ],
      users: [{ name: 'u', token: OPERATOR.slice('Bearer '.length) }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return { config, seen };
  }

  const controllerPod = (over: Partial<k8s.V1Pod> = {}): k8s.V1Pod => ({
    metadata: {
      name: 'npu-fault-controller-abc',
      labels: { 'app.kubernetes.io/name': 'npu-fault-controller' },
    },
    spec: { serviceAccountName: 'npu-fault-controller', containers: [] },
    ...over,
  });

  it('sends the pod only a minted explain token; the operator credential goes to the apiserver alone', async () => {
    const { config, seen } = await apiserver(controllerPod());
    const got = await proxySource(config, 'ai-infra').get('gpu-node-1', 'gpu0');
    expect(got.identity).toBe('controller-0');
    const proxied = seen.filter((r) => r.url?.includes('/proxy/'));
    expect(proxied).toHaveLength(1);
    // client-node escapes the path parameter; the apiserver routes on the decoded path.
    expect(decodeURIComponent(proxied[0]!.url!)).toBe(
      '/api/v1/namespaces/ai-infra/pods/npu-fault-controller-abc:8080/proxy/v1/explain/gpu-node-1/gpu0',
    );
    // Authorization is the apiserver's to read and is not passed on by its proxy; the header the
    // pod sees carries the minted token, never the operator's.
    expect(proxied[0]!.headers['x-npu-fault-authorization']).toBe('Bearer minted-explain-token');
    for (const req of seen)
      for (const [name, value] of Object.entries(req.headers))
        if (name !== 'authorization') expect(String(value)).not.toContain('operator-cluster-admin-token');
    const mint = seen.find((r) => r.url?.endsWith('/token'));
    expect(mint?.method).toBe('POST');
  });

  it.each([
    [
      'another ServiceAccount',
      controllerPod({ spec: { serviceAccountName: 'tenant', containers: [] } }),
      'ServiceAccount tenant',
    ],
    [
      'no controller label',
      controllerPod({ metadata: { name: 'npu-fault-controller-abc', labels: {} } }),
      'label',
    ],
  ])('refuses to send a token to a Lease holder with %s, and mints none', async (_what, pod, reason) => {
    const { config, seen } = await apiserver(pod);
    await expect(proxySource(config, 'ai-infra').get('gpu-node-1', undefined)).rejects.toThrow(
      new RegExp(`names pod npu-fault-controller-abc, which is not a controller \\(.*${reason}`),
    );
    expect(seen.filter((r) => r.url?.includes('/token') || r.url?.includes('/proxy/'))).toEqual([]);
  });

  it('says what to do when the apiserver cannot reach the pod (a NetworkPolicy)', async () => {
    const { config } = await apiserver(controllerPod(), 503);
    await expect(proxySource(config, 'ai-infra').get('gpu-node-1', undefined)).rejects.toThrow(
      /controller-from-apiserver\.example\.yaml, or use kubectl port-forward and --controller-url\)$/,
    );
  });

  it('takes a pod of the controller ServiceAccount and label, not one being deleted', () => {
    expect(notAController(controllerPod())).toBeUndefined();
    expect(
      notAController(
        controllerPod({
          metadata: {
            name: 'x',
            labels: { 'app.kubernetes.io/name': 'npu-fault-controller' },
            deletionTimestamp: new Date(),
          },
        }),
      ),
    ).toBe('it is being deleted');
  });
});

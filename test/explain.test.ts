/**
 * `npu-fault explain` on the real control plane: a controller process under its shipped RBAC,
 * fed a hot device as the ingest function feeds it, asked by the CLI acting as a ServiceAccount
 * bound to the shipped operator roles (k8s/operator/). The CLI mints a token of the
 * npu-fault-explain ServiceAccount through the apiserver (the operator's RBAC decides) and
 * sends only that to the controller, through a recording proxy that proves the operator's own
 * token never leaves for anything but the apiserver (threat: a pod, or whoever answers on the
 * controller's address, collecting operator credentials). A caller without the role is refused
 * by the apiserver, in one line.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { main } from '../cli/main.js';
import { memoryIO } from '../cli/testing.js';
import { EXPLAIN_SERVICE_ACCOUNT, EXPLAIN_TOKEN_AUDIENCE } from '../contracts/index.js';
import { createTestNamespace, type TestNamespace } from './setup/cluster.js';
import { startTestReplica, writeKubeConfig, type ControllerProcess } from './setup/controller-process.js';
import {
  controllerAccess,
  operatorAccess,
  type ControllerAccess,
  functionCallerToken,
} from './setup/controller-rbac.js';
import { Fleet, Poster, StatusFollower, statusIn } from './setup/fleet.js';

describe('npu-fault explain against a controller on the real control plane', () => {
  let ns: TestNamespace;
  let controller: ControllerAccess;
  let operator: ControllerAccess;
  let core: k8s.CoreV1Api;
  let replica: ControllerProcess;
  let url: string;
  let poster: Poster;
  let follower: StatusFollower;
  let node: string;
  let operatorConfig: string;
  let operatorToken: string;
  let nobodyConfig: string;
  let recorder: Server;
  let recorded: { url: string; headers: string }[];
  let recorderUrl: string;

  async function explain(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const io = memoryIO();
    const code = await main(
      ['explain', ...args, `--controller-url=${recorderUrl}`, `--namespace=${ns.name}`],
      io,
    );
    return { code, out: io.out, err: io.err };
  }

  /** Stands between the CLI and the controller, keeping every request's headers. */
  async function startRecorder(): Promise<void> {
    recorded = [];
    recorder = createServer((req, res) => {
      recorded.push({ url: req.url ?? '', headers: JSON.stringify(req.headers) });
      const upstream = request(
        `${url}${req.url ?? ''}`,
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
    recorderUrl = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    ns = await createTestNamespace('explain');
    controller = await controllerAccess(ns);
    operator = await operatorAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    const functionToken = await functionCallerToken(ns);
    node = `${ns.name}-hot`;
    await core.createNode({
      body: {
        metadata: { name: node, labels: { 'npu-fault-test': ns.name } },
        status: { capacity: { 'huawei.com/Ascend910': '8' } },
      },
    });
    replica = await startTestReplica({
      identity: 'replica-1',
      namespace: ns.name,
      access: controller,
      args: [
        '--nodes-resource-names=example.invalid/none',
        `--nodes-label-selector=npu-fault-test=${ns.name}`,
        '--no-mirrors-enabled',
      ],
    });
    url = `http://127.0.0.1:${await replica.port('observations')}`;
    await replica.waitForLog((l) => l.msg === 'started leading', 60_000, 'leading');
    operatorConfig = writeKubeConfig(operator.kubeConfig);
    operatorToken = operator.kubeConfig.getCurrentUser()?.token ?? '';
    await startRecorder();
    nobodyConfig = writeKubeConfig(await ns.serviceAccountKubeConfig('nobody'));
    follower = new StatusFollower(ns.admin, ns.name);
    follower.start();
    const fleet = new Fleet([node], 'boot-1');
    fleet.faults.set(`${node}/npu1`, { temp: 97 });
    poster = new Poster(fleet, functionToken, () => [{ identity: 'replica-1', url }]);
    poster.start();
    // Three hot samples of five make the high-temp signal active (the device is still healthy).
    await follower.waitFor(
      (d) => d.nodes[node]?.npus.find((x) => x.id === 'npu1')?.signals.includes('high-temp') ?? false,
      30_000,
      'npu1 high-temp signal',
    );
  }, 120_000);

  afterAll(async () => {
    poster?.stop();
    follower?.stop();
    await new Promise<void>((resolve) => (recorder ? recorder.close(() => resolve()) : resolve()));
    await replica?.stop('SIGKILL');
    await core?.deleteNode({ name: node }).catch(() => undefined);
    await operator?.dispose();
    await controller?.dispose();
    await ns?.dispose();
  });

  it('shows a hot device: the rule, the window and the timer to degraded', async () => {
    recorded.length = 0;
    const { code, out, err } = await explain([`${node}/npu1`, `--kubeconfig=${operatorConfig}`]);
    expect([code, err]).toEqual([0, '']);
    expect(out).toContain('answered by replica-1 (leader, term');
    expect(out).toContain(`${node}/npu1: HEALTHY since`);
    expect(out).toMatch(/high-temp \(warning\): at least \d+ of the last \d+ samples above \d+ °C/);
    expect(out).toMatch(/window: last \d+ of \d+ samples, oldest first: [.H ]*H H H/);
    expect(out).toMatch(/healthy → degraded in \d+ s/);
    expect(statusIn(follower.seen.at(-1)!.document, node, 'npu1')).toBe('healthy');

    const json = await explain([`${node}/npu1`, `--kubeconfig=${operatorConfig}`, '-o', 'json']);
    expect(json.code).toBe(0);
    const answer = JSON.parse(json.out) as {
      leader: boolean;
      identity: string;
      explanation: { tracked?: boolean };
    };
    expect(answer).toMatchObject({ leader: true, identity: 'replica-1' });
    // What reached the controller: a minted explain token, never the operator's own.
    expect(recorded.length).toBeGreaterThanOrEqual(2);
    expect(operatorToken.length).toBeGreaterThan(100);
    for (const r of recorded) {
      expect(r.headers).not.toContain(operatorToken);
      expect(r.headers).toMatch(/"authorization":"Bearer ey/);
    }
  });

  it("refuses the operator's own apiserver token and another account's explain-audience token", async () => {
    const status = async (token: string): Promise<number> =>
      (await fetch(`${url}/v1/explain/${node}`, { headers: { Authorization: `Bearer ${token}` } })).status;
    expect(await status(operatorToken)).toBe(401);
    const other = await core.createNamespacedServiceAccountToken({
      name: 'nobody',
      namespace: ns.name,
      body: { spec: { audiences: [EXPLAIN_TOKEN_AUDIENCE], expirationSeconds: 600 } },
    });
    expect(await status(other.status?.token ?? '')).toBe(401);
    const minted = await core.createNamespacedServiceAccountToken({
      name: EXPLAIN_SERVICE_ACCOUNT,
      namespace: ns.name,
      body: { spec: { audiences: [EXPLAIN_TOKEN_AUDIENCE], expirationSeconds: 600 } },
    });
    expect(await status(minted.status?.token ?? '')).toBe(200);
  });

  it('names what is not tracked, and refuses a caller without the operator role in one line', async () => {
    const unknown = await explain([`${node}/npu42`, `--kubeconfig=${operatorConfig}`]);
    expect(unknown.code).toBe(1);
    expect(unknown.err.trim().split('\n')).toHaveLength(1);
    expect(unknown.err).toContain('npu42');

    const refused = await explain([`${node}/npu1`, `--kubeconfig=${nobodyConfig}`]);
    expect(refused.code).toBe(1);
    expect(refused.err.trim().split('\n')).toHaveLength(1);
    expect(refused.err).toMatch(/forbidden/i);
    expect(refused.err).toContain('serviceaccounts/token');
  });
});

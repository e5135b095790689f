/**
 * `npu-fault explain` on the real control plane: a controller process under its shipped RBAC,
 * fed a hot device as the ingest function feeds it, asked by the CLI acting as a ServiceAccount
 * bound to the shipped operator roles (k8s/operator/): the controller checks the token with
 * TokenReview and the permission with a SubjectAccessReview (`get explanations.npu-fault.io`).
 * A ServiceAccount without the roles gets a one-line 403.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { main } from '../cli/main.js';
import { memoryIO } from '../cli/testing.js';
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
  let nobodyConfig: string;

  async function explain(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const io = memoryIO();
    const code = await main(['explain', ...args, `--controller-url=${url}`, `--namespace=${ns.name}`], io);
    return { code, out: io.out, err: io.err };
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
    await replica?.stop('SIGKILL');
    await core?.deleteNode({ name: node }).catch(() => undefined);
    await operator?.dispose();
    await controller?.dispose();
    await ns?.dispose();
  });

  it('shows a hot device: the rule, the window and the timer to degraded', async () => {
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
    expect(refused.err).toContain('explanations');
  });
});

/**
 * Kubernetes' own view of a node (issue 29, item 4), on the real control plane: one controller
 * replica as a real process under its shipped RBAC, fed over HTTP as the ingest function feeds
 * it, while the Node's status conditions are patched as node-problem-detector and the kubelet
 * write them.
 *
 * - `KernelDeadlock=True` (NPD): the rules' default `node_conditions` map it to the critical
 *   node reason `kernel-deadlock`; the ConfigMap shows the node's devices `unknown` with it as
 *   their reason within the write budget.
 * - `KernelDeadlock=False` with `MemoryPressure=True` (kubelet): the overlay lifts; the warning
 *   `node-memory-pressure` is a signal on every device, which stay healthy.
 * - Every condition False: the node leaves the document.
 *
 * The node carries a resource name of its own (`--nodes-resource-names`), so Nodes of tests
 * running beside this one do not count in this controller's document.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { controllerAccess, type ControllerAccess, functionCallerToken } from './setup/controller-rbac.js';
import { startTestReplica, type ControllerProcess } from './setup/controller-process.js';
import { createTestNamespace, type TestNamespace } from './setup/cluster.js';
import { Fleet, Poster, StatusFollower } from './setup/fleet.js';

const RESOURCE = 'node-conditions.test/npu';
const MERGE_PATCH = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
/** The ConfigMap is written every 1.0–1.2 s (CONTRACT §5.4); the Node watch adds its event. */
const WITHIN_MS = 5_000;

describe("the Node's own conditions on the real control plane", () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  let follower: StatusFollower;
  let replica: ControllerProcess;
  let poster: Poster | undefined;
  let name = '';

  const condition = (type: string, status: string, reason: string): k8s.V1NodeCondition => ({
    type,
    status,
    reason,
    message: `${type} is ${status} (test)`,
    lastHeartbeatTime: new Date(),
    lastTransitionTime: new Date(),
  });
  /** Replaces the Node's conditions (a merge patch replaces the list), Ready always True. */
  const setConditions = (...conditions: k8s.V1NodeCondition[]): Promise<k8s.V1Node> =>
    core.patchNodeStatus(
      {
        name,
        body: { status: { conditions: [condition('Ready', 'True', 'KubeletReady'), ...conditions] } },
      },
      MERGE_PATCH,
    );

  beforeAll(async () => {
    ns = await createTestNamespace('node-conditions');
    access = await controllerAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    const functionToken = await functionCallerToken(ns);
    follower = new StatusFollower(ns.admin, ns.name);
    follower.start();
    name = `${ns.name}-n0`;
    await core.createNode({
      body: {
        metadata: { name },
        status: {
          capacity: { [RESOURCE]: '8' },
          conditions: [condition('Ready', 'True', 'KubeletReady')],
        },
      },
    });
    replica = await startTestReplica({
      identity: 'replica-1',
      namespace: ns.name,
      access,
      args: [`--nodes-resource-names=${RESOURCE}`],
    });
    const url = `http://127.0.0.1:${await replica.port('observations')}`;
    await replica.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading');
    poster = new Poster(new Fleet([name], 'boot-1'), functionToken, () => [{ identity: 'replica-1', url }]);
    poster.start();
  });

  afterAll(async () => {
    poster?.stop();
    follower?.stop();
    await replica?.stop('SIGKILL');
    if (name !== '') await core?.deleteNode({ name }).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
  });

  it('publishes KernelDeadlock=True as kernel-deadlock on the node’s devices, and lifts it when False', async () => {
    // The node reports, healthy: listed nowhere, but counted.
    await follower.waitFor((d) => d.cluster_summary.healthy === 8, 30_000, 'eight healthy devices');

    const deadlockAt = Date.now();
    await setConditions(
      condition('KernelDeadlock', 'True', 'DockerHung'),
      condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory'),
      condition('SomeoneElses', 'True', 'Whatever'),
      condition('ReadonlyFilesystem', 'Perhaps', 'OddStatus'),
    );
    const deadlocked = await follower.waitFor(
      (d) => d.nodes[name]?.npus.length === 8 && d.nodes[name]?.npus[0]?.reason === 'kernel-deadlock',
      WITHIN_MS,
      'kernel-deadlock on the node',
      deadlockAt,
    );
    expect(deadlocked.at - deadlockAt).toBeLessThan(WITHIN_MS);
    expect(deadlocked.document.nodes[name]?.summary).toMatchObject({ total: 8, unknown: 8 });
    for (const device of deadlocked.document.nodes[name]?.npus ?? []) {
      expect(device).toMatchObject({
        status: 'unknown',
        reason: 'kernel-deadlock',
        reasons: ['kernel-deadlock'],
      });
    }

    const pressureAt = Date.now();
    await setConditions(
      condition('KernelDeadlock', 'False', 'KernelHasNoDeadlock'),
      condition('MemoryPressure', 'True', 'KubeletHasInsufficientMemory'),
    );
    const pressure = await follower.waitFor(
      (d) => d.nodes[name]?.npus.every((x) => x.status === 'healthy') === true,
      WITHIN_MS,
      'kernel-deadlock lifted',
      pressureAt,
    );
    expect(pressure.document.nodes[name]?.npus.map((x) => [x.status, x.reason, x.signals])).toEqual(
      Array.from({ length: 8 }, () => ['healthy', null, ['node-memory-pressure']]),
    );

    const clearAt = Date.now();
    await setConditions(
      condition('KernelDeadlock', 'False', 'KernelHasNoDeadlock'),
      condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory'),
    );
    const clear = await follower.waitFor(
      (d) => d.nodes[name] === undefined,
      WITHIN_MS,
      'the node healthy again',
      clearAt,
    );
    expect(clear.document.cluster_summary).toMatchObject({ total: 8, healthy: 8 });
  });
});

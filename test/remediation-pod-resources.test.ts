/**
 * Which pods hold which device, end to end on the real control plane: a fake kubelet serves
 * PodResources (the kubelet's own proto) on a unix socket, the agent's reader (the real gRPC
 * client, agent/pod-resources) reads it and its holders go with the node's snapshots to an
 * `npu-fault controller` process running under the controller's shipped RBAC; one device of a
 * kwok node fails. Proven: the published entry of the failed device lists exactly the pods the
 * kubelet names, and the per-device drain evicts exactly those: not the pod whose (tenant-
 * writable) annotation claims the failed device, not the accelerator pod without an annotation
 * (which the annotation fallback would evict), not a pod asking for no accelerator even though
 * the agent names it.
 *
 * Every wait is on an observable event (a watch of the ConfigMap or the pods) with a deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import {
  createPodResourcesClient,
  createPodResourcesReader,
  type PodResourcesReader,
} from '../agent/pod-resources/index.js';
import {
  containerWith,
  startFakePodResources,
  type FakePodResources,
} from '../agent/pod-resources/testing.js';
import { createLogger, createRegistry, systemClock } from '../platform/index.js';
import { applyRemediationSettings, nodeWhere, recordOf } from './setup/remediation.js';
import { createTestNamespace, kwokAvailable, watchUntil, type TestNamespace } from './setup/cluster.js';
import { controllerAccess, functionCallerToken, type ControllerAccess } from './setup/controller-rbac.js';
import { startTestReplica, type ControllerProcess } from './setup/controller-process.js';
import { Fleet, Poster, StatusFollower, statusIn } from './setup/fleet.js';

const suite = kwokAvailable() ? describe : describe.skip;

suite('per-device drain from the kubelet’s PodResources, on the real control plane', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  let replica: ControllerProcess;
  let follower: StatusFollower;
  let poster: Poster;
  let fleet: Fleet;
  let kubelet: FakePodResources;
  let reader: PodResourcesReader;
  let node: string;
  const measured: Record<string, number> = {};

  /** A pod on `node`; `accelerator` is the extended resource it asks for, if any. */
  async function pod(
    name: string,
    accelerator?: string,
    annotations: Record<string, string> = {},
  ): Promise<void> {
    await core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name, annotations, labels: { app: name } },
        spec: {
          nodeName: node,
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: 'main',
              image: 'registry.invalid/worker:1',
              ...(accelerator ? { resources: { limits: { [accelerator]: '1' } } } : {}),
            },
          ],
        },
      },
    });
  }

  /** The pods on the node now, by name. */
  async function podNames(): Promise<string[]> {
    const list = await core.listNamespacedPod({ namespace: ns.name, fieldSelector: `spec.nodeName=${node}` });
    return list.items.map((p) => p.metadata?.name ?? '').sort();
  }

  /** Waits until the pods on the node satisfy `predicate` (a watch, with a deadline). */
  async function podsUntil(predicate: (names: string[]) => boolean, what: string, timeoutMs = 60_000) {
    const names = new Set(await podNames());
    if (predicate([...names].sort())) return;
    await watchUntil<k8s.V1Pod>(
      ns.admin,
      `/api/v1/namespaces/${ns.name}/pods`,
      (p, type) => {
        if (p.spec?.nodeName !== node) return false;
        if (type === 'DELETED') names.delete(p.metadata?.name ?? '');
        else names.add(p.metadata?.name ?? '');
        return predicate([...names].sort());
      },
      { timeoutMs, what },
    );
  }

  beforeAll(async () => {
    ns = await createTestNamespace('pod-resources');
    access = await controllerAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    node = `${ns.name}-n0`;
    await core.createNode({
      body: {
        metadata: {
          name: node,
          annotations: { 'kwok.x-k8s.io/node': 'fake' },
          labels: { 'kubernetes.io/hostname': node, type: 'kwok', 'npu-fault-test': ns.name },
        },
      },
    });
    await nodeWhere(
      ns.admin,
      node,
      (n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      'Ready',
      60_000,
    );

    // What the node's kubelet says: train-0 and infer-0 (a vNPU on chip 1) hold Ascend910-1,
    // other-0 holds Ascend910-0; web is named on Ascend910-1 too, as a lying agent could.
    kubelet = await startFakePodResources(() => ({
      response: {
        pod_resources: [
          {
            name: 'train-0',
            namespace: ns.name,
            containers: [containerWith('main', { 'huawei.com/Ascend910': ['Ascend910-1'] })],
          },
          {
            name: 'infer-0',
            namespace: ns.name,
            containers: [containerWith('main', { 'huawei.com/Ascend910-2c': ['Ascend910-2c-100-1'] })],
          },
          {
            name: 'other-0',
            namespace: ns.name,
            containers: [containerWith('main', { 'huawei.com/Ascend910': ['Ascend910-0'] })],
          },
          {
            name: 'web',
            namespace: ns.name,
            containers: [containerWith('main', { 'huawei.com/Ascend910': ['Ascend910-1'] })],
          },
        ],
      },
    }));
    reader = createPodResourcesReader(
      { periodMs: 5000, socket: kubelet.socket },
      {
        client: createPodResourcesClient({
          socket: kubelet.socket,
          timeoutMs: 2000,
          maxMessageBytes: 1 << 20,
        }),
        clock: systemClock,
        log: createLogger({ level: 'silent' }),
        registry: createRegistry('agent'),
      },
    );
    expect(await reader.read()).toBe('ok');

    replica = await startTestReplica({
      identity: 'replica-1',
      namespace: ns.name,
      access,
      args: [
        '--nodes-resource-names=example.invalid/none',
        `--nodes-label-selector=npu-fault-test=${ns.name}`,
        '--no-mirrors-enabled',
      ],
    });
    const url = `http://127.0.0.1:${await replica.port('observations')}`;
    await replica.waitForLog((l) => l.msg === 'seeded', 60_000, 'seeded');
    await replica.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading');
    follower = new StatusFollower(ns.admin, ns.name);
    follower.start();
    fleet = new Fleet([node], 'boot-1');
    // The agent's snapshots carry the holders of its last read of the kubelet.
    fleet.holders.set(node, reader.holders() ?? []);
    poster = new Poster(fleet, await functionCallerToken(ns), () => [{ identity: 'replica-1', url }]);
    poster.start();
    await follower.waitFor((d) => !d.unobserved.includes(node), 30_000, 'node observed');
  }, 180_000);

  afterAll(async () => {
    poster?.stop();
    follower?.stop();
    await replica?.stop('SIGKILL');
    await kubelet?.close();
    await core?.deleteNode({ name: node }).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
    if (Object.keys(measured).length > 0)
      console.log(`per-device drain from PodResources:\n${JSON.stringify(measured, null, 2)}`);
  });

  it('publishes the failed device’s holders and evicts exactly them', async () => {
    await pod('train-0', 'huawei.com/Ascend910', { 'huawei.com/AscendReal': 'Ascend910-0' });
    await pod('infer-0', 'huawei.com/Ascend910-2c');
    // Claims the failed device in its annotation; the kubelet says it holds another.
    await pod('other-0', 'huawei.com/Ascend910', { 'huawei.com/AscendReal': 'Ascend910-1' });
    // Asks for an accelerator, no annotation: the annotation fallback would evict it.
    await pod('silent-0', 'huawei.com/Ascend910');
    await pod('web');
    await podsUntil((names) => names.length === 5, 'five pods on the node');
    await applyRemediationSettings(core, ns.name, [replica], {
      mode: 'drain',
      breaker: { maxUnhealthyNodes: 3 },
      drain: { perDevice: true, podTimeoutSeconds: 30, timeoutSeconds: 90 },
    });

    const injected = Date.now();
    fleet.faults.set(`${node}/npu1`, { link: 'down' });
    const failed = await follower.waitFor(
      (d) => statusIn(d, node, 'npu1') === 'failed',
      15_000,
      'npu1 failed',
      injected,
    );
    const entry = failed.document.nodes[node];
    expect(entry?.npus.find((d) => d.id === 'npu1')?.pods).toEqual([
      `${ns.name}/infer-0`,
      `${ns.name}/train-0`,
      `${ns.name}/web`,
    ]);
    // Healthy devices are not listed, so who holds them is not published.
    expect(entry?.npus.map((d) => d.id)).toEqual(['npu1']);

    await podsUntil(
      (names) => !names.includes('train-0') && !names.includes('infer-0'),
      'the holders of npu1 evicted',
      90_000,
    );
    const evictedAt = Date.now();
    const drained = await nodeWhere(
      ns.admin,
      node,
      (n) => recordOf(n)?.phase === 'drained',
      'record drained',
    );
    expect(recordOf(drained)?.devices).toEqual(['Ascend910-1']);
    expect(await podNames()).toEqual(['other-0', 'silent-0', 'web']);
    measured['fault injected → ConfigMap lists npu1 failed with its pods (ms)'] = failed.at - injected;
    measured['ConfigMap shows failed → both holders gone (ms)'] = evictedAt - failed.at;
  });
});

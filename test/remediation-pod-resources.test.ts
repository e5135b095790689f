/**
 * Which pods hold which device, end to end on the real control plane: a fake kubelet serves
 * PodResources (the kubelet's own proto) on a unix socket, the agent's reader (the real gRPC
 * client, agent/pod-resources) reads it and its holders go with the node's snapshots to an
 * `npu-fault controller` process running under the controller's shipped RBAC; one device of a
 * kwok node fails. Proven: the published entry of the failed device lists exactly the pods the
 * kubelet names, and the per-device drain evicts those, plus (an Ascend device: Volcano may
 * mount another device than the kubelet's pick) the accelerator pod whose AscendReal annotation
 * names the failed device; not the accelerator pod without an annotation (which the annotation
 * fallback would evict), not a pod asking for no accelerator even though the agent names it. On a second node the kubelet also names a MIG slice, a DRA claim and an
 * NVIDIA index-strategy id, which the agent cannot map: it sends no holders at all, the failed
 * device is published without `pods`, and the drain falls back to the annotations, evicting the
 * accelerator pod that may hold it.
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
import {
  applyRemediationSettings,
  createReadyKwokNodes,
  onlyTheseNodesArgs,
  nodeWhere,
  recordOf,
} from './setup/remediation.js';
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
  let unmappedKubelet: FakePodResources;
  let reader: PodResourcesReader;
  let node: string;
  let unmappedNode: string;
  const measured: Record<string, number> = {};

  /** A pod on `on`; `accelerator` is the extended resource it asks for, if any. */
  async function pod(
    name: string,
    accelerator?: string,
    annotations: Record<string, string> = {},
    on = node,
  ): Promise<void> {
    await core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name, annotations, labels: { app: name } },
        spec: {
          nodeName: on,
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

  /** The pods on the node `on` now (only the Running ones with `running`), by name. */
  async function podNames(on = node, running = false): Promise<string[]> {
    const list = await core.listNamespacedPod({ namespace: ns.name, fieldSelector: `spec.nodeName=${on}` });
    return list.items
      .filter((p) => !running || p.status?.phase === 'Running')
      .map((p) => p.metadata?.name ?? '')
      .sort();
  }

  /**
   * Waits until the pods on the node `on` (only the Running ones with `running`: kwok finishes
   * an eviction only of a pod it runs) satisfy `predicate` (a watch, with a deadline).
   */
  async function podsUntil(
    predicate: (names: string[]) => boolean,
    what: string,
    timeoutMs = 60_000,
    on = node,
    running = false,
  ) {
    const names = new Set(await podNames(on, running));
    if (predicate([...names].sort())) return;
    await watchUntil<k8s.V1Pod>(
      ns.admin,
      `/api/v1/namespaces/${ns.name}/pods`,
      (p, type) => {
        if (p.spec?.nodeName !== on) return false;
        if (type === 'DELETED' || (running && p.status?.phase !== 'Running'))
          names.delete(p.metadata?.name ?? '');
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
    unmappedNode = `${ns.name}-n1`;
    await createReadyKwokNodes(ns.admin, core, [node, unmappedNode], ns.name);

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

    // The second node's kubelet: train-1 holds Ascend910-1, and beside it a MIG slice, a DRA
    // claim and a GPU under the NVIDIA plugin's index strategy, none of which names our device.
    unmappedKubelet = await startFakePodResources(() => ({
      response: {
        pod_resources: [
          {
            name: 'train-1',
            namespace: ns.name,
            containers: [containerWith('main', { 'huawei.com/Ascend910': ['Ascend910-1'] })],
          },
          {
            name: 'mig-0',
            namespace: ns.name,
            containers: [containerWith('main', { 'nvidia.com/mig-1g.10gb': ['MIG-9f2b6c1e'] })],
          },
          {
            name: 'dra-0',
            namespace: ns.name,
            containers: [
              {
                name: 'main',
                devices: [],
                dynamic_resources: [
                  {
                    claim_name: 'npu',
                    claim_namespace: ns.name,
                    claim_resources: [
                      {
                        cdi_devices: [],
                        driver_name: 'npu.example.com',
                        pool_name: 'n1',
                        device_name: 'npu1',
                      },
                    ],
                  },
                ],
              },
            ],
          },
          {
            name: 'indexed-0',
            namespace: ns.name,
            containers: [containerWith('main', { 'nvidia.com/gpu': ['1'] })],
          },
        ],
      },
    }));
    const unmappedRegistry = createRegistry('agent');
    const unmappedReader = createPodResourcesReader(
      { periodMs: 5000, socket: unmappedKubelet.socket },
      {
        client: createPodResourcesClient({
          socket: unmappedKubelet.socket,
          timeoutMs: 2000,
          maxMessageBytes: 1 << 20,
        }),
        clock: systemClock,
        log: createLogger({ level: 'silent' }),
        registry: unmappedRegistry,
      },
    );
    expect(await unmappedReader.read()).toBe('incomplete');
    expect(unmappedReader.holders()).toBeUndefined();
    const unmapped = await unmappedRegistry
      .getSingleMetric('npu_fault_agent_pod_resources_unmapped_allocations')
      ?.get();
    expect(Object.fromEntries(unmapped?.values.map((v) => [v.labels.why, v.value]) ?? [])).toMatchObject({
      mig: 1,
      dra: 1,
      'unknown-id': 1,
    });

    replica = await startTestReplica({
      identity: 'replica-1',
      namespace: ns.name,
      access,
      args: onlyTheseNodesArgs(ns.name),
    });
    const url = `http://127.0.0.1:${await replica.port('observations')}`;
    await replica.waitForLog((l) => l.msg === 'seeded', 60_000, 'seeded');
    await replica.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading');
    follower = new StatusFollower(ns.admin, ns.name);
    follower.start();
    fleet = new Fleet([node, unmappedNode], 'boot-1');
    // The agent's snapshots carry the holders of its last read of the kubelet (none when unknown).
    for (const [name, read] of [
      [node, reader],
      [unmappedNode, unmappedReader],
    ] as const) {
      const held = read.holders();
      if (held !== undefined) fleet.holders.set(name, held);
    }
    poster = new Poster(fleet, await functionCallerToken(ns), () => [{ identity: 'replica-1', url }]);
    poster.start();
    await follower.waitFor(
      (d) => !d.unobserved.includes(node) && !d.unobserved.includes(unmappedNode),
      30_000,
      'nodes observed',
    );
    await applyRemediationSettings(core, ns.name, [replica], {
      mode: 'drain',
      breaker: { maxUnhealthyNodes: 3 },
      drain: { perDevice: true, podTimeoutSeconds: 30, timeoutSeconds: 90 },
    });
  }, 180_000);

  afterAll(async () => {
    poster?.stop();
    follower?.stop();
    await replica?.stop('SIGKILL');
    await kubelet?.close();
    await unmappedKubelet?.close();
    await core?.deleteNode({ name: node }).catch(() => undefined);
    await core?.deleteNode({ name: unmappedNode }).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
    if (Object.keys(measured).length > 0)
      console.log(`per-device drain from PodResources:\n${JSON.stringify(measured, null, 2)}`);
  });

  it('publishes the failed device’s holders and evicts them, and the Ascend pod whose AscendReal names it', async () => {
    await pod('train-0', 'huawei.com/Ascend910', { 'huawei.com/AscendReal': 'Ascend910-0' });
    await pod('infer-0', 'huawei.com/Ascend910-2c');
    // Its AscendReal names the failed device though the kubelet picked another: under Volcano
    // the plugin mounts what Volcano chose (AscendReal), so it is evicted too.
    await pod('other-0', 'huawei.com/Ascend910', { 'huawei.com/AscendReal': 'Ascend910-1' });
    // Asks for an accelerator, no annotation: the annotation fallback would evict it.
    await pod('silent-0', 'huawei.com/Ascend910');
    await pod('web');
    await podsUntil((names) => names.length === 5, 'five pods Running on the node', 60_000, node, true);

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
      (names) => !names.includes('train-0') && !names.includes('infer-0') && !names.includes('other-0'),
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
    expect(await podNames()).toEqual(['silent-0', 'web']);
    measured['fault injected → ConfigMap lists npu1 failed with its pods (ms)'] = failed.at - injected;
    measured['ConfigMap shows failed → the holders gone (ms)'] = evictedAt - failed.at;
  });

  it('sends no holders when the kubelet names allocations it cannot map, and the drain falls back to the annotations', async () => {
    await pod('train-1', 'huawei.com/Ascend910', { 'huawei.com/AscendReal': 'Ascend910-1' }, unmappedNode);
    // Asks for an accelerator, no annotation: it may hold the failed device, so it goes.
    await pod('silent-1', 'huawei.com/Ascend910', {}, unmappedNode);
    await pod('other-1', 'huawei.com/Ascend910', { 'huawei.com/AscendReal': 'Ascend910-0' }, unmappedNode);
    await pod('web-1', undefined, {}, unmappedNode);
    await podsUntil(
      (names) => names.length === 4,
      'four pods Running on the second node',
      60_000,
      unmappedNode,
      true,
    );

    const injected = Date.now();
    fleet.faults.set(`${unmappedNode}/npu1`, { link: 'down' });
    const failed = await follower.waitFor(
      (d) => statusIn(d, unmappedNode, 'npu1') === 'failed',
      15_000,
      'npu1 failed on the second node',
      injected,
    );
    // Not known, rather than a list that would say nobody holds it.
    expect(failed.document.nodes[unmappedNode]?.npus.find((d) => d.id === 'npu1')).not.toHaveProperty('pods');

    await podsUntil(
      (names) => !names.includes('train-1') && !names.includes('silent-1'),
      'the annotated holder and the maybe-holder evicted',
      90_000,
      unmappedNode,
    );
    const drained = await nodeWhere(
      ns.admin,
      unmappedNode,
      (n) => recordOf(n)?.phase === 'drained',
      'second node drained',
    );
    expect(recordOf(drained)?.devices).toEqual(['Ascend910-1']);
    expect(await podNames(unmappedNode)).toEqual(['other-1', 'web-1']);
    measured['unmapped allocations: ConfigMap shows failed → annotation fallback evicted (ms)'] =
      Date.now() - failed.at;
  });
});

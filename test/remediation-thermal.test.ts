/**
 * The thermal eviction preset (remediation `thermalEviction`) on the real control plane: an
 * `npu-fault controller` process under the controller's shipped RBAC, six kwok-run accelerator
 * nodes fed as the ingest function feeds the controllers, real pods, and the settings changed
 * through the hot-reloaded ConfigMap `npu-fault-remediation`.
 *
 * Proven here: off by default, a hot device evicts nothing, while the same passes drain a
 * failed node; on, a node is cordoned no sooner than the hold after its device turned hot and
 * its pods are evicted through the Eviction API (each carries the DisruptionTarget condition
 * the API server sets for an eviction); the breaker counts a hot node, a tripped breaker stops
 * it and a reset lets it proceed; a node that cooled down stays cordoned (uncordon is off by
 * default) and is released by the uncordon setting like any other.
 *
 * Every wait is on an observable event (a watch, a log line, /metrics) with a deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import {
  BREAKER_CONFIGMAP,
  BREAKER_KEY,
  REMEDIATION_ANNOTATION,
  decodeBreaker,
  encodeBreaker,
  resetBreaker,
  type PublishedDocument,
} from '../contracts/index.js';
import type { RemediationConfigInput } from '../controller/remediation/index.js';
import {
  applyRemediationSettings,
  everyNodeObserved,
  saveReplicaLog,
  createReadyKwokNodes,
  onlyTheseNodesArgs,
  nodeWhere as nodeWhereOn,
  recordOf,
} from './setup/remediation.js';
import { createTestNamespace, watchUntil, type TestNamespace, kwokAvailable } from './setup/cluster.js';
import { controllerAccess, type ControllerAccess, functionCallerToken } from './setup/controller-rbac.js';
import { startTestReplica, type ControllerProcess } from './setup/controller-process.js';
import { Fleet, Poster, StatusFollower, statusIn } from './setup/fleet.js';

/** The hold the tests turn the preset on with (the default is 120 s). */
const FOR_SECONDS = 4;
/** Hotter than the rules' high_temp.threshold_c (85 °C). */
const HOT_C = 95;

// kwok runs nodes and pods on the local control plane; an existing cluster must say it has it.
const suite = kwokAvailable() ? describe : describe.skip;

suite('thermal eviction preset on the real control plane', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  let follower: StatusFollower;
  let poster: Poster;
  let fleet: Fleet;
  let nodes: string[];
  let replica: ControllerProcess;
  let url = '';
  const measured: Record<string, number> = {};

  const node = (i: number): string => nodes[i] ?? '';

  /** Writes the remediation settings and waits until the replica has them in force. */
  const settings = (input: RemediationConfigInput): Promise<void> =>
    applyRemediationSettings(core, ns.name, [replica], input);
  const nodeWhere = (
    name: string,
    predicate: (n: k8s.V1Node) => boolean,
    what: string,
    timeoutMs = 30_000,
  ): Promise<k8s.V1Node> => nodeWhereOn(ns.admin, name, predicate, what, timeoutMs);

  async function metrics(): Promise<string> {
    const port = await replica.port('metrics');
    return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  }

  /** Waits (on /metrics, polled at the remediator's pace) until `pattern` shows. */
  async function untilMetric(pattern: RegExp, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(await metrics())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}`);
      await new Promise((resolve) => setTimeout(resolve, 200)); // the remediator's own pace
    }
  }

  /** Pods bound to `nodeName`, labelled with it (kwok runs them). */
  async function pods(nodeName: string, names: string[]): Promise<void> {
    for (const name of names)
      await core.createNamespacedPod({
        namespace: ns.name,
        body: {
          metadata: { name, labels: { node: nodeName } },
          spec: {
            nodeName,
            terminationGracePeriodSeconds: 0,
            containers: [{ name: 'main', image: 'registry.invalid/worker:1' }],
          },
        },
      });
  }

  const podNames = async (nodeName: string): Promise<string[]> =>
    (await core.listNamespacedPod({ namespace: ns.name, labelSelector: `node=${nodeName}` })).items
      .map((p) => p.metadata?.name ?? '')
      .sort();

  /**
   * Resolves with the last state of each pod of `nodeName` once none is left (a watch started
   * now, before anything evicts them).
   */
  function untilEvicted(nodeName: string, timeoutMs = 60_000): Promise<Map<string, k8s.V1Pod>> {
    const present = new Set<string>();
    const gone = new Map<string, k8s.V1Pod>();
    return watchUntil<k8s.V1Pod>(
      ns.admin,
      `/api/v1/namespaces/${ns.name}/pods`,
      (pod, type) => {
        const name = pod.metadata?.name ?? '';
        if (type === 'DELETED') {
          present.delete(name);
          gone.set(name, pod);
        } else present.add(name);
        return present.size === 0 && gone.size > 0;
      },
      { labelSelector: `node=${nodeName}`, timeoutMs, what: `pods of ${nodeName} evicted` },
    ).then(() => gone);
  }

  const hotIn = (doc: PublishedDocument, nodeName: string, npu: string): boolean =>
    doc.nodes[nodeName]?.npus.find((d) => d.id === npu)?.reasons.includes('high-temp') ?? false;

  beforeAll(async () => {
    ns = await createTestNamespace('remediation-thermal');
    access = await controllerAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    const functionToken = await functionCallerToken(ns);
    nodes = Array.from({ length: 6 }, (_, i) => `${ns.name}-t${i}`);
    await createReadyKwokNodes(ns.admin, core, nodes, ns.name);
    follower = new StatusFollower(ns.admin, ns.name);
    follower.start();
    fleet = new Fleet(nodes, 'boot-1');
    replica = await startTestReplica({
      identity: 'replica-1',
      namespace: ns.name,
      access,
      args: onlyTheseNodesArgs(ns.name),
    });
    url = `http://127.0.0.1:${await replica.port('observations')}`;
    await replica.waitForLog((l) => l.msg === 'seeded', 60_000, 'seeded');
    await replica.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading');
    poster = new Poster(fleet, functionToken, () => [{ identity: replica.identity, url }]);
    poster.start();
    await everyNodeObserved(follower, nodes);
  }, 180_000);

  afterAll(async () => {
    if (replica) saveReplicaLog(replica, `remediation-thermal-${replica.identity}`);
    poster?.stop();
    follower?.stop();
    await replica?.stop('SIGKILL');
    for (const name of nodes ?? []) await core?.deleteNode({ name }).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
    if (Object.keys(measured).length > 0)
      console.log(`thermal eviction on the real control plane:\n${JSON.stringify(measured, null, 2)}`);
  });

  it('off by default: a device hot past the hold evicts nothing, while the same passes drain a failed node', async () => {
    const [hot, failing] = [node(0), node(1)];
    await pods(hot, ['cool-job-a', 'cool-job-b']);
    await pods(failing, ['doomed']);
    // The hold is short; `enabled` is left to its default.
    await settings({
      mode: 'drain',
      breaker: { maxUnhealthyNodes: 5 },
      thermalEviction: { forSeconds: FOR_SECONDS },
    });

    fleet.faults.set(`${hot}/npu2`, { temp: HOT_C });
    const firstHot = await follower.waitFor((d) => hotIn(d, hot, 'npu2'), 20_000, 'npu2 high-temp');
    // Hot for well past the hold, as the published documents (stamped by the controller) show.
    const hotSince = Date.parse(firstHot.document.timestamp);
    const stillHot = await follower.waitFor(
      (d) => hotIn(d, hot, 'npu2') && Date.parse(d.timestamp) - hotSince >= (FOR_SECONDS + 3) * 1000,
      30_000,
      `npu2 still hot ${FOR_SECONDS + 3} s later`,
    );
    expect(stillHot.at - firstHot.at).toBeGreaterThanOrEqual((FOR_SECONDS + 2) * 1000);
    // The passes run meanwhile: a failure now is cordoned and drained by one of them.
    const evicted = untilEvicted(failing);
    fleet.faults.set(`${failing}/npu0`, { link: 'down' });
    await nodeWhere(failing, (n) => n.spec?.unschedulable === true, 'cordoned');
    await evicted;
    const untouched = await core.readNode({ name: hot });
    expect(untouched.spec?.unschedulable).not.toBe(true);
    expect(untouched.metadata?.annotations?.[REMEDIATION_ANNOTATION]).toBeUndefined();
    expect(await podNames(hot)).toEqual(['cool-job-a', 'cool-job-b']);
    // Off, the preset keeps no clock.
    expect(await metrics()).toMatch(/^npu_fault_controller_remediation_hot_devices 0$/m);

    fleet.faults.delete(`${hot}/npu2`);
    await follower.waitFor((d) => !hotIn(d, hot, 'npu2'), 20_000, 'npu2 cool again');
  });

  it('on: cordons after the hold and evicts the node’s pods through the Eviction API', async () => {
    const hot = node(2);
    await pods(hot, ['train-0', 'train-1', 'infer-0']);
    await settings({
      mode: 'drain',
      breaker: { maxUnhealthyNodes: 5 },
      thermalEviction: { enabled: true, forSeconds: FOR_SECONDS },
    });
    const evicted = untilEvicted(hot);
    const heated = Date.now();
    fleet.faults.set(`${hot}/npu4`, { temp: HOT_C });
    const cordoned = await nodeWhere(hot, (n) => n.spec?.unschedulable === true, 'cordoned');
    const cordonedAt = Date.now();
    const record = recordOf(cordoned);
    expect(record).toMatchObject({ phase: 'cordoned', devices: [expect.any(String)], tainted: true });
    expect(record?.reason).toMatch(new RegExp(`^npu4: high-temp for \\d+ s at ${HOT_C} °C$`));
    // Not before the hold: the device cannot have been hot before the fault was set.
    expect(Date.parse(record?.since ?? '')).toBeGreaterThanOrEqual(heated + FOR_SECONDS * 1000);
    const gone = await evicted;
    expect([...gone.keys()].sort()).toEqual(['infer-0', 'train-0', 'train-1']);
    for (const pod of gone.values())
      expect(pod.status?.conditions).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ type: 'DisruptionTarget', reason: 'EvictionByEvictionAPI' }),
        ]),
      );
    const drained = await nodeWhere(hot, (n) => recordOf(n)?.phase === 'drained', 'record drained');
    expect(recordOf(drained)?.blocking).toEqual([]);
    await untilMetric(/^npu_fault_controller_remediation_hot_devices 1$/m);
    measured[`device hot → node cordoned, with a ${FOR_SECONDS} s hold (ms)`] = cordonedAt - heated;
    measured['node cordoned → its 3 pods evicted (ms)'] = Date.now() - cordonedAt;
  });

  it('the breaker counts a hot node: tripped, it stops the eviction; a reset lets it proceed', async () => {
    const hot = node(3);
    await pods(hot, ['batch-0']);
    // Held now: the failed node and the hot one, two of six; a third trips a limit of two.
    await settings({
      mode: 'drain',
      breaker: { maxUnhealthyNodes: 2 },
      thermalEviction: { enabled: true, forSeconds: FOR_SECONDS },
    });
    fleet.faults.set(`${hot}/npu1`, { temp: HOT_C });
    const opened = await watchUntil<k8s.V1ConfigMap>(
      ns.admin,
      `/api/v1/namespaces/${ns.name}/configmaps`,
      (cm) => decodeBreaker(cm.data?.[BREAKER_KEY]).value?.state === 'open',
      { fieldSelector: `metadata.name=${BREAKER_CONFIGMAP}`, timeoutMs: 30_000, what: 'breaker open' },
    );
    const state = decodeBreaker(opened.data?.[BREAKER_KEY]).value;
    expect(state?.unhealthy).toEqual([node(1), node(2), hot].sort());
    await untilMetric(/^npu_fault_controller_remediation_skipped_nodes\{why="breaker-open"\} 1$/m);
    expect((await core.readNode({ name: hot })).spec?.unschedulable).not.toBe(true);
    expect(await podNames(hot)).toEqual(['batch-0']);

    // A person looks and resets it (what `npu-fault remediation reset` writes).
    const stored = await core.readNamespacedConfigMap({ name: BREAKER_CONFIGMAP, namespace: ns.name });
    const open = decodeBreaker(stored.data?.[BREAKER_KEY]).value;
    if (!open) throw new Error('breaker unreadable');
    const evicted = untilEvicted(hot);
    await core.replaceNamespacedConfigMap({
      name: BREAKER_CONFIGMAP,
      namespace: ns.name,
      body: {
        ...stored,
        data: { [BREAKER_KEY]: encodeBreaker(resetBreaker(open, new Date().toISOString(), 'test')) },
      },
    });
    await nodeWhere(hot, (n) => n.spec?.unschedulable === true, 'cordoned after the reset');
    expect([...(await evicted).keys()]).toEqual(['batch-0']);
  });

  it('a node that cooled down stays cordoned; the uncordon setting releases it like any other', async () => {
    const [cooled, control] = [node(2), node(4)];
    await settings({
      mode: 'drain',
      breaker: { maxUnhealthyNodes: 6 },
      thermalEviction: { enabled: true, forSeconds: FOR_SECONDS },
    });
    fleet.faults.delete(`${cooled}/npu4`);
    await follower.waitFor(
      (d) => !hotIn(d, cooled, 'npu4') && statusIn(d, cooled, 'npu4') === 'healthy',
      30_000,
      'npu4 cool and healthy again',
    );
    // A failure after the recovery is acted on by a later pass, which leaves the cooled node be.
    fleet.faults.set(`${control}/npu0`, { link: 'down' });
    await nodeWhere(control, (n) => n.spec?.unschedulable === true, 'cordoned');
    const held = await core.readNode({ name: cooled });
    expect(held.spec?.unschedulable).toBe(true);
    expect(recordOf(held)).toMatchObject({ phase: 'drained', recoveredAt: null });

    await settings({
      mode: 'drain',
      breaker: { maxUnhealthyNodes: 6 },
      thermalEviction: { enabled: true, forSeconds: FOR_SECONDS },
      uncordon: { enabled: true, holdSeconds: 1 },
    });
    const released = await nodeWhere(cooled, (n) => recordOf(n)?.phase === 'released', 'released');
    expect(released.spec?.unschedulable).not.toBe(true);
    // Still hot (node 3) or failed (nodes 1 and 4): no evidence of recovery, still held.
    for (const i of [1, 3, 4])
      expect((await core.readNode({ name: node(i) })).spec?.unschedulable).toBe(true);
  });
});

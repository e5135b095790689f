/**
 * Self-healing on the real control plane: two `npu-fault controller` processes under the
 * controller's shipped RBAC, ten kwok-run accelerator nodes fed as the ingest function feeds
 * the controllers, real pods, a real DaemonSet and PodDisruptionBudgets computed by
 * kube-controller-manager, and the settings changed through the hot-reloaded ConfigMap
 * `npu-fault-remediation`.
 *
 * Proven here: a failed node is cordoned, tainted and drained of its 20 pods through the
 * Eviction API (the DaemonSet's pod left alone, the emptyDir pod evicted), with the time from
 * the fault to the cordon and to the last pod gone; a person's uncordon is respected;
 * maintenance is honoured; a dry run changes nothing; the breaker trips when 3 of 10 nodes
 * fail at once and a reset lets them proceed; a node recovered for the hold is uncordoned; the leader is killed mid-drain (a PDB holding
 * one pod) and the new leader resumes and finishes the drain once the PDB allows.
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

const TAINT = 'npu-fault.io/unhealthy';
const PODS_ON_DRAINED_NODE = 20;

// kwok runs nodes and pods on the local control plane; an existing cluster must say it has it.
const suite = kwokAvailable() ? describe : describe.skip;

suite('self-healing on the real control plane', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  let policy: k8s.PolicyV1Api;
  let follower: StatusFollower;
  let poster: Poster;
  let fleet: Fleet;
  let nodes: string[];
  const replicas: ControllerProcess[] = [];
  const urls = new Map<string, string>();
  const measured: Record<string, number> = {};

  const node = (i: number): string => nodes[i] ?? '';
  const live = (): ControllerProcess[] =>
    replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null);

  async function startReplica(identity: string): Promise<ControllerProcess> {
    const replica = await startTestReplica({
      identity,
      namespace: ns.name,
      access,
      args: onlyTheseNodesArgs(ns.name),
    });
    replicas.push(replica);
    urls.set(identity, `http://127.0.0.1:${await replica.port('observations')}`);
    await replica.waitForLog((l) => l.msg === 'seeded', 60_000, 'seeded');
    return replica;
  }

  async function leader(): Promise<ControllerProcess> {
    return Promise.any(
      live().map((r) => r.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading').then(() => r)),
    );
  }

  /** Writes the remediation settings and waits until every live replica has them in force. */
  const settings = (input: RemediationConfigInput): Promise<void> =>
    applyRemediationSettings(core, ns.name, live(), input);
  const nodeWhere = (
    name: string,
    predicate: (n: k8s.V1Node) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<k8s.V1Node> => nodeWhereOn(ns.admin, name, predicate, what, timeoutMs);

  async function breaker(): Promise<ReturnType<typeof decodeBreaker>['value']> {
    const stored = await core
      .readNamespacedConfigMap({ name: BREAKER_CONFIGMAP, namespace: ns.name })
      .catch(() => undefined);
    return decodeBreaker(stored?.data?.[BREAKER_KEY]).value;
  }

  async function metric(replica: ControllerProcess, pattern: RegExp): Promise<boolean> {
    const port = await replica.port('metrics');
    return pattern.test(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
  }

  /** Waits (on /metrics, polled at the remediator's pace) until `pattern` shows. */
  async function untilMetric(replica: ControllerProcess, pattern: RegExp, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await metric(replica, pattern))) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}`);
      await new Promise((resolve) => setTimeout(resolve, 200)); // the remediator's own pace
    }
  }

  async function pod(
    name: string,
    nodeName: string,
    extra: Partial<k8s.V1PodSpec> = {},
    labels: Record<string, string> = {},
  ): Promise<void> {
    await core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name, labels: { app: name, ...labels } },
        spec: {
          nodeName,
          terminationGracePeriodSeconds: 0,
          containers: [{ name: 'main', image: 'registry.invalid/worker:1' }],
          ...extra,
        },
      },
    });
  }

  async function podsOn(nodeName: string): Promise<k8s.V1Pod[]> {
    const list = await core.listNamespacedPod({
      namespace: ns.name,
      fieldSelector: `spec.nodeName=${nodeName}`,
    });
    return list.items;
  }

  /** Waits until the pods on `nodeName` are exactly `names` (sorted). */
  async function podsUntil(
    nodeName: string,
    predicate: (names: string[]) => boolean,
    what: string,
    timeoutMs = 60_000,
  ): Promise<void> {
    const names = new Map<string, string>();
    for (const p of await podsOn(nodeName))
      names.set(p.metadata?.name ?? '', p.metadata?.resourceVersion ?? '');
    if (predicate([...names.keys()].sort())) return;
    await watchUntil<k8s.V1Pod>(
      ns.admin,
      `/api/v1/namespaces/${ns.name}/pods`,
      (p, type) => {
        if (p.spec?.nodeName !== nodeName) return false;
        if (type === 'DELETED') names.delete(p.metadata?.name ?? '');
        else names.set(p.metadata?.name ?? '', '');
        return predicate([...names.keys()].sort());
      },
      { timeoutMs, what },
    );
  }

  beforeAll(async () => {
    ns = await createTestNamespace('remediation');
    access = await controllerAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    apps = ns.admin.makeApiClient(k8s.AppsV1Api);
    policy = ns.admin.makeApiClient(k8s.PolicyV1Api);
    const functionToken = await functionCallerToken(ns);
    nodes = Array.from({ length: 10 }, (_, i) => `${ns.name}-r${i}`);
    await createReadyKwokNodes(ns.admin, core, nodes, ns.name);
    follower = new StatusFollower(ns.admin, ns.name);
    follower.start();
    fleet = new Fleet(nodes, 'boot-1');
    await startReplica('replica-1');
    await startReplica('replica-2');
    await leader();
    poster = new Poster(fleet, functionToken, () =>
      live().map((r) => ({ identity: r.identity, url: urls.get(r.identity) ?? '' })),
    );
    poster.start();
    await everyNodeObserved(follower, nodes);
  }, 180_000);

  afterAll(async () => {
    // The replicas' logs, for a failure's post-mortem.
    for (const r of replicas) saveReplicaLog(r, `remediation-${r.identity}`);
    poster?.stop();
    follower?.stop();
    await Promise.all(replicas.map((r) => r.stop('SIGKILL')));
    for (const name of nodes ?? []) await core?.deleteNode({ name }).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
    if (Object.keys(measured).length > 0)
      console.log(`self-healing on the real control plane:\n${JSON.stringify(measured, null, 2)}`);
  });

  it(`drains a failed node: cordon, taint, ${PODS_ON_DRAINED_NODE} pods evicted, the DaemonSet's pod left alone`, async () => {
    const target = node(0);
    await apps.createNamespacedDaemonSet({
      namespace: ns.name,
      body: {
        metadata: { name: 'node-exporter' },
        spec: {
          selector: { matchLabels: { app: 'node-exporter' } },
          template: {
            metadata: { labels: { app: 'node-exporter' } },
            spec: {
              nodeSelector: { 'kubernetes.io/hostname': target },
              tolerations: [{ operator: 'Exists' }],
              containers: [{ name: 'main', image: 'registry.invalid/exporter:1' }],
            },
          },
        },
      },
    });
    // The DaemonSet controller creates its pod; there is no scheduler here, so bind it as one would.
    const created = await watchUntil<k8s.V1Pod>(ns.admin, `/api/v1/namespaces/${ns.name}/pods`, () => true, {
      labelSelector: 'app=node-exporter',
      what: 'DaemonSet pod created',
    });
    const exporter = created.metadata?.name ?? '';
    await core.createNamespacedPodBinding({
      name: exporter,
      namespace: ns.name,
      body: { metadata: { name: exporter }, target: { apiVersion: 'v1', kind: 'Node', name: target } },
    });
    await pod('scratch', target, { volumes: [{ name: 'scratch', emptyDir: {} }] });
    for (let i = 1; i < PODS_ON_DRAINED_NODE; i++) await pod(`worker-${i}`, target);
    await podsUntil(
      target,
      (names) => names.length === PODS_ON_DRAINED_NODE + 1,
      'pods and the DaemonSet pod on the node',
    );
    await settings({
      mode: 'drain',
      breaker: { maxUnhealthyNodes: 3 },
      drain: { podTimeoutSeconds: 30, timeoutSeconds: 90 },
    });

    const injected = Date.now();
    fleet.faults.set(`${target}/npu1`, { link: 'down' });
    const failed = await follower.waitFor(
      (d) => statusIn(d, target, 'npu1') === 'failed',
      15_000,
      'npu1 failed',
      injected,
    );
    const cordoned = await nodeWhere(target, (n) => n.spec?.unschedulable === true, 'cordoned');
    const cordonedAt = Date.now();
    expect(cordoned.spec?.taints).toEqual(
      expect.arrayContaining([expect.objectContaining({ key: TAINT, effect: 'NoSchedule' })]),
    );
    expect(recordOf(cordoned)).toMatchObject({ reason: 'npu1: pcie-link-down', tainted: true });
    await podsUntil(
      target,
      (names) => names.length === 1 && names[0]?.startsWith('node-exporter-') === true,
      'only the DaemonSet pod left',
      90_000,
    );
    const drainedAt = Date.now();
    const done = await nodeWhere(target, (n) => recordOf(n)?.phase === 'drained', 'record drained');
    expect(recordOf(done)?.blocking).toEqual([]);
    measured['fault injected → ConfigMap shows failed (ms; up to 1 s of it waits for the next agent post)'] =
      failed.at - injected;
    measured['ConfigMap shows failed → node cordoned (ms, seen by a watch)'] = cordonedAt - failed.at;
    measured[`node cordoned → last of ${PODS_ON_DRAINED_NODE} pods gone (ms)`] = drainedAt - cordonedAt;
    measured[`ConfigMap shows failed → last of ${PODS_ON_DRAINED_NODE} pods gone (ms)`] =
      drainedAt - failed.at;
  });

  it('respects a manual uncordon until the node recovers', async () => {
    const target = node(0);
    const current = await core.readNode({ name: target });
    await core.patchNode(
      { name: target, body: { spec: { unschedulable: false } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const overridden = await nodeWhere(
      target,
      (n) => recordOf(n)?.phase === 'overridden',
      'record overridden',
    );
    expect(overridden.spec?.unschedulable).not.toBe(true);
    // `kubectl uncordon` leaves taints: ours goes with the override, the person meant the node to take pods.
    expect(overridden.spec?.taints?.some((t) => t.key === TAINT) ?? false).toBe(false);
    expect(current.spec?.unschedulable).toBe(true);
    // Still failed, and passes go on: it is left uncordoned (the skip is on /metrics).
    const lead = await leader();
    await untilMetric(lead, /remediation_skipped_nodes\{why="manual-uncordon"\} 1/);
    expect((await core.readNode({ name: target })).spec?.unschedulable).not.toBe(true);
    fleet.faults.delete(`${target}/npu1`);
    await nodeWhere(target, (n) => recordOf(n)?.phase === 'released', 'record released after recovery');
  });

  it('honours maintenance and changes nothing in a dry run', async () => {
    const [maintained, dry] = [node(1), node(2)];
    await core.patchNode(
      {
        name: maintained,
        body: { metadata: { annotations: { 'npu-fault.io/maintenance': 'driver upgrade' } } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await nodeWhere(
      maintained,
      (n) => n.metadata?.annotations?.['npu-fault.io/maintenance'] !== undefined,
      'annotated',
    );
    fleet.faults.set(`${maintained}/npu0`, { link: 'down' });
    await follower.waitFor(
      (d) => statusIn(d, maintained, 'npu0') === 'failed',
      15_000,
      'maintained node failed',
    );
    const lead = await leader();
    await untilMetric(lead, /remediation_skipped_nodes\{why="maintenance"\} 1/);
    expect((await core.readNode({ name: maintained })).spec?.unschedulable).not.toBe(true);

    await settings({ mode: 'drain', dryRun: true, breaker: { maxUnhealthyNodes: 3 } });
    fleet.faults.set(`${dry}/npu0`, { link: 'down' });
    const event = await watchUntil<k8s.CoreV1Event>(
      ns.admin,
      '/api/v1/namespaces/default/events',
      (e) => e.reason === 'RemediationDryRun' && e.involvedObject.name === dry,
      { timeoutMs: 20_000, what: 'dry-run Event' },
    );
    expect(event.message).toBe('would cordon: npu0: pcie-link-down');
    const untouched = await core.readNode({ name: dry });
    expect(untouched.spec?.unschedulable).not.toBe(true);
    expect(untouched.metadata?.annotations?.[REMEDIATION_ANNOTATION]).toBeUndefined();
    fleet.faults.delete(`${maintained}/npu0`);
    fleet.faults.delete(`${dry}/npu0`);
    await follower.waitFor(
      (d) => statusIn(d, maintained, 'npu0') === 'healthy' && statusIn(d, dry, 'npu0') === 'healthy',
      20_000,
      'healthy again',
    );
  });

  it('trips the breaker when 3 of 10 nodes fail at once, and a reset lets them proceed', async () => {
    await settings({ mode: 'cordon', breaker: { windowSeconds: 1 } });
    const storm = [node(3), node(4), node(5)];
    for (const n of storm) fleet.faults.set(`${n}/npu2`, { link: 'down' });
    const opened = await watchUntil<k8s.V1ConfigMap>(
      ns.admin,
      `/api/v1/namespaces/${ns.name}/configmaps`,
      (cm) => decodeBreaker(cm.data?.[BREAKER_KEY]).value?.state === 'open',
      { fieldSelector: `metadata.name=${BREAKER_CONFIGMAP}`, timeoutMs: 20_000, what: 'breaker open' },
    );
    const state = decodeBreaker(opened.data?.[BREAKER_KEY]).value;
    expect(state?.unhealthy).toEqual(expect.arrayContaining(storm));
    for (const n of storm) expect((await core.readNode({ name: n })).spec?.unschedulable).not.toBe(true);
    await untilMetric(await leader(), /remediation_breaker_open 1/);

    // A person looks and resets it (what `npu-fault remediation reset` writes).
    const stored = await core.readNamespacedConfigMap({ name: BREAKER_CONFIGMAP, namespace: ns.name });
    const open = decodeBreaker(stored.data?.[BREAKER_KEY]).value;
    if (!open) throw new Error('breaker unreadable');
    await core.replaceNamespacedConfigMap({
      name: BREAKER_CONFIGMAP,
      namespace: ns.name,
      body: {
        ...stored,
        data: { [BREAKER_KEY]: encodeBreaker(resetBreaker(open, new Date().toISOString(), 'test')) },
      },
    });
    for (const n of storm)
      await nodeWhere(n, (x) => x.spec?.unschedulable === true, 'cordoned after the reset');
    expect((await breaker())?.state).toBe('closed');
  });

  it('uncordons a node it cordoned once its devices have been healthy for the hold', async () => {
    const target = node(7);
    await settings({
      mode: 'cordon',
      breaker: { maxUnhealthyNodes: 10 },
      uncordon: { enabled: true, holdSeconds: 2 },
    });
    fleet.faults.set(`${target}/npu4`, { link: 'down' });
    await nodeWhere(
      target,
      (n) => n.spec?.unschedulable === true && recordOf(n)?.phase === 'cordoned',
      'cordoned',
    );
    const healed = Date.now();
    fleet.faults.delete(`${target}/npu4`);
    const recovering = await nodeWhere(
      target,
      (n) => (recordOf(n)?.recoveredAt ?? null) !== null,
      'recovery hold started',
    );
    expect(recovering.spec?.unschedulable).toBe(true);
    const released = await nodeWhere(
      target,
      (n) => recordOf(n)?.phase === 'released',
      'uncordoned after the hold',
    );
    expect(released.spec?.unschedulable).not.toBe(true);
    expect(released.spec?.taints?.some((t) => t.key === TAINT) ?? false).toBe(false);
    // Not before the hold: the record says when it started, and the uncordon came after it.
    const record = recordOf(released);
    expect(
      Date.parse(record?.releasedAt ?? '') - Date.parse(record?.recoveredAt ?? ''),
    ).toBeGreaterThanOrEqual(2000);
    measured['device healthy again → node uncordoned, with a 2 s hold (ms)'] = Date.now() - healed;
  });

  it('a failover mid-drain resumes the drain on the new leader', async () => {
    const target = node(6);
    await pod('free', target);
    await pod('guarded', target, {}, { guard: 'yes' });
    await policy.createNamespacedPodDisruptionBudget({
      namespace: ns.name,
      body: {
        metadata: { name: 'guarded' },
        spec: { minAvailable: 1, selector: { matchLabels: { guard: 'yes' } } },
      },
    });
    await watchUntil<k8s.V1PodDisruptionBudget>(
      ns.admin,
      `/apis/policy/v1/namespaces/${ns.name}/poddisruptionbudgets`,
      (p) => p.status?.observedGeneration === p.metadata?.generation && p.status?.currentHealthy === 1,
      { what: 'PDB computed' },
    );
    await settings({ mode: 'drain', breaker: { maxUnhealthyNodes: 10 }, drain: { timeoutSeconds: 120 } });
    const first = await leader();
    fleet.faults.set(`${target}/npu5`, { link: 'down' });
    await nodeWhere(target, (n) => recordOf(n)?.phase === 'draining', 'draining');
    await podsUntil(
      target,
      (names) => names.join() === 'guarded',
      'the free pod evicted, the guarded one held by its PDB',
    );
    await first.stop('SIGKILL');
    const second = await leader();
    expect(second).not.toBe(first);
    await second.waitForLog((l) => l.msg === 'draining' && l.node === target, 20_000, 'drain resumed');
    await policy.patchNamespacedPodDisruptionBudget(
      { name: 'guarded', namespace: ns.name, body: { spec: { minAvailable: 0 } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await podsUntil(target, (names) => names.length === 0, 'the guarded pod evicted once its PDB allows');
    const done = await nodeWhere(
      target,
      (n) => recordOf(n)?.phase === 'drained',
      'drained by the new leader',
      30_000,
    );
    expect(done.spec?.unschedulable).toBe(true);
  });
});

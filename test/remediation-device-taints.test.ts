/**
 * Device taints (DRA) on the real control plane: one `npu-fault controller` process under the
 * controller's shipped RBAC plus exactly the opt-in k8s/controller/device-taints, three
 * kwok-run 910B nodes fed as the ingest function feeds the controllers, and for two of them a
 * ResourceSlice of a fake DRA driver (`fake.npu-fault.io`) listing their eight NPUs with the
 * standard PCI attribute (resource.kubernetes.io/pciBusID) and a driver-own uuid.
 *
 * Proven here: a failed NPU gets a DeviceTaintRule selecting exactly its driver, pool and
 * device (latency from the fault and from its publication measured and printed), has it
 * replaced with NoExecute when drain mode asks for it, loses it on recovery, and with the
 * breaker open no rule is created. Each rule is a dependent of the granting ClusterRole:
 * deleting the grant (an uninstall) has Kubernetes' garbage collector delete the rules.
 *
 * DeviceTaintRule is served from Kubernetes 1.36 (resource.k8s.io/v1beta2, DRADeviceTaints) and
 * at resource.k8s.io/v1 from 1.37; on an older plane the suite is skipped, saying so.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { kubeRemediationApi, runReset } from '../cli/remediation.js';
import { memoryIO } from '../cli/testing.js';
import { BREAKER_CONFIGMAP, BREAKER_KEY, decodeBreaker } from '../contracts/index.js';
import type { RemediationConfigInput } from '../controller/remediation/index.js';
import { manifestRbacObjects } from '../stack/index.js';
import { createTestNamespace, kwokAvailable, watchUntil, type TestNamespace } from './setup/cluster.js';
import { startTestReplica, type ControllerProcess } from './setup/controller-process.js';
import {
  CONTROLLER_SERVICE_ACCOUNT,
  controllerAccess,
  functionCallerToken,
  type ControllerAccess,
} from './setup/controller-rbac.js';
import { Fleet, Poster, StatusFollower, statusIn } from './setup/fleet.js';
import {
  applyRemediationSettings,
  everyNodeObserved,
  saveReplicaLog,
  createReadyKwokNodes,
  onlyTheseNodesArgs,
} from './setup/remediation.js';

const DRIVER = 'fake.npu-fault.io';
const RULES = '/apis/resource.k8s.io/v1/devicetaintrules';
/** The publication's write budget for a new failure (contract §5.4): 150 ms plus one write, allowed 1.1 s on a busy test plane. */
const FAILURE_WRITE_BUDGET_MS = 1_250;
/** One remediation pass (intervalMs 200 here) and two API writes on top of the publication. */
const RULE_BUDGET_MS = FAILURE_WRITE_BUDGET_MS + 2_000;

interface Rule extends k8s.KubernetesObject {
  spec?: {
    deviceSelector?: { driver?: string; pool?: string; device?: string };
    taint?: { key?: string; value?: string; effect?: string };
  };
}

/** The plane's minor (set by the global setup); undefined on an existing cluster. */
const minor = /^v1\.(\d+)\./.exec(process.env.NPU_FAULT_TEST_K8S_VERSION ?? '')?.[1];
const served = minor === undefined || Number(minor) >= 36;
if (!served)
  console.log(
    `device taints skipped: the plane runs Kubernetes ${process.env.NPU_FAULT_TEST_K8S_VERSION}; DeviceTaintRule needs 1.36+`,
  );
const suite = kwokAvailable() && served ? describe : describe.skip;

suite('device taints (DRA) on the real control plane', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  let objects: k8s.KubernetesObjectApi;
  let follower: StatusFollower;
  let poster: Poster;
  let fleet: Fleet;
  let nodes: string[];
  let replica: ControllerProcess;
  let grant: k8s.KubernetesObject[] = [];
  const slices: string[] = [];
  const measured: Record<string, number> = {};
  const node = (i: number): string => nodes[i] ?? '';
  /** The grant's ClusterRole, as manifestRbacObjects names it for this namespace. */
  const grantName = (): string => `npu-fault-controller-device-taints-${ns.name}`;

  const settings = (input: RemediationConfigInput): Promise<void> =>
    applyRemediationSettings(core, ns.name, [replica], input);

  /** The fake driver's slice for `nodeName`: npu0..npu7 at 910B's bus addresses. */
  async function publishSlice(nodeName: string): Promise<void> {
    const name = `${nodeName}-${DRIVER}`;
    await objects.create({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: { name },
      spec: {
        driver: DRIVER,
        nodeName,
        pool: { name: nodeName, generation: 1, resourceSliceCount: 1 },
        devices: Array.from({ length: 8 }, (_, npu) => ({
          name: `npu${npu}`,
          attributes: {
            // The same address the agent reports (0000:C1:00.0 for npu0), spelt as sysfs does.
            'resource.kubernetes.io/pciBusID': { string: `0000:${(0xc1 + npu).toString(16)}:00.0` },
            uuid: { string: `${nodeName}-npu${npu}` },
          },
        })),
      },
    } as k8s.KubernetesObject);
    slices.push(name);
  }

  /** Our rules for `pool` (a node), as the API has them now. */
  async function rulesOf(pool: string): Promise<Rule[]> {
    const list = await objects.list<Rule>('resource.k8s.io/v1', 'DeviceTaintRule');
    return list.items.filter((rule) => rule.spec?.deviceSelector?.pool === pool);
  }

  /** Resolves once no rule selects `pool` (a list, then a watch from its version). */
  async function noRuleFor(pool: string, timeoutMs: number): Promise<void> {
    const list = await objects.list<Rule>('resource.k8s.io/v1', 'DeviceTaintRule');
    const left = new Set(
      list.items.filter((r) => r.spec?.deviceSelector?.pool === pool).map((r) => r.metadata?.name),
    );
    if (left.size === 0) return;
    await watchUntil<Rule>(
      ns.admin,
      RULES,
      (rule, type) => {
        if (type === 'DELETED') left.delete(rule.metadata?.name);
        return left.size === 0;
      },
      { resourceVersion: list.metadata?.resourceVersion ?? '', timeoutMs, what: `no rule for ${pool}` },
    );
  }

  async function metric(pattern: RegExp, timeoutMs = 15_000): Promise<void> {
    const port = await replica.port('metrics');
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}`);
      await new Promise((resolve) => setTimeout(resolve, 200)); // the remediator's own pace
    }
  }

  beforeAll(async () => {
    ns = await createTestNamespace('device-taints');
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    objects = k8s.KubernetesObjectApi.makeApiClient(ns.admin);
    access = await controllerAccess(ns);
    // The opt-in grant, exactly as shipped (cluster-scoped names get the namespace appended).
    grant = manifestRbacObjects(['controller/device-taints/rbac.yaml'], ns.name);
    for (const object of grant) await objects.create(object);
    const authorization = ns.admin.makeApiClient(k8s.AuthorizationV1Api);
    await watchUntilAllowed(authorization, ns.name);

    const functionToken = await functionCallerToken(ns);
    nodes = Array.from({ length: 3 }, (_, i) => `${ns.name}-d${i}`);
    await createReadyKwokNodes(ns.admin, core, nodes, ns.name);
    await publishSlice(node(0));
    await publishSlice(node(1));

    follower = new StatusFollower(ns.admin, ns.name);
    follower.start();
    fleet = new Fleet(nodes, 'boot-1');
    replica = await startTestReplica({
      identity: 'replica-1',
      namespace: ns.name,
      access,
      args: [...onlyTheseNodesArgs(ns.name), `--device-taints-grant=${grantName()}`],
    });
    await replica.waitForLog((l) => l.msg === 'seeded', 60_000, 'seeded');
    await replica.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading');
    const url = `http://127.0.0.1:${await replica.port('observations')}`;
    poster = new Poster(fleet, functionToken, () => [{ identity: replica.identity, url }]);
    poster.start();
    await everyNodeObserved(follower, nodes);
  }, 180_000);

  afterAll(async () => {
    if (replica) saveReplicaLog(replica, 'device-taints-replica-1');
    poster?.stop();
    follower?.stop();
    await replica?.stop('SIGKILL');
    const list = await objects?.list<Rule>('resource.k8s.io/v1', 'DeviceTaintRule').catch(() => undefined);
    for (const rule of list?.items ?? [])
      if (nodes?.some((n) => rule.spec?.deviceSelector?.pool === n))
        await objects.delete(rule).catch(() => undefined);
    for (const name of slices)
      await objects
        ?.delete({ apiVersion: 'resource.k8s.io/v1', kind: 'ResourceSlice', metadata: { name } })
        .catch(() => undefined);
    for (const name of nodes ?? []) await core?.deleteNode({ name }).catch(() => undefined);
    for (const object of grant) await objects?.delete(object).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
    if (Object.keys(measured).length > 0)
      console.log(`device taints on the real control plane:\n${JSON.stringify(measured, null, 2)}`);
  });

  it('taints exactly the failed device within the write budget, and removes the taint on recovery', async () => {
    await settings({ mode: 'cordon', breaker: { maxUnhealthyNodes: 2 }, deviceTaints: { enabled: true } });
    const target = node(0);
    const injected = Date.now();
    fleet.faults.set(`${target}/npu3`, { link: 'down' });
    const failed = await follower.waitFor(
      (d) => statusIn(d, target, 'npu3') === 'failed',
      15_000,
      'npu3 failed',
      injected,
    );
    const rule = await watchUntil<Rule>(ns.admin, RULES, (r) => r.spec?.deviceSelector?.pool === target, {
      timeoutMs: 15_000,
      what: `a DeviceTaintRule for ${target}`,
    });
    const taintedAt = Date.now();
    measured.faultToRuleMs = taintedAt - injected;
    measured.publishedToRuleMs = taintedAt - failed.at;
    expect(rule.spec).toEqual({
      deviceSelector: { driver: DRIVER, pool: target, device: 'npu3' },
      taint: expect.objectContaining({
        key: 'npu-fault.io/device-failed',
        value: 'failed',
        effect: 'NoSchedule',
      }),
    });
    expect(rule.metadata?.labels).toEqual({
      'app.kubernetes.io/managed-by': 'npu-fault',
      'npu-fault.io/controller-namespace': ns.name,
    });
    // Only that device: one rule for the node, none for the others.
    expect((await rulesOf(target)).map((r) => r.spec?.deviceSelector?.device)).toEqual(['npu3']);
    expect(await rulesOf(node(1))).toEqual([]);
    expect(taintedAt - failed.at).toBeLessThan(RULE_BUDGET_MS);
    const said = await watchUntil<k8s.CoreV1Event>(
      ns.admin,
      '/api/v1/namespaces/default/events',
      (e) => e.reason === 'DeviceTainted' && e.involvedObject.name === target,
      { timeoutMs: 15_000, what: 'DeviceTainted Event on the Node' },
    );
    expect(said.message).toContain(`(${DRIVER}/${target}/npu3)`);

    // Eviction chosen: the same rule is replaced in place with NoExecute.
    await settings({
      mode: 'drain',
      breaker: { maxUnhealthyNodes: 2 },
      deviceTaints: { enabled: true, effect: 'NoExecute' },
    });
    const replaced = await watchUntil<Rule>(
      ns.admin,
      RULES,
      (r) => r.metadata?.name === rule.metadata?.name && r.spec?.taint?.effect === 'NoExecute',
      { timeoutMs: 15_000, what: 'the rule replaced with NoExecute' },
    );
    expect(replaced.spec?.deviceSelector).toEqual({ driver: DRIVER, pool: target, device: 'npu3' });
    expect(await rulesOf(target)).toHaveLength(1);

    const recovered = Date.now();
    fleet.faults.delete(`${target}/npu3`);
    const healthy = await follower.waitFor(
      (d) => statusIn(d, target, 'npu3') === 'healthy',
      20_000,
      'npu3 healthy',
      recovered,
    );
    await noRuleFor(target, 20_000);
    const removedAt = Date.now();
    // Most of the first figure is the engine's own recovery (healthy samples before it says so).
    measured.recoveryToRemovalMs = removedAt - recovered;
    measured.publishedHealthyToRemovalMs = removedAt - healthy.at;
    expect(removedAt - healthy.at).toBeLessThan(RULE_BUDGET_MS);
    await metric(/remediation_device_taint_writes_total\{action="delete",result="ok"\} 1/);
  });

  it('removes its rules when device taints are turned off', async () => {
    await settings({ mode: 'cordon', breaker: { maxUnhealthyNodes: 2 }, deviceTaints: { enabled: true } });
    const target = node(0);
    fleet.faults.set(`${target}/npu3`, { link: 'down' });
    await watchUntil<Rule>(ns.admin, RULES, (r) => r.spec?.deviceSelector?.pool === target, {
      timeoutMs: 15_000,
      what: `a DeviceTaintRule for ${target}`,
    });
    // The device is still failed: only turning the feature off removes the rule.
    await settings({ mode: 'cordon', breaker: { maxUnhealthyNodes: 2 }, deviceTaints: { enabled: false } });
    await noRuleFor(target, 15_000);
    // Removed by the turn-off (the device recovered in the test before: the second delete).
    await metric(/remediation_device_taint_writes_total\{action="delete",result="ok"\} 2/);
    const cleared = Date.now();
    fleet.faults.delete(`${target}/npu3`);
    await follower.waitFor((d) => statusIn(d, target, 'npu3') === 'healthy', 20_000, 'npu3 healthy', cleared);
  });

  it('creates no rule while the breaker is open', async () => {
    // node 0 is still cordoned from the test before (no uncordon): with one more failed node
    // the count (2) is over the limit (1).
    await settings({ mode: 'cordon', breaker: { maxUnhealthyNodes: 1 }, deviceTaints: { enabled: true } });
    const target = node(1);
    fleet.faults.set(`${target}/npu5`, { link: 'down' });
    await watchUntil<k8s.V1ConfigMap>(
      ns.admin,
      `/api/v1/namespaces/${ns.name}/configmaps`,
      (cm) => decodeBreaker(cm.data?.[BREAKER_KEY]).value?.state === 'open',
      { fieldSelector: `metadata.name=${BREAKER_CONFIGMAP}`, timeoutMs: 20_000, what: 'breaker open' },
    );
    // The reconcile ran with the device to taint and held it back: counted, not written.
    await metric(/remediation_device_taint_writes_total\{action="create",result="breaker-open"\} [1-9]/);
    expect(await rulesOf(target)).toEqual([]);
    expect((await core.readNode({ name: target })).spec?.unschedulable).not.toBe(true);
    fleet.faults.delete(`${target}/npu5`);
  });

  it('goes with the grant: deleting the device-taints ClusterRole has the garbage collector delete the rules', async () => {
    // The breaker test before left it open: a person resets it (`npu-fault remediation reset`).
    const reset = await runReset(
      { namespace: ns.name, by: 'test', force: false },
      { api: kubeRemediationApi(ns.admin, ns.name), io: memoryIO(), now: () => new Date().toISOString() },
    );
    expect(reset).toBe(0);
    await settings({ mode: 'cordon', breaker: { maxUnhealthyNodes: 5 }, deviceTaints: { enabled: true } });
    const target = node(2);
    await publishSlice(target);
    fleet.faults.set(`${target}/npu2`, { link: 'down' });
    const rule = await watchUntil<Rule>(ns.admin, RULES, (r) => r.spec?.deviceSelector?.pool === target, {
      timeoutMs: 15_000,
      what: `a DeviceTaintRule for ${target}`,
    });
    const rbac = ns.admin.makeApiClient(k8s.RbacAuthorizationV1Api);
    const role = await rbac.readClusterRole({ name: grantName() });
    expect(rule.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        name: grantName(),
        uid: role.metadata?.uid,
      },
    ]);
    // The uninstall (or the component removed): the controller loses the right to delete them.
    const deletedAt = Date.now();
    await rbac.deleteClusterRole({ name: grantName() });
    await noRuleFor(target, 30_000);
    measured.grantDeletedToRulesGoneMs = Date.now() - deletedAt;
    fleet.faults.delete(`${target}/npu2`);
  }, 45_000);
});

/** Waits until the apiserver's authorizer lets the controller create DeviceTaintRules. */
async function watchUntilAllowed(authorization: k8s.AuthorizationV1Api, namespace: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const review = await authorization.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${namespace}:${CONTROLLER_SERVICE_ACCOUNT}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
          resourceAttributes: { group: 'resource.k8s.io', resource: 'devicetaintrules', verb: 'create' },
        },
      },
    });
    if (review.status?.allowed) return;
    if (performance.now() > deadline) throw new Error('the device-taints grant was not in force within 10 s');
  }
}

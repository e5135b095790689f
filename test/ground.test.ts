/**
 * Proof of the ground: the Kubernetes behaviours npu-fault stands on, checked against the
 * real apiserver, etcd, controller-manager and kwok that global-setup started.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { microTime } from '../platform/k8s/index.js';
import {
  createTestNamespace,
  waitUntilGone,
  watchUntil,
  type TestNamespace,
  kwokAvailable,
} from './setup/cluster.js';

const statusCode = (error: unknown): number | undefined => (error as { code?: number }).code;

async function expectStatus(promise: Promise<unknown>, code: number): Promise<void> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeDefined();
  expect(statusCode(caught)).toBe(code);
}

describe('ground: real control plane', () => {
  let ns: TestNamespace;
  let core: k8s.CoreV1Api;

  beforeAll(async () => {
    ns = await createTestNamespace('ground');
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
  });
  afterAll(async () => {
    await ns?.dispose();
  });

  it('runs the Kubernetes release NPU_FAULT_K8S_VERSION selected', async () => {
    const version = await ns.admin.makeApiClient(k8s.VersionApi).getCode();
    if (process.env.NPU_FAULT_USE_EXISTING_CLUSTER !== 'true')
      expect(version.gitVersion).toBe(process.env.NPU_FAULT_TEST_K8S_VERSION);
    expect(version.major).toBe('1');
  });

  it('answers a ConfigMap update with a stale resourceVersion with 409, and the re-read retry succeeds', async () => {
    const created = await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'optimistic' }, data: { n: '0' } },
    });
    const staleVersion = created.metadata?.resourceVersion;
    await core.replaceNamespacedConfigMap({
      name: 'optimistic',
      namespace: ns.name,
      body: { ...created, data: { n: '1' } },
    });
    await expectStatus(
      core.replaceNamespacedConfigMap({
        name: 'optimistic',
        namespace: ns.name,
        body: { metadata: { name: 'optimistic', resourceVersion: staleVersion }, data: { n: 'stale' } },
      }),
      409,
    );
    const current = await core.readNamespacedConfigMap({ name: 'optimistic', namespace: ns.name });
    expect(current.data?.n).toBe('1');
    const retried = await core.replaceNamespacedConfigMap({
      name: 'optimistic',
      namespace: ns.name,
      body: { ...current, data: { n: '2' } },
    });
    expect(retried.data?.n).toBe('2');
    expect(retried.metadata?.resourceVersion).not.toBe(current.metadata?.resourceVersion);
  });

  it('creates and renews a Lease under a ServiceAccount token with only lease RBAC', async () => {
    const rbac = ns.admin.makeApiClient(k8s.RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: {
        metadata: { name: 'lease-holder' },
        rules: [
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: 'lease-holder' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'lease-holder' },
        subjects: [{ kind: 'ServiceAccount', name: 'elector', namespace: ns.name }],
      },
    });
    const asElector = await ns.serviceAccountKubeConfig('elector');
    const leases = asElector.makeApiClient(k8s.CoordinationV1Api);
    const acquired = microTime(Date.now());
    const lease = await leases.createNamespacedLease({
      namespace: ns.name,
      body: {
        metadata: { name: 'leader' },
        spec: {
          holderIdentity: 'replica-a',
          leaseDurationSeconds: 15,
          acquireTime: acquired,
          renewTime: acquired,
          leaseTransitions: 0,
        },
      },
    });
    const renewedAt = microTime(acquired.getTime() + 2000);
    const renewed = await leases.replaceNamespacedLease({
      name: 'leader',
      namespace: ns.name,
      body: { ...lease, spec: { ...lease.spec, renewTime: renewedAt } },
    });
    expect(new Date(renewed.spec?.renewTime as Date).getTime()).toBe(renewedAt.getTime());
    expect(renewed.spec?.holderIdentity).toBe('replica-a');
    expect(renewed.metadata?.resourceVersion).not.toBe(lease.metadata?.resourceVersion);
    // Least privilege is real: the same token may not touch ConfigMaps.
    await expectStatus(
      asElector.makeApiClient(k8s.CoreV1Api).listNamespacedConfigMap({ namespace: ns.name }),
      403,
    );
  });

  // kwok runs nodes and pods on the local control plane; an existing cluster must say it has it.
  const withKwok = kwokAvailable() ? it : it.skip;

  withKwok(
    'turns a kwok node Ready, runs a bound pod, and lets a PDB refuse then allow its eviction',
    async () => {
      const nodeName = `${ns.name}-node`;
      await core.createNode({
        body: {
          metadata: {
            name: nodeName,
            annotations: { 'kwok.x-k8s.io/node': 'fake' },
            labels: { 'kubernetes.io/hostname': nodeName, type: 'kwok' },
          },
          spec: { taints: [] },
        },
      });
      try {
        await watchUntil<k8s.V1Node>(
          ns.admin,
          '/api/v1/nodes',
          (node) => node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
          { fieldSelector: `metadata.name=${nodeName}`, what: `node ${nodeName} Ready` },
        );

        await core.createNamespacedPod({
          namespace: ns.name,
          body: {
            metadata: { name: 'worker', labels: { app: 'worker' } },
            spec: { nodeName, containers: [{ name: 'main', image: 'registry.invalid/worker:1' }] },
          },
        });
        const running = await watchUntil<k8s.V1Pod>(
          ns.admin,
          `/api/v1/namespaces/${ns.name}/pods`,
          (pod) => pod.status?.phase === 'Running',
          { fieldSelector: 'metadata.name=worker', what: 'pod worker Running' },
        );
        expect(running.spec?.nodeName).toBe(nodeName);

        const policy = ns.admin.makeApiClient(k8s.PolicyV1Api);
        await policy.createNamespacedPodDisruptionBudget({
          namespace: ns.name,
          body: {
            metadata: { name: 'worker' },
            spec: { minAvailable: 1, selector: { matchLabels: { app: 'worker' } } },
          },
        });
        // The disruption controller (kube-controller-manager) must have computed the budget.
        const computed = await watchUntil<k8s.V1PodDisruptionBudget>(
          ns.admin,
          `/apis/policy/v1/namespaces/${ns.name}/poddisruptionbudgets`,
          (pdb) =>
            pdb.status?.observedGeneration === pdb.metadata?.generation && pdb.status?.currentHealthy === 1,
          { what: 'PDB status computed' },
        );
        expect(computed.status?.disruptionsAllowed).toBe(0);

        const evict = (): Promise<unknown> =>
          core.createNamespacedPodEviction({
            name: 'worker',
            namespace: ns.name,
            body: { metadata: { name: 'worker', namespace: ns.name } },
          });
        await expectStatus(evict(), 429);

        await policy.patchNamespacedPodDisruptionBudget(
          { name: 'worker', namespace: ns.name, body: { spec: { minAvailable: 0 } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        );
        await watchUntil<k8s.V1PodDisruptionBudget>(
          ns.admin,
          `/apis/policy/v1/namespaces/${ns.name}/poddisruptionbudgets`,
          (pdb) =>
            pdb.status?.observedGeneration === pdb.metadata?.generation &&
            pdb.status?.disruptionsAllowed === 1,
          { what: 'PDB allows one disruption' },
        );
        await evict();
        // kwok's pod-delete stage finalises the evicted pod, as a kubelet would.
        await waitUntilGone(ns.admin, `/api/v1/namespaces/${ns.name}/pods`, 'worker', (fieldSelector) =>
          core.listNamespacedPod({ namespace: ns.name, fieldSelector }),
        );
      } finally {
        await core.deleteNode({ name: nodeName }).catch(() => undefined);
      }
    },
  );
});

/**
 * The drain of self-healing (controller/remediation/drain.ts) on the real control plane:
 * kwok nodes and pods (kwok finalises evicted pods as a kubelet would), PodDisruptionBudgets
 * computed by kube-controller-manager, a DaemonSet run by its controller, and the drain acting
 * as the controller's ServiceAccount under exactly the RBAC of k8s/controller/rbac.yaml.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import {
  createKubePodClient,
  drainConfigSchema,
  drainNode,
  type DrainRequest,
  type PodClient,
} from '../controller/remediation/index.js';
import { createLogger, systemClock } from '../platform/index.js';
import {
  createTestNamespace,
  waitUntilGone,
  watchUntil,
  type TestNamespace,
  kwokAvailable,
} from './setup/cluster.js';
import { controllerAccess, grantForceDelete, type ControllerAccess } from './setup/controller-rbac.js';

// kwok runs nodes and pods on the local control plane; an existing cluster must say it has it.
const withKwok = kwokAvailable() ? describe : describe.skip;

withKwok('remediation drain: real control plane', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  let policy: k8s.PolicyV1Api;
  let pods: PodClient;
  const nodes: string[] = [];

  beforeAll(async () => {
    ns = await createTestNamespace('remediation-drain');
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    policy = ns.admin.makeApiClient(k8s.PolicyV1Api);
    access = await controllerAccess(ns);
    pods = createKubePodClient(access.kubeConfig.makeApiClient(k8s.CoreV1Api));
  });
  afterAll(async () => {
    for (const name of nodes) await core?.deleteNode({ name }).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
  });

  const podsPath = (): string => `/api/v1/namespaces/${ns.name}/pods`;

  /** A Ready kwok node named after the test namespace (deleted in afterAll). */
  async function createNode(suffix: string): Promise<string> {
    const name = `${ns.name}-${suffix}`;
    await core.createNode({
      body: {
        metadata: {
          name,
          annotations: { 'kwok.x-k8s.io/node': 'fake' },
          labels: { 'kubernetes.io/hostname': name, type: 'kwok' },
        },
      },
    });
    nodes.push(name);
    await watchUntil<k8s.V1Node>(
      ns.admin,
      '/api/v1/nodes',
      (node) => node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      { fieldSelector: `metadata.name=${name}`, what: `node ${name} Ready` },
    );
    return name;
  }

  /** Pods bound to `node`, waited on until every one runs. */
  async function runPods(
    node: string,
    specs: { name: string; metadata?: k8s.V1ObjectMeta; spec?: Partial<k8s.V1PodSpec> }[],
  ) {
    for (const { name, metadata, spec } of specs) {
      await core.createNamespacedPod({
        namespace: ns.name,
        body: {
          metadata: { ...metadata, name, labels: { node, ...metadata?.labels } },
          spec: { nodeName: node, containers: [{ name: 'main', image: 'registry.invalid/app:1' }], ...spec },
        },
      });
    }
    await waitRunning(node, specs.length);
  }

  async function waitRunning(node: string, count: number): Promise<void> {
    const running = new Set<string>();
    await watchUntil<k8s.V1Pod>(
      ns.admin,
      podsPath(),
      (pod, type) => {
        const name = pod.metadata?.name ?? '';
        if (type !== 'DELETED' && pod.status?.phase === 'Running') running.add(name);
        else running.delete(name);
        return running.size >= count;
      },
      { labelSelector: `node=${node}`, what: `${count} pods Running on ${node}` },
    );
  }

  /** A PDB over `app=<app>` with minAvailable 1, once kube-controller-manager has computed it. */
  async function guard(app: string): Promise<void> {
    await policy.createNamespacedPodDisruptionBudget({
      namespace: ns.name,
      body: { metadata: { name: app }, spec: { minAvailable: 1, selector: { matchLabels: { app } } } },
    });
    const computed = await watchUntil<k8s.V1PodDisruptionBudget>(
      ns.admin,
      `/apis/policy/v1/namespaces/${ns.name}/poddisruptionbudgets`,
      (pdb) =>
        pdb.status?.observedGeneration === pdb.metadata?.generation && pdb.status?.currentHealthy === 1,
      { fieldSelector: `metadata.name=${app}`, what: `PDB ${app} computed` },
    );
    expect(computed.status?.disruptionsAllowed).toBe(0);
  }

  const exists = async (name: string): Promise<boolean> =>
    (await pods.get(ns.name, name, new AbortController().signal)) !== null;

  const request = (node: string, fields: Partial<DrainRequest> = {}): DrainRequest => ({
    node,
    config: drainConfigSchema.parse({ timeoutSeconds: 60, podTimeoutSeconds: 30 }),
    backoff: { initialMs: 200, maxMs: 1000 },
    pollMs: 200,
    ...fields,
  });
  const deps = (client: PodClient = pods) => ({
    pods: client,
    clock: systemClock,
    log: createLogger({ level: 'silent' }),
  });
  const drain = (req: DrainRequest, client?: PodClient) =>
    drainNode(deps(client), req, new AbortController().signal);

  it('evicts an emptyDir pod and a plain one, leaves a DaemonSet pod alone', async () => {
    const node = await createNode('mixed');
    const apps = ns.admin.makeApiClient(k8s.AppsV1Api);
    await apps.createNamespacedDaemonSet({
      namespace: ns.name,
      body: {
        metadata: { name: 'agent' },
        spec: {
          selector: { matchLabels: { app: 'agent' } },
          template: {
            metadata: { labels: { app: 'agent', node } },
            spec: {
              nodeSelector: { 'kubernetes.io/hostname': node },
              // As node agents do: the node keeps node.kubernetes.io/not-ready here (no node-lifecycle controller).
              tolerations: [{ operator: 'Exists' }],
              containers: [{ name: 'agent', image: 'registry.invalid/agent:1' }],
            },
          },
        },
      },
    });
    // The DaemonSet controller creates the pod; there is no scheduler here, so bind it as one would.
    const created = await watchUntil<k8s.V1Pod>(ns.admin, podsPath(), () => true, {
      labelSelector: 'app=agent',
      what: 'DaemonSet pod created',
    });
    const agent = created.metadata?.name ?? '';
    await core.createNamespacedPodBinding({
      name: agent,
      namespace: ns.name,
      body: { metadata: { name: agent }, target: { apiVersion: 'v1', kind: 'Node', name: node } },
    });
    await runPods(node, [
      { name: 'scratch', spec: { volumes: [{ name: 'cache', emptyDir: {} }] } },
      { name: 'plain' },
    ]);
    await waitRunning(node, 3);

    const report = await drain(request(node));
    expect(report).toMatchObject({
      outcome: 'drained',
      scope: 'node',
      evicted: [`${ns.name}/plain`, `${ns.name}/scratch`],
      forced: [],
      blocking: [],
      skipped: [{ pod: `${ns.name}/${agent}`, why: 'daemonset' }],
    });
    expect(await exists('plain')).toBe(false);
    expect(await exists('scratch')).toBe(false);
    expect(await exists(agent)).toBe(true);
    // Run again on the drained node: nothing left to do, not an error.
    expect(await drain(request(node))).toMatchObject({ outcome: 'drained', evicted: [], blocking: [] });
  });

  it('retries a pod a PDB protects until the budget is relaxed, then completes', async () => {
    const node = await createNode('relaxed');
    await runPods(node, [{ name: 'guarded', metadata: { labels: { app: 'guarded' } } }]);
    await guard('guarded');
    let refusals = 0;
    let firstRefusal: (message: string) => void = () => undefined;
    const refused = new Promise<string>((resolve) => (firstRefusal = resolve));
    const spy: PodClient = {
      ...pods,
      async evict(...args) {
        const answer = await pods.evict(...args);
        if (answer.result === 'blocked') {
          refusals++;
          firstRefusal(answer.message);
        }
        return answer;
      },
    };
    const draining = drain(request(node), spy);
    expect(await refused).toMatch(/disruption budget/);
    await policy.patchNamespacedPodDisruptionBudget(
      { name: 'guarded', namespace: ns.name, body: { spec: { minAvailable: 0 } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const report = await draining;
    expect(report).toMatchObject({
      outcome: 'drained',
      evicted: [`${ns.name}/guarded`],
      forced: [],
      blocking: [],
    });
    expect(refusals).toBeGreaterThanOrEqual(1);
    expect(await exists('guarded')).toBe(false);
  });

  it('times out on a budget that never allows, reporting the pod as blocking and forcing nothing', async () => {
    const node = await createNode('blocked');
    await runPods(node, [{ name: 'precious', metadata: { labels: { app: 'precious' } } }, { name: 'other' }]);
    await guard('precious');
    const started = Date.now();
    const report = await drain(
      request(node, { config: drainConfigSchema.parse({ timeoutSeconds: 3, podTimeoutSeconds: 30 }) }),
    );
    expect(Date.now() - started).toBeLessThan(6000);
    expect(report).toMatchObject({
      outcome: 'timed-out',
      evicted: [`${ns.name}/other`],
      forced: [],
      blocking: [
        {
          pod: `${ns.name}/precious`,
          reason: expect.stringMatching(
            /^eviction refused: Cannot evict pod .*disruption budget.* The disruption budget precious needs 1 healthy pods and has 1 currently$/,
          ),
        },
      ],
    });
    expect(await exists('precious')).toBe(true);
  });

  it('per device: evicts the pod holding the failed chip and the one that says not which; pods asking for no accelerator stay', async () => {
    const node = await createNode('devices');
    // Device plugins hand out devices only to pods asking for them (kwok admits the request).
    const chip = {
      containers: [
        {
          name: 'main',
          image: 'registry.invalid/app:1',
          resources: { limits: { 'huawei.com/Ascend910': '1' } },
        },
      ],
    };
    await runPods(node, [
      { name: 'chip0', metadata: { annotations: { 'huawei.com/Ascend910': 'Ascend910-0' } }, spec: chip },
      { name: 'chip1', metadata: { annotations: { 'huawei.com/Ascend910': 'Ascend910-1' } }, spec: chip },
      { name: 'silent', spec: chip },
      // A tenant's annotation on a pod without accelerators is not believed either way.
      { name: 'web', metadata: { annotations: { 'huawei.com/Ascend910': 'Ascend910-1' } } },
    ]);
    const report = await drain(
      request(node, {
        devices: ['Ascend910-1'],
        config: drainConfigSchema.parse({ perDevice: true, timeoutSeconds: 60 }),
      }),
    );
    expect(report).toMatchObject({
      outcome: 'drained',
      scope: 'devices',
      evicted: [`${ns.name}/chip1`, `${ns.name}/silent`],
      skipped: [
        { pod: `${ns.name}/chip0`, why: 'other-devices' },
        { pod: `${ns.name}/web`, why: 'no-accelerator' },
      ],
    });
    expect(await exists('chip0')).toBe(true);
    expect(await exists('web')).toBe(true);
    expect(await exists('chip1')).toBe(false);
    expect(await exists('silent')).toBe(false);
  });

  it('never evicts a pod that replaced the listed one under the same name (uid precondition); 404 is gone', async () => {
    const node = await createNode('replaced');
    await runPods(node, [{ name: 'db-0' }]);
    const first = await core.readNamespacedPod({ name: 'db-0', namespace: ns.name });
    await core.deleteNamespacedPod({ name: 'db-0', namespace: ns.name });
    await waitUntilGone(ns.admin, podsPath(), 'db-0', (fieldSelector) =>
      core.listNamespacedPod({ namespace: ns.name, fieldSelector }),
    );
    await runPods(node, [{ name: 'db-0' }]);
    const signal = new AbortController().signal;
    expect(await pods.evict(ns.name, 'db-0', first.metadata?.uid, signal)).toEqual({ result: 'gone' });
    // Delete is the opt-in of forceDeleteAfterSeconds (k8s/controller/force-delete).
    const revoke = await grantForceDelete(ns);
    try {
      expect(await pods.delete(ns.name, 'db-0', first.metadata?.uid ?? '', signal)).toBe('gone');
    } finally {
      await revoke();
    }
    const current = await pods.get(ns.name, 'db-0', signal);
    expect(current?.uid).not.toBe(first.metadata?.uid);
    expect(current?.terminating).toBe(false);
    expect(await pods.evict(ns.name, 'never-was', undefined, signal)).toEqual({ result: 'gone' });
  });

  it('drains 20 pods from one node (measured)', async () => {
    const node = await createNode('bulk');
    const count = 20;
    await runPods(
      node,
      Array.from({ length: count }, (_, i) => ({ name: `bulk-${i}`, metadata: { labels: { app: 'bulk' } } })),
    );
    const listed = await core.listNamespacedPod({ namespace: ns.name, labelSelector: 'app=bulk' });
    let lastGoneAt = 0;
    const gone = new Set<string>();
    let allGone: () => void = () => undefined;
    const everyPodGone = new Promise<void>((resolve) => (allGone = resolve));
    const watching = new k8s.Watch(ns.admin).watch(
      podsPath(),
      { labelSelector: 'app=bulk', resourceVersion: listed.metadata?.resourceVersion ?? '' },
      (type: string, pod: k8s.V1Pod) => {
        if (type !== 'DELETED') return;
        gone.add(pod.metadata?.name ?? '');
        lastGoneAt = performance.now();
        if (gone.size >= count) allGone();
      },
      () => undefined,
    );
    const watch = await watching;
    try {
      const started = performance.now();
      const report = await drain(request(node, { pollMs: undefined, backoff: undefined }));
      const drainMs = performance.now() - started;
      // The drain saw them gone by listing; the watch's DELETED events time the last one.
      await everyPodGone;
      expect(report).toMatchObject({ outcome: 'drained', blocking: [] });
      expect(report.evicted).toHaveLength(count);
      console.log(
        `20-pod drain on one kwok node: last pod gone ${Math.round(lastGoneAt - started)} ms after drainNode started; ` +
          `drainNode returned after ${Math.round(drainMs)} ms (poll 500 ms, default settings)`,
      );
    } finally {
      watch.abort();
    }
  });
});

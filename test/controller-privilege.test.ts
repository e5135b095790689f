/**
 * The controller's privilege as shipped (k8s/controller, issue 27), on the real control plane
 * under exactly its RBAC (test/setup/controller-rbac.ts):
 * - ConfigMaps only in its own namespace, and in a mirror namespace only once the operator
 *   binds npu-fault-status-mirror there; a namespace labelled for a mirror without the binding
 *   is reported (one warning, a gauge) and asked again only every heartbeat, never hammered;
 * - no pod delete unless the component force-delete/ is applied: a drain that wants to force
 *   a pod reports the 403 as what blocks it, and forces the pod once the component is there;
 * - Node patch stays cluster-wide (RBAC cannot name nodes only known at run time).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import {
  createKubeConfigMapClient,
  createStatusMirrors,
  MIRROR_CLUSTER_ROLE,
  serializeDocument,
  type ConfigMapClient,
  type MirrorNamespaces,
} from '../controller/publisher/index.js';
import { sampleDocument } from '../controller/publisher/testing.js';
import {
  createKubePodClient,
  drainConfigSchema,
  drainNode,
  type DrainRequest,
} from '../controller/remediation/index.js';
import { STATUS_CONFIGMAP_NAME } from '../contracts/index.js';
import { Registry, createLogger, systemClock, type Logger } from '../platform/index.js';
import { createTestNamespace, kwokAvailable, watchUntil, type TestNamespace } from './setup/cluster.js';
import {
  allowMirrorsIn,
  controllerAccess,
  grantForceDelete,
  type ControllerAccess,
} from './setup/controller-rbac.js';

/** Short, so the test sees several rounds; the shipped default is 60 s. */
const HEARTBEAT_MS = 1500;

/** A logger whose lines a test can wait for. */
function recordingLog(): {
  log: Logger;
  waitFor(match: (l: Record<string, unknown>) => boolean, what: string): Promise<void>;
} {
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  const log = createLogger({
    level: 'debug',
    destination: {
      write: (line: string) => {
        lines.push(JSON.parse(line) as Record<string, unknown>);
        for (const w of [...waiters]) w();
      },
    },
  });
  return {
    log,
    waitFor: (match, what) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          if (!lines.some(match)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for the log line: ${what}`));
        }, 15_000);
        waiters.add(check);
        check();
      }),
  };
}

describe('the controller’s privilege, under its shipped RBAC', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  const extra: TestNamespace[] = [];

  beforeAll(async () => {
    ns = await createTestNamespace('privilege');
    access = await controllerAccess(ns);
  });
  afterAll(async () => {
    for (const other of extra) await other.dispose();
    await access?.dispose();
    await ns?.dispose();
  });

  it('may write ConfigMaps in its own namespace only, delete no pod, and patch any Node (which RBAC cannot narrow)', async () => {
    const elsewhere = await createTestNamespace('privilege-other');
    extra.push(elsewhere);
    const authorization = ns.admin.makeApiClient(k8s.AuthorizationV1Api);
    const user = `system:serviceaccount:${ns.name}:npu-fault-controller`;
    const groups = ['system:serviceaccounts', `system:serviceaccounts:${ns.name}`, 'system:authenticated'];
    const may = async (attributes: k8s.V1ResourceAttributes): Promise<boolean> =>
      (
        await authorization.createSubjectAccessReview({
          body: { spec: { user, groups, resourceAttributes: attributes } },
        })
      ).status?.allowed === true;
    const configMap = (verb: string, namespace: string, name?: string): k8s.V1ResourceAttributes => ({
      resource: 'configmaps',
      verb,
      namespace,
      ...(name ? { name } : {}),
    });
    expect(await may(configMap('create', ns.name))).toBe(true);
    expect(await may(configMap('update', ns.name, STATUS_CONFIGMAP_NAME))).toBe(true);
    for (const namespace of [elsewhere.name, 'default', 'kube-system']) {
      expect({ namespace, create: await may(configMap('create', namespace)) }).toEqual({
        namespace,
        create: false,
      });
      expect({ namespace, get: await may(configMap('get', namespace, STATUS_CONFIGMAP_NAME)) }).toEqual({
        namespace,
        get: false,
      });
    }
    await allowMirrorsIn(ns, elsewhere.name);
    // The authorizer follows bindings through a watch: ask until it has seen this one.
    await watchUntil<k8s.V1RoleBinding>(
      ns.admin,
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${elsewhere.name}/rolebindings`,
      () => true,
      {
        what: 'the mirror RoleBinding',
      },
    );
    await expect(pollAllowed(() => may(configMap('create', elsewhere.name)))).resolves.toBe(true);
    expect(await may(configMap('delete', elsewhere.name, STATUS_CONFIGMAP_NAME))).toBe(true);
    expect(await may(configMap('get', elsewhere.name, 'someone-elses'))).toBe(false);
    expect(await may(configMap('create', 'default'))).toBe(false);

    expect(await may({ resource: 'pods', verb: 'delete', namespace: elsewhere.name })).toBe(false);
    expect(
      await may({ resource: 'pods', subresource: 'eviction', verb: 'create', namespace: elsewhere.name }),
    ).toBe(true);
    expect(await may({ resource: 'nodes', verb: 'patch', name: 'any-node' })).toBe(true);
    expect(await may({ resource: 'nodes', verb: 'delete', name: 'any-node' })).toBe(false);
  });

  it('reports a namespace labelled for a mirror but not opted in, asks it once a heartbeat, and copies once it is bound', async () => {
    const [open, closed] = await Promise.all([
      createTestNamespace('mirror-open'),
      createTestNamespace('mirror-closed'),
    ]);
    if (!open || !closed) throw new Error('namespaces not created');
    extra.push(open, closed);
    await allowMirrorsIn(ns, open.name);
    // Every request the mirrors make to the closed namespace, with when it was made.
    const closedRequests: number[] = [];
    const kube = createKubeConfigMapClient(access.kubeConfig.makeApiClient(k8s.CoreV1Api));
    const client: ConfigMapClient = {
      ...kube,
      get: (key, signal) => {
        if (key.namespace === closed.name) closedRequests.push(performance.now());
        return kube.get(key, signal);
      },
    };
    const labelled = new Set([open.name, closed.name]);
    const namespaces: MirrorNamespaces = { namespaces: () => labelled, onChange: () => () => undefined };
    const registry = new Registry();
    const { log, waitFor } = recordingLog();
    const mirrors = createStatusMirrors(
      {
        client,
        namespaces,
        leadership: () => ({ leading: true, term: 1 }),
        clock: systemClock,
        log,
        registry,
      },
      { term: 1, statusNamespace: ns.name, config: { intervalMs: 200, heartbeatMs: HEARTBEAT_MS } },
    );
    const stop = new AbortController();
    const running = mirrors.start(stop.signal);
    try {
      mirrors.publish(serializeDocument(sampleDocument('replica-a', 1, 1)));
      const copyIn = (namespace: string) =>
        watchUntil<k8s.V1ConfigMap>(ns.admin, `/api/v1/namespaces/${namespace}/configmaps`, () => true, {
          fieldSelector: `metadata.name=${STATUS_CONFIGMAP_NAME}`,
          timeoutMs: 15_000,
          what: `the mirror in ${namespace}`,
        });
      await copyIn(open.name);
      await waitFor(
        (l) =>
          l.namespace === closed.name &&
          l.level === 'warn' &&
          String(l.msg).includes(`bind the ClusterRole ${MIRROR_CLUSTER_ROLE}`),
        'the warning naming the missing binding',
      );
      const gauge = await registry.getSingleMetric('npu_fault_controller_mirror_forbidden_namespaces')?.get();
      expect(gauge?.values.map((v) => v.value)).toEqual([1]);
      // Opted in now: the copy comes with the next heartbeat's attempt.
      await allowMirrorsIn(ns, closed.name);
      await copyIn(closed.name);
      await waitFor(
        (l) => l.namespace === closed.name && String(l.msg).includes('opted in'),
        'the opt-in noticed',
      );
      // Every attempt there came a heartbeat after the one before (less a little for timers):
      // refused ones, then the one that found the binding. Not one per round.
      expect(closedRequests.length).toBeGreaterThanOrEqual(2);
      const gaps = closedRequests.slice(1).map((at, i) => at - (closedRequests[i] ?? 0));
      for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(HEARTBEAT_MS - 50);
      const warnings = await registry
        .getSingleMetric('npu_fault_controller_mirror_forbidden_namespaces')
        ?.get();
      expect(warnings?.values.map((v) => v.value)).toEqual([0]);
    } finally {
      stop.abort(new Error('test stop'));
      await running;
    }
  });

  const withKwok = kwokAvailable() ? it : it.skip;
  withKwok(
    'forces no pod without the force-delete component (403 reported as blocking), and forces it with it',
    async () => {
      const core = ns.admin.makeApiClient(k8s.CoreV1Api);
      const node = `${ns.name}-force`;
      await core.createNode({
        body: {
          metadata: { name: node, annotations: { 'kwok.x-k8s.io/node': 'fake' }, labels: { type: 'kwok' } },
        },
      });
      let revoke: (() => Promise<void>) | undefined;
      try {
        await core.createNamespacedPod({
          namespace: ns.name,
          body: {
            metadata: { name: 'precious', labels: { app: 'precious' } },
            spec: { nodeName: node, containers: [{ name: 'main', image: 'registry.invalid/app:1' }] },
          },
        });
        await watchUntil<k8s.V1Pod>(
          ns.admin,
          `/api/v1/namespaces/${ns.name}/pods`,
          (p) => p.status?.phase === 'Running',
          {
            fieldSelector: 'metadata.name=precious',
            what: 'precious Running',
          },
        );
        await ns.admin.makeApiClient(k8s.PolicyV1Api).createNamespacedPodDisruptionBudget({
          namespace: ns.name,
          body: {
            metadata: { name: 'precious' },
            spec: { minAvailable: 1, selector: { matchLabels: { app: 'precious' } } },
          },
        });
        await watchUntil<k8s.V1PodDisruptionBudget>(
          ns.admin,
          `/apis/policy/v1/namespaces/${ns.name}/poddisruptionbudgets`,
          (pdb) =>
            pdb.status?.observedGeneration === pdb.metadata?.generation && pdb.status?.currentHealthy === 1,
          { fieldSelector: 'metadata.name=precious', what: 'PDB computed' },
        );
        const pods = createKubePodClient(access.kubeConfig.makeApiClient(k8s.CoreV1Api));
        const request: DrainRequest = {
          node,
          config: drainConfigSchema.parse({
            timeoutSeconds: 4,
            podTimeoutSeconds: 30,
            forceDeleteAfterSeconds: 1,
          }),
          backoff: { initialMs: 200, maxMs: 500 },
          pollMs: 200,
        };
        const deps = { pods, clock: systemClock, log: createLogger({ level: 'silent' }) };
        const refused = await drainNode(deps, request, new AbortController().signal);
        expect(refused).toMatchObject({
          outcome: 'timed-out',
          forced: [],
          blocking: [
            {
              pod: `${ns.name}/precious`,
              reason: expect.stringMatching(/^delete failed: .*(403|[Ff]orbidden)/),
            },
          ],
        });

        revoke = await grantForceDelete(ns);
        const forced = await drainNode(
          deps,
          { ...request, config: { ...request.config, timeoutSeconds: 20 } },
          new AbortController().signal,
        );
        expect(forced).toMatchObject({ outcome: 'drained', forced: [`${ns.name}/precious`], blocking: [] });
      } finally {
        await revoke?.();
        await core.deleteNode({ name: node }).catch(() => undefined);
      }
    },
  );
});

/** Asks until the answer is true (the authorizer's cache catching up with a new binding), for 10 s. */
async function pollAllowed(ask: () => Promise<boolean>): Promise<boolean> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    if (await ask()) return true;
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

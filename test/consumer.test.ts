/**
 * The consumer SDK against the real control plane: the `watch` transport follows a
 * ConfigMap the test writes (as admin), acting as a ServiceAccount that may only
 * get/list/watch that one ConfigMap (a Role naming it); it keeps following across watches
 * the server ends. Each transport's latency is measured over ~20 changes, from the write
 * being acknowledged (watch: the apiserver's answer to the update; file: the same, then the
 * atomic-writer swap the kubelet would do; sse: the agent's feed taking the function's answer)
 * to the follower's callback, and printed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAULT_DATA_KEY, STATUS_CONFIGMAP_NAME, VERSION_DATA_KEY } from '../contracts/index.js';
import { createFaultFeed, createLocalApp } from '../agent/local/index.js';
import { followStatus, type FollowError, type StatusFollower, type StatusUpdate } from '../consumer/index.js';
import { atomicWrite, device, document, nodeEntry, waitFor } from '../consumer/testing.js';
import { Registry, createLogger, systemClock } from '../platform/index.js';
import { serve } from '../platform/testing.js';
import { createTestNamespace, type TestNamespace } from './setup/cluster.js';

const NODE = 'ascend-1';
const CHANGES = 20;
const ROLE = 'npu-fault-status-reader';

let ns: TestNamespace;
let core: k8s.CoreV1Api;
let credentials: { server: string; token: string; ca?: string };
const latencies: Record<string, number[]> = {};
const followers: StatusFollower[] = [];

/** The document of change `i`: one device of NODE failed, a different one each time. */
function change(i: number) {
  return document(new Date(), [nodeEntry(NODE, [device(`npu${i}`, 'failed')])]);
}
const isChange = (i: number) => (u: StatusUpdate) => u.entry?.npus[0]?.id === `npu${i}`;

async function writeConfigMap(doc: object): Promise<void> {
  await core.replaceNamespacedConfigMap({
    name: STATUS_CONFIGMAP_NAME,
    namespace: ns.name,
    body: {
      metadata: { name: STATUS_CONFIGMAP_NAME },
      data: { [VERSION_DATA_KEY]: '3.0', [FAULT_DATA_KEY]: JSON.stringify(doc) },
    },
  });
}

function summary(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const p50 = sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN;
  return `p50 ${p50.toFixed(1)} ms, max ${(sorted.at(-1) ?? NaN).toFixed(1)} ms over ${sorted.length} changes`;
}

/**
 * Times CHANGES writes to the follower's callback: from the write being issued, and from it
 * being acknowledged (`write(i)` resolves with when it was; an API watch event can beat the
 * client's own reading of the update's answer, so that one may be negative).
 */
async function measure(
  name: string,
  follower: StatusFollower,
  write: (i: number) => Promise<number>,
): Promise<void> {
  const fromIssue: number[] = [];
  const fromAck: number[] = [];
  for (let i = 1; i <= CHANGES; i++) {
    let calledAt = NaN;
    const seen = waitFor<StatusUpdate>(
      (l) =>
        follower.onChange((u) => {
          if (isChange(i)(u)) calledAt = performance.now();
          l(u);
        }),
      isChange(i),
      `${name} change ${i}`,
      15_000,
    );
    const issued = performance.now();
    const acknowledged = await write(i);
    await seen;
    fromIssue.push(calledAt - issued);
    fromAck.push(calledAt - acknowledged);
  }
  latencies[`${name}, write issued → callback`] = fromIssue;
  latencies[`${name}, write acknowledged → callback`] = fromAck;
}

beforeAll(async () => {
  ns = await createTestNamespace('consumer');
  core = ns.admin.makeApiClient(k8s.CoreV1Api);
  const rbac = ns.admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  await core.createNamespacedConfigMap({
    namespace: ns.name,
    body: {
      metadata: { name: STATUS_CONFIGMAP_NAME },
      data: { [VERSION_DATA_KEY]: '3.0', [FAULT_DATA_KEY]: JSON.stringify(document(new Date())) },
    },
  });
  await core.createNamespacedConfigMap({
    namespace: ns.name,
    body: { metadata: { name: 'something-else' }, data: { [FAULT_DATA_KEY]: '{}' } },
  });
  // Exactly what a consumer pod needs: read that one ConfigMap.
  await rbac.createNamespacedRole({
    namespace: ns.name,
    body: {
      metadata: { name: ROLE },
      rules: [
        {
          apiGroups: [''],
          resources: ['configmaps'],
          resourceNames: [STATUS_CONFIGMAP_NAME],
          verbs: ['get', 'list', 'watch'],
        },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: ns.name,
    body: {
      metadata: { name: ROLE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: ROLE },
      subjects: [{ kind: 'ServiceAccount', name: 'consumer', namespace: ns.name }],
    },
  });
  const kc = await ns.serviceAccountKubeConfig('consumer');
  const cluster = ns.admin.getCurrentCluster();
  const token = kc.getCurrentUser()?.token;
  if (!cluster || !token) throw new Error('no cluster or token');
  const ca = cluster.caData
    ? Buffer.from(cluster.caData, 'base64').toString('utf8')
    : cluster.caFile
      ? await readFile(cluster.caFile, 'utf8')
      : undefined;
  credentials = { server: cluster.server, token, ...(ca ? { ca } : {}) };
});

afterAll(async () => {
  for (const follower of followers) await follower.close();
  for (const [name, values] of Object.entries(latencies))
    console.log(`consumer latency, ${name}: ${summary(values)}`);
  await ns?.dispose();
});

function follow(options: Parameters<typeof followStatus>[0]): StatusFollower {
  const follower = followStatus(options);
  followers.push(follower);
  return follower;
}

describe('consumer SDK on the real control plane', () => {
  it('watch: follows the ConfigMap with get/list/watch on that name only, across watches the server ends', async () => {
    const follower = follow({
      transport: 'watch',
      credentials,
      namespace: ns.name,
      node: NODE,
      timeoutSeconds: 2,
      initialBackoffMs: 50,
    });
    const errors: FollowError[] = [];
    follower.onError((e) => errors.push(e));
    expect((await follower.ready()).health).toBe('healthy');

    await measure('watch', follower, async (i) => {
      await writeConfigMap(change(i));
      return performance.now();
    });

    // The server ends each watch after 2 s; the follower resumes from where it was.
    const resumesBefore = follower.stats().resumes ?? 0;
    await waitFor<StatusUpdate>(
      (l) => {
        const timer = setInterval(() => l(follower.current() as StatusUpdate), 100);
        return () => clearInterval(timer);
      },
      () => (follower.stats().resumes ?? 0) > resumesBefore,
      'the server to end a watch',
      10_000,
    );
    const after = waitFor<StatusUpdate>(
      (l) => follower.onChange(l),
      isChange(99),
      'a change after the watch ended',
    );
    await writeConfigMap(change(99));
    await after;
    expect(follower.stats()).toMatchObject({ lists: 1 });
    expect(errors).toEqual([]);

    // Another major is reported, and the last good status kept.
    const refused = waitFor<FollowError>(
      (l) => follower.onError(l),
      (e) => e.kind === 'version',
      'version error',
    );
    await writeConfigMap({ ...change(100), version: '4.0' });
    await refused;
    expect(follower.current()?.entry?.npus[0]?.id).toBe('npu99');
  });

  it('watch: the Role is exact: another ConfigMap is refused', async () => {
    const follower = follow({
      transport: 'watch',
      credentials,
      namespace: ns.name,
      name: 'something-else',
      node: NODE,
      initialBackoffMs: 1000,
    });
    const error = await waitFor<FollowError>(
      (l) => follower.onError(l),
      () => true,
      'a refusal',
    );
    expect(error.message).toMatch(/HTTP 403/);
    await follower.close();
  });

  it('file: follows the kubelet atomic writer swapping the volume', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'consumer-volume-'));
    try {
      await atomicWrite(dir, {
        [FAULT_DATA_KEY]: JSON.stringify(document(new Date())),
        [VERSION_DATA_KEY]: '3.0',
      });
      const follower = follow({ transport: 'file', dir, node: NODE });
      await follower.ready();
      await measure('file', follower, async (i) => {
        const doc = change(i);
        await writeConfigMap(doc);
        const acknowledged = performance.now();
        await atomicWrite(dir, { [FAULT_DATA_KEY]: JSON.stringify(doc), [VERSION_DATA_KEY]: '3.0' });
        return acknowledged;
      });
      await follower.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("sse: follows the agent's real node-local stream", async () => {
    const feed = createFaultFeed();
    const app = createLocalApp(
      {
        feed,
        lastSample: () => null,
        node: NODE,
        clock: systemClock,
        log: createLogger({ level: 'silent' }),
        registry: new Registry(),
      },
      { heartbeatMs: 1000 },
    );
    const server = await serve(app);
    try {
      const follower = follow({ transport: 'sse', url: server.origin, node: NODE });
      feed.update({ entry: null, leader: 'controller-0', term: 1 }, new Date().toISOString());
      expect((await follower.ready()).health).toBe('healthy');
      await measure('sse', follower, (i) => {
        feed.update(
          { entry: change(i).nodes[NODE], leader: 'controller-0', term: 1 },
          new Date().toISOString(),
        );
        return Promise.resolve(performance.now());
      });
      await follower.close();
    } finally {
      app.close();
      await server.close();
    }
  });
});

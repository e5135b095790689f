/**
 * POST /v1/snapshots against the real apiserver, with real pod-bound tokens: kwok-managed
 * Nodes, Pods bound to them (spec.nodeName; no scheduler runs), the agent's ServiceAccount,
 * and tokens minted through the TokenRequest API bound to a Pod with audience `npu-fault`,
 * so TokenReview reports the Pod's node in `authentication.kubernetes.io/node-name`.
 *
 * The function's reviewer acts as a ServiceAccount allowed only to create TokenReviews (a
 * ClusterRole and binding made for this file), never as admin. A fake Forwarder stands for
 * the controllers. The reviewer's cache runs on a FakeClock, so "after the TTL" is a step of
 * that clock, not a sleep (a review is a real request, waited for as one).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { FakeClock, Registry, createLogger } from '../platform/index.js';
import { createTokenReviewer, kubeTokenReview, type ReviewToken } from '../platform/k8s/index.js';
import { ingestResponseSchema } from '../contracts/index.js';
import { NODE_NAME_EXTRA, agentUser, createFunctionApp } from '../functions/app/index.js';
import {
  createFakeForwarder,
  gpuSnapshot,
  postSnapshots,
  serve,
  type FakeForwarder,
  type TestServer,
} from '../functions/app/testing.js';
import { createTestNamespace, type TestNamespace, kwokAvailable } from './setup/cluster.js';

const AUDIENCE = 'npu-fault';
const AGENT_SA = 'npu-fault-agent';
const FUNCTION_SA = 'npu-fault-function';
const TTL_MS = 30_000;
const REFRESH_AHEAD_MS = 10_000;

// kwok runs nodes and pods on the local control plane; an existing cluster must say it has it.
const describeWithKwok = kwokAvailable() ? describe : describe.skip;

describeWithKwok('POST /v1/snapshots on the real control plane, with pod-bound tokens', () => {
  let ns: TestNamespace;
  let core: k8s.CoreV1Api;
  let rbac: k8s.RbacAuthorizationV1Api;
  let reviewAs: k8s.KubeConfig;
  let server: TestServer;
  let forwarder: FakeForwarder;
  const clock = new FakeClock(Date.now());
  const nodes: string[] = [];
  let nodeA = '';
  let nodeB = '';
  let seq = 0;
  const roleName = (): string => `npu-fault-function-tokenreview-${ns.name}`;

  async function createServiceAccount(name: string): Promise<void> {
    try {
      await core.createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name } } });
    } catch (error) {
      if ((error as { code?: number }).code !== 409) throw error;
    }
  }

  async function createNode(name: string): Promise<void> {
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
  }

  /** A Pod of `serviceAccount` bound to `node` (no scheduler: spec.nodeName). */
  async function createPod(name: string, node: string, serviceAccount = AGENT_SA): Promise<k8s.V1Pod> {
    return core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name },
        spec: {
          nodeName: node,
          serviceAccountName: serviceAccount,
          automountServiceAccountToken: false,
          containers: [{ name: 'agent', image: 'registry.invalid/npu-fault:1' }],
        },
      },
    });
  }

  /** A token of `serviceAccount` bound to `pod` (TokenRequest, boundObjectRef kind Pod). */
  async function podToken(
    pod: k8s.V1Pod,
    options: { serviceAccount?: string; audiences?: string[] } = {},
  ): Promise<string> {
    const response = await core.createNamespacedServiceAccountToken({
      name: options.serviceAccount ?? AGENT_SA,
      namespace: ns.name,
      body: {
        spec: {
          audiences: options.audiences ?? [AUDIENCE],
          expirationSeconds: 600,
          boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: pod.metadata?.name, uid: pod.metadata?.uid },
        },
      },
    });
    const token = response.status?.token;
    if (!token) throw new Error('TokenRequest returned no token');
    return token;
  }

  const snapshotOf = (node: string): unknown => gpuSnapshot({ node, seq: ++seq });

  /**
   * A Pod `name` on node A and its agent's token, posted once (200, so its review is cached);
   * then the Pod deleted, and a wait, with a deadline, until a review that bypasses our cache
   * refuses the token (the apiserver caches token authentications itself for a few seconds).
   * Returns a post under that token, answering its status.
   */
  async function tokenOfDeletedPod(name: string): Promise<() => Promise<number>> {
    const token = await podToken(await createPod(name, nodeA));
    const post = async (): Promise<number> =>
      (await postSnapshots(server.url, snapshotOf(nodeA), { token })).status;
    expect(await post()).toBe(200);
    await core.deleteNamespacedPod({ name, namespace: ns.name, gracePeriodSeconds: 0 });
    const direct: ReviewToken = kubeTokenReview(reviewAs.makeApiClient(k8s.AuthenticationV1Api));
    const deadline = Date.now() + 30_000;
    while ((await direct(token, [AUDIENCE], AbortSignal.timeout(5000))).authenticated) {
      if (Date.now() > deadline) throw new Error('the apiserver still accepts the deleted Pod’s token');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return post;
  }

  let podA: k8s.V1Pod;
  let tokenA: string;

  beforeAll(async () => {
    ns = await createTestNamespace('function-auth');
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    rbac = ns.admin.makeApiClient(k8s.RbacAuthorizationV1Api);
    nodeA = `${ns.name}-a`;
    nodeB = `${ns.name}-b`;
    await rbac.createClusterRole({
      body: {
        metadata: { name: roleName() },
        rules: [{ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: roleName() },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName() },
        subjects: [{ kind: 'ServiceAccount', name: FUNCTION_SA, namespace: ns.name }],
      },
    });
    reviewAs = await ns.serviceAccountKubeConfig(FUNCTION_SA);
    await createServiceAccount(AGENT_SA);
    await createServiceAccount('someone-else');
    await createNode(nodeA);
    await createNode(nodeB);
    podA = await createPod('agent-a', nodeA);
    tokenA = await podToken(podA);

    forwarder = createFakeForwarder({ leader: 'controller-0', term: 3 });
    const reviewer = createTokenReviewer({
      review: kubeTokenReview(reviewAs.makeApiClient(k8s.AuthenticationV1Api)),
      audiences: [AUDIENCE],
      clock,
      ttlMs: TTL_MS,
      refreshAheadMs: REFRESH_AHEAD_MS,
      negativeTtlMs: 1000,
    });
    server = await serve(
      createFunctionApp(
        {
          authenticate: reviewer.authenticate,
          forwarder,
          clock,
          log: createLogger({ level: 'silent' }),
          registry: new Registry(),
        },
        { agentNamespace: ns.name },
      ),
    );
  });

  afterAll(async () => {
    await server?.close();
    for (const node of nodes) await core.deleteNode({ name: node }).catch(() => undefined);
    if (ns) {
      await rbac.deleteClusterRoleBinding({ name: roleName() }).catch(() => undefined);
      await rbac.deleteClusterRole({ name: roleName() }).catch(() => undefined);
      await ns.dispose();
    }
  });

  it("TokenReview reports the bound Pod's node for a pod-bound token", async () => {
    const review = kubeTokenReview(reviewAs.makeApiClient(k8s.AuthenticationV1Api));
    const status = await review(tokenA, [AUDIENCE], AbortSignal.timeout(5000));
    expect(status.authenticated).toBe(true);
    expect(status.user?.username).toBe(agentUser(ns.name));
    expect(status.user?.extra?.[NODE_NAME_EXTRA]).toEqual([nodeA]);
  });

  it('200 for a token of node A posting node A; the leader answers through the forwarder', async () => {
    const calls = forwarder.calls.length;
    const response = await postSnapshots(server.url, snapshotOf(nodeA), { token: tokenA });
    expect(response.status).toBe(200);
    expect(ingestResponseSchema.parse(response.json)).toEqual({
      leader: 'controller-0',
      term: 3,
      results: [{ node: nodeA, accepted: true, entry: null }],
    });
    expect(forwarder.calls.length).toBe(calls + 1);
  });

  it('403 for a token of node A posting node B; nothing forwarded', async () => {
    const calls = forwarder.calls.length;
    const response = await postSnapshots(server.url, snapshotOf(nodeB), { token: tokenA });
    expect(response.status).toBe(403);
    expect(response.json).toEqual({
      error: {
        code: 'node_mismatch',
        message: `/node: the token is bound to node "${nodeA}", not "${nodeB}"`,
      },
    });
    expect(forwarder.calls.length).toBe(calls);
  });

  it("a token of node B's agent posts node B", async () => {
    const token = await podToken(await createPod('agent-b', nodeB));
    expect((await postSnapshots(server.url, snapshotOf(nodeB), { token })).status).toBe(200);
    expect((await postSnapshots(server.url, snapshotOf(nodeA), { token })).status).toBe(403);
  });

  it('401 for a pod-bound token of another audience', async () => {
    const token = await podToken(podA, { audiences: ['someone-else'] });
    const response = await postSnapshots(server.url, snapshotOf(nodeA), { token });
    expect(response.status).toBe(401);
    expect((response.json as { error: { code: string } }).error.code).toBe('invalid_token');
  });

  it('403 for a pod-bound token of a foreign ServiceAccount', async () => {
    const pod = await createPod('foreign', nodeA, 'someone-else');
    const token = await podToken(pod, { serviceAccount: 'someone-else' });
    const response = await postSnapshots(server.url, snapshotOf(nodeA), { token });
    expect(response.status).toBe(403);
    expect(response.json).toEqual({
      error: {
        code: 'forbidden_user',
        message: `user "system:serviceaccount:${ns.name}:someone-else" may not post snapshots`,
      },
    });
  });

  it('403 for a token of the agent that is not bound to a Pod', async () => {
    const response = await core.createNamespacedServiceAccountToken({
      name: AGENT_SA,
      namespace: ns.name,
      body: { spec: { audiences: [AUDIENCE], expirationSeconds: 600 } },
    });
    const unbound = await postSnapshots(server.url, snapshotOf(nodeA), {
      token: response.status?.token ?? '',
    });
    expect(unbound.status).toBe(403);
    expect((unbound.json as { error: { code: string } }).error.code).toBe('not_node_bound');
  });

  it.each([
    ['garbage', 'garbage'],
    ['a forged signature', (): string => tokenA.replace(/[^.]+$/, 'Zm9yZ2Vk')],
  ])('401 for %s', async (_name, token) => {
    const text = typeof token === 'string' ? token : token();
    const response = await postSnapshots(server.url, snapshotOf(nodeA), { token: text });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="npu-fault", error="invalid_token"');
  });

  it('a token whose Pod was deleted is refused (401) once the cached review expires', async () => {
    const post = await tokenOfDeletedPod('doomed');
    expect(await post()).toBe(200); // the positive review is still cached
    await clock.advance(TTL_MS + 1);
    expect(await post()).toBe(401);
  });

  it('a token whose Pod was deleted is refused as soon as the review ahead of its stay’s end says so', async () => {
    const post = await tokenOfDeletedPod('doomed-early');

    // 20 s into a 30 s stay: in its last 10 s, served while reviewed again in the background.
    await clock.advance(TTL_MS - REFRESH_AHEAD_MS);
    expect(await post()).toBe(200);
    const statuses: number[] = [];
    const deadline = Date.now() + 10_000;
    for (let status = 200; status === 200;) {
      if (Date.now() > deadline) throw new Error('the background review never refused the token');
      await new Promise((resolve) => setTimeout(resolve, 20)); // the review is a real request
      status = await post();
      statuses.push(status);
    }
    expect(statuses.at(-1)).toBe(401);
    expect(statuses.slice(0, -1).every((status) => status === 200)).toBe(true);
  });
});

/**
 * POST /v1/observations against the real apiserver: the controller's side checks tokens with
 * TokenReview acting as its own ServiceAccount under exactly the shipped RBAC
 * (k8s/controller/rbac.yaml grants `create` on tokenreviews), and the callers present real
 * ServiceAccount tokens minted through the TokenRequest API. A tiny real engine stands behind
 * the endpoint. The reviewer's cache runs on a FakeClock, so "after the TTL" is a step of
 * that clock, not a sleep.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { createEngine } from '../core/engine/index.js';
import { Registry, createLogger, FakeClock } from '../platform/index.js';
import {
  createTokenReviewer,
  kubeTokenReview,
  type TokenReviewer,
  type TokenReviewerOptions,
} from '../platform/k8s/index.js';
import { followerResponseSchema, leaderResponseSchema } from '../contracts/index.js';
import { createObservationsApp } from '../controller/observations/index.js';
import {
  gpuSnapshot,
  observationsBody,
  postObservations,
  serve,
  type TestServer,
} from '../controller/observations/testing.js';
import type { Leadership } from '../controller/leader-election/index.js';
import { createTestNamespace, type TestNamespace } from './setup/cluster.js';
import { controllerAccess, type ControllerAccess } from './setup/controller-rbac.js';

const TTL_MS = 30_000;
const CONTROLLER_AUDIENCE = 'npu-fault-controller';

describe('POST /v1/observations on the real control plane, TokenReview under the shipped RBAC', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 1));
  const lead: { current: Leadership } = { current: { leading: true, term: 4 } };
  const servers: TestServer[] = [];
  let seq = 0;

  const user = (serviceAccount: string): string => `system:serviceaccount:${ns.name}:${serviceAccount}`;

  /** A fresh token of `serviceAccount` in the test namespace (created when missing). */
  async function mintToken(serviceAccount: string, audiences: string[] = []): Promise<string> {
    try {
      await core.createNamespacedServiceAccount({
        namespace: ns.name,
        body: { metadata: { name: serviceAccount } },
      });
    } catch (error) {
      if ((error as { code?: number }).code !== 409) throw error;
    }
    const response = await core.createNamespacedServiceAccountToken({
      name: serviceAccount,
      namespace: ns.name,
      body: { spec: { audiences, expirationSeconds: 600 } },
    });
    const token = response.status?.token;
    if (!token) throw new Error(`TokenRequest for ${serviceAccount} returned no token`);
    return token;
  }

  /** A reviewer acting as the controller (its shipped RBAC), on the test's FakeClock. */
  function controllerReviewer(
    options: Partial<TokenReviewerOptions> = {},
    kc = access.kubeConfig,
  ): TokenReviewer {
    const review = kubeTokenReview(kc.makeApiClient(k8s.AuthenticationV1Api));
    return createTokenReviewer({ review, clock, ttlMs: TTL_MS, negativeTtlMs: 1000, ...options });
  }

  /** The endpoint on an ephemeral port, with a real engine behind it. */
  async function startEndpoint(reviewer: TokenReviewer, allowed: string[]): Promise<TestServer> {
    const engine = createEngine();
    const server = await serve(
      createObservationsApp(
        {
          authenticate: reviewer.authenticate,
          accept: (snapshots, now) => snapshots.map((snapshot) => engine.observe(snapshot, now)),
          entryFor: (node) => engine.nodeEntry(node),
          leadership: () => lead.current,
          identity: 'controller-0',
          leaderIdentity: () => 'controller-1',
          clock,
          log: createLogger({ level: 'silent' }),
          registry: new Registry(),
        },
        { allowedUsers: allowed.map(user) },
      ),
    );
    servers.push(server);
    return server;
  }

  const failing = (): unknown => gpuSnapshot({ node: 'gpu-a', seq: ++seq, xids: [79] });

  let endpoint: TestServer;
  let functionToken: string;

  beforeAll(async () => {
    ns = await createTestNamespace('observations');
    access = await controllerAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    functionToken = await mintToken('npu-fault-function');
    endpoint = await startEndpoint(controllerReviewer(), ['npu-fault-function']);
  });

  afterAll(async () => {
    for (const server of servers) await server.close();
    await access?.dispose();
    await ns?.dispose();
  });

  it("accepts the function's token, and the leader answers with the failed entry of the posted node", async () => {
    lead.current = { leading: true, term: 4 };
    const response = await postObservations(
      endpoint.url,
      observationsBody(failing(), gpuSnapshot({ node: 'gpu-b' })),
      {
        token: functionToken,
      },
    );
    expect(response.status).toBe(200);
    const body = leaderResponseSchema.parse(response.json);
    expect(body).toMatchObject({ leader: true, identity: 'controller-0', term: 4 });
    expect(body.results[0]).toMatchObject({ node: 'gpu-a', accepted: true });
    expect(body.results[0]?.entry?.npus).toEqual([
      expect.objectContaining({ id: 'gpu0', status: 'failed', reason: 'xid-79' }),
    ]);
    expect(body.results[1]).toEqual({ node: 'gpu-b', accepted: true, entry: null });
  });

  it('a follower accepts as well and names the leader', async () => {
    lead.current = { leading: false };
    const response = await postObservations(endpoint.url, observationsBody(failing()), {
      token: functionToken,
    });
    lead.current = { leading: true, term: 4 };
    expect(response.status).toBe(200);
    expect(followerResponseSchema.strict().parse(response.json)).toEqual({
      leader: false,
      identity: 'controller-0',
      leader_identity: 'controller-1',
      results: [{ node: 'gpu-a', accepted: true }],
    });
  });

  it("403 for another ServiceAccount's valid token", async () => {
    const response = await postObservations(endpoint.url, observationsBody(failing()), {
      token: await mintToken('someone-else'),
    });
    expect(response.status).toBe(403);
    expect(response.json).toEqual({
      error: { code: 'forbidden', message: `user "${user('someone-else')}" may not post observations` },
    });
  });

  it.each([
    ['garbage', (): string => 'garbage'],
    ['a forged JWT', forgedJwt],
    [
      "the function's token with its signature replaced",
      (): string => functionToken.replace(/[^.]+$/, 'Zm9yZ2Vk'),
    ],
  ])('401 for %s', async (_name, token) => {
    const response = await postObservations(endpoint.url, observationsBody(failing()), { token: token() });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="npu-fault", error="invalid_token"');
    expect(response.json).toEqual({
      error: { code: 'invalid_token', message: 'the bearer token was not accepted' },
    });
  });

  it('checks the audience: a token for the controller passes, one for the apiserver does not', async () => {
    const server = await startEndpoint(controllerReviewer({ audiences: [CONTROLLER_AUDIENCE] }), [
      'npu-fault-function',
    ]);
    const own = await mintToken('npu-fault-function', [CONTROLLER_AUDIENCE]);
    expect((await postObservations(server.url, observationsBody(failing()), { token: own })).status).toBe(
      200,
    );
    expect(
      (await postObservations(server.url, observationsBody(failing()), { token: functionToken })).status,
    ).toBe(401);
  });

  it('503, not 401, when the controller cannot create TokenReviews (no RBAC for them)', async () => {
    const unprivileged = await ns.serviceAccountKubeConfig('no-rbac');
    const server = await startEndpoint(controllerReviewer({}, unprivileged), ['npu-fault-function']);
    const response = await postObservations(server.url, observationsBody(failing()), {
      token: functionToken,
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect((response.json as { error: { code: string } }).error.code).toBe('token_review_unavailable');
  });

  it("a deleted ServiceAccount's token is refused once the cached review expires", async () => {
    const reviewer = controllerReviewer();
    const server = await startEndpoint(reviewer, ['doomed-function']);
    const token = await mintToken('doomed-function');
    const post = async (): Promise<number> =>
      (await postObservations(server.url, observationsBody(failing()), { token })).status;
    expect(await post()).toBe(200);

    await core.deleteNamespacedServiceAccount({ name: 'doomed-function', namespace: ns.name });
    // The apiserver caches successful token authentications itself (about 10 s, measured
    // here), so revocation takes that plus our TTL: wait, with a deadline, until a review
    // that bypasses our cache refuses the token.
    const direct = kubeTokenReview(access.kubeConfig.makeApiClient(k8s.AuthenticationV1Api));
    const deadline = Date.now() + 30_000;
    while ((await direct(token, undefined, AbortSignal.timeout(5000))).authenticated) {
      if (Date.now() > deadline)
        throw new Error('the apiserver still accepts the deleted ServiceAccount token');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    expect(await post()).toBe(200); // the positive review is still cached
    await clock.advance(TTL_MS + 1);
    expect(await post()).toBe(401);
  });
});

/** A JWT with the shape of a ServiceAccount token but a signature nobody made. */
function forgedJwt(): string {
  const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return [
    part({ alg: 'RS256', kid: 'forged' }),
    part({
      iss: 'https://kubernetes.default.svc.cluster.local',
      sub: 'system:serviceaccount:x:npu-fault-function',
      exp: now + 600,
    }),
    Buffer.from('not a signature').toString('base64url'),
  ].join('.');
}

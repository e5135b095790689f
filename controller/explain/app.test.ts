import { afterEach, describe, expect, it } from '@jest/globals';
import { gpuSnapshot } from '../../contracts/testing.js';
import { explainResponseSchema, snapshotSchema } from '../../contracts/index.js';
import { createEngine } from '../../core/engine/index.js';
import { FakeClock, createLogger } from '../../platform/index.js';
import {
  TokenReviewUnavailableError,
  UnauthenticatedError,
  type AuthenticatedUser,
} from '../../platform/k8s/index.js';
import { serve, type TestServer } from '../../platform/testing.js';
import type { Leadership } from '../leader-election/index.js';
import { createExplainApp, explainUser, withExplain, type ExplainAppDeps } from './index.js';

/** What a token `npu-fault explain` minted authenticates as. */
const OPERATOR = explainUser('ai-infra');
const user = (username: string): AuthenticatedUser => ({
  username,
  uid: 'u',
  groups: [],
  extra: {},
  audiences: [],
});

const open: TestServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function start(overrides: Partial<ExplainAppDeps> = {}) {
  const engine = createEngine();
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 2));
  engine.observe(snapshotSchema.parse(gpuSnapshot({ xids: [79] })), clock.now());
  const lead: { current: Leadership } = { current: { leading: true, term: 4 } };
  const deps: ExplainAppDeps = {
    authenticate: async (token) => {
      if (token === 'operator') return user(OPERATOR);
      if (token === 'nobody') return user('system:serviceaccount:ai-infra:nobody');
      if (token === 'review-down') throw new TokenReviewUnavailableError(new Error('ECONNREFUSED'));
      throw new UnauthenticatedError('invalid_token', 'the bearer token was not accepted');
    },
    explain: (node, device, now) => engine.explain(node, device, now),
    leadership: () => lead.current,
    identity: 'controller-0',
    leaderIdentity: () => 'controller-1',
    namespace: 'ai-infra',
    clock,
    log: createLogger({ level: 'silent' }),
    ...overrides,
  };
  const fallback = (_req: unknown, res: { statusCode: number; end(text: string): void }) => {
    res.statusCode = 299;
    res.end('observations');
  };
  const server = await serve(withExplain(createExplainApp(deps), fallback as never));
  open.push(server);
  return { server, lead };
}

async function get(server: TestServer, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.origin}${path}`, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json().catch(() => null)) as unknown };
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('GET /v1/explain', () => {
  it("explains a device to the explain ServiceAccount's token, saying who answers", async () => {
    const { server } = await start();
    const res = await get(server, '/v1/explain/gpu-node-1/gpu0', bearer('operator'));
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    // The answer is the contract's (contracts/explain.ts), which the CLI reads it with.
    const body = explainResponseSchema.parse(res.body);
    expect(body).toEqual(res.body);
    expect(body).toMatchObject({
      leader: true,
      identity: 'controller-0',
      term: 4,
      leader_identity: 'controller-0',
    });
    expect(body.explanation.devices.map((d) => [d.id, d.status, d.latched, d.clear])).toEqual([
      ['gpu0', 'failed', ['xid-79'], 'npu-fault clear gpu-node-1/gpu0'],
    ]);
  });

  it('explains every device of a node, and answers as a follower naming the leader', async () => {
    const { server, lead } = await start();
    lead.current = { leading: false };
    const res = await get(server, '/v1/explain/gpu-node-1', bearer('operator'));
    expect(res.status).toBe(200);
    const body = explainResponseSchema.parse(res.body);
    expect(body).toMatchObject({ leader: false, term: null, leader_identity: 'controller-1' });
    expect(body.explanation.devices.map((d) => d.id)).toEqual(['gpu0', 'gpu1']);
  });

  it('reads the token from X-Npu-Fault-Authorization first (the pod proxy drops Authorization)', async () => {
    const { server } = await start();
    const res = await get(server, '/v1/explain/gpu-node-1', {
      'X-Npu-Fault-Authorization': 'Bearer operator',
      Authorization: 'Bearer apiserver-only',
    });
    expect(res.status).toBe(200);
  });

  it.each([
    ['no token', {}, 401, 'missing Authorization: Bearer <token> header'],
    ['a refused token', bearer('bad'), 401, 'the bearer token was not accepted'],
    [
      'another account',
      bearer('nobody'),
      403,
      'user "system:serviceaccount:ai-infra:nobody" may not get explanations: only tokens of the ServiceAccount ai-infra/npu-fault-explain are taken (npu-fault explain mints one)',
    ],
    ['TokenReview down', bearer('review-down'), 503, undefined],
  ])('answers %s with its status and one line', async (_what, headers, status, message) => {
    const { server } = await start();
    const res = await get(server, '/v1/explain/gpu-node-1', headers as Record<string, string>);
    expect(res.status).toBe(status);
    const error = (res.body as { error: { message: string } }).error;
    expect(error.message).not.toContain('\n');
    if (message !== undefined) expect(error.message).toBe(message);
  });

  it('answers 404 for a node or device the engine does not track, 503 before seeding', async () => {
    const { server } = await start();
    const node = await get(server, '/v1/explain/nope', bearer('operator'));
    expect(node).toMatchObject({
      status: 404,
      body: { error: { message: 'node "nope" is not tracked: the engine has no device state for it' } },
    });
    const device = await get(server, '/v1/explain/gpu-node-1/gpu9', bearer('operator'));
    expect(device).toMatchObject({
      status: 404,
      body: { error: { message: 'device "gpu9" is not tracked on node "gpu-node-1"' } },
    });
    const starting = await start({ explain: () => undefined });
    const res = await get(starting.server, '/v1/explain/gpu-node-1', bearer('operator'));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
  });

  it('refuses other methods with 405, and leaves other paths to the observation endpoint', async () => {
    const { server } = await start();
    const post = await fetch(`${server.origin}/v1/explain/gpu-node-1`, {
      method: 'POST',
      headers: bearer('operator'),
    });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    const other = await fetch(`${server.origin}/v1/observations`);
    expect([other.status, await other.text()]).toEqual([299, 'observations']);
    const tooDeep = await get(server, '/v1/explain/a/b/c', bearer('operator'));
    expect(tooDeep.status).toBe(404);
  });
});

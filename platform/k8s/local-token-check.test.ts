import { beforeAll, describe, expect, it } from '@jest/globals';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { FakeClock } from '../clock.js';
import {
  createIssuerKeyCache,
  createLocalTokenCheck,
  type IssuerKeyCacheOptions,
  type IssuerKeys,
} from './local-token-check.js';
import { createTokenReviewer, type TokenReviewStatus } from './token-review.js';

const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const AGENT = 'system:serviceaccount:npu-fault-agent:npu-fault-agent';

interface Signer {
  privateKey: CryptoKey;
  jwk: JWK;
}

async function signer(kid: string): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

let apiserver: Signer;
let rotated: Signer;
let stranger: Signer;

beforeAll(async () => {
  [apiserver, rotated, stranger] = await Promise.all([signer('k1'), signer('k2'), signer('k1')]);
});

/** A ServiceAccount token as the apiserver mints one for a pod on `node`. */
function token(
  clock: FakeClock,
  by: Signer,
  claims: { sub?: string; aud?: string[]; node?: string | null; iss?: string; expIn?: number } = {},
): Promise<string> {
  const now = Math.floor(clock.now() / 1000);
  const node = claims.node === undefined ? 'node-1' : claims.node;
  return new SignJWT({
    'kubernetes.io': {
      namespace: 'npu-fault-agent',
      serviceaccount: { name: 'npu-fault-agent', uid: 'u1' },
      ...(node === null ? {} : { node: { name: node, uid: 'n1' }, pod: { name: 'agent-x', uid: 'p1' } }),
    },
  })
    .setProtectedHeader({ alg: 'RS256', kid: by.jwk.kid! })
    .setIssuer(claims.iss ?? ISSUER)
    .setSubject(claims.sub ?? AGENT)
    .setAudience(claims.aud ?? ['npu-fault'])
    .setIssuedAt(now)
    .setExpirationTime(now + (claims.expIn ?? 3600))
    .sign(by.privateKey);
}

/** The apiserver's discovery endpoints, counting reads; `failing` makes them error. */
function discovery(keys: () => JWK[]): {
  fetchKeys: IssuerKeyCacheOptions['fetchKeys'];
  reads: () => number;
  failing: boolean;
} {
  let reads = 0;
  const state = {
    failing: false,
    reads: () => reads,
    fetchKeys: async (): Promise<IssuerKeys> => {
      reads++;
      if (state.failing) throw new Error('forbidden');
      return { issuer: ISSUER, keys: { keys: keys() } };
    },
  };
  return state;
}

function setup(
  options: Pick<IssuerKeyCacheOptions, 'refreshMs' | 'unknownKeyRetryMs'> = {},
  keys: () => JWK[] = () => [apiserver.jwk],
) {
  const clock = new FakeClock();
  const endpoints = discovery(keys);
  const cache = createIssuerKeyCache({ fetchKeys: endpoints.fetchKeys, clock, ...options });
  const check = createLocalTokenCheck({
    keys: cache,
    audiences: ['npu-fault'],
    subjects: [AGENT],
    requireNode: true,
    clock,
  });
  return { clock, endpoints, check, cache };
}

describe('createLocalTokenCheck', () => {
  it("passes a pod-bound token of an allowed account, signed by the apiserver's key, for our audience", async () => {
    const { clock, check } = setup();
    expect(await check.check(await token(clock, apiserver))).toEqual({ kind: 'pass' });
  });

  it.each([
    ['garbage', async () => 'not-a-token', 'not a JWT'],
    [
      'another key with the same kid',
      async (c: FakeClock) => token(c, stranger),
      'signature does not verify',
    ],
    [
      'another audience (the apiserver default)',
      async (c: FakeClock) => token(c, apiserver, { aud: ['https://kubernetes.default.svc'] }),
      'claim aud',
    ],
    [
      'another account (a tenant pod projecting our audience)',
      async (c: FakeClock) => token(c, apiserver, { sub: 'system:serviceaccount:tenant:default' }),
      'subject',
    ],
    ['a token not bound to a node', async (c: FakeClock) => token(c, apiserver, { node: null }), 'not bound'],
    ['an expired token', async (c: FakeClock) => token(c, apiserver, { expIn: -60 }), 'expired'],
  ])('refuses %s', async (_name, make, detail) => {
    const { clock, check } = setup();
    const verdict = await check.check(await make(clock));
    expect(verdict.kind).toBe('fail');
    expect(verdict.kind === 'fail' && verdict.detail).toContain(detail);
  });

  it('reads the keys once for many tokens, and again only after refreshMs', async () => {
    const { clock, check, endpoints } = setup({ refreshMs: 60_000 });
    for (let i = 0; i < 5; i++) await check.check(await token(clock, apiserver));
    expect(endpoints.reads()).toBe(1);
    await clock.advance(60_000);
    await check.check(await token(clock, apiserver));
    expect(endpoints.reads()).toBe(2);
  });

  it('never refuses a rotated key: it reads the keys again (at most once per unknownKeyRetryMs), else leaves it to TokenReview', async () => {
    let published = [apiserver.jwk];
    const { clock, check, endpoints } = setup({ unknownKeyRetryMs: 30_000 }, () => published);
    expect(await check.check(await token(clock, apiserver))).toEqual({ kind: 'pass' });
    expect(endpoints.reads()).toBe(1);
    // Rotated, but read too recently to read again: unknown (reviewed), not refused.
    published = [apiserver.jwk, rotated.jwk];
    expect((await check.check(await token(clock, rotated))).kind).toBe('unknown');
    expect(endpoints.reads()).toBe(1);
    await clock.advance(30_000);
    expect(await check.check(await token(clock, rotated))).toEqual({ kind: 'pass' });
    expect(endpoints.reads()).toBe(2);
    // Random kids with the right claims: unknown, and no more reads within the interval.
    const forged = await signer('random-kid');
    for (let i = 0; i < 20; i++) expect((await check.check(await token(clock, forged))).kind).toBe('unknown');
    expect(endpoints.reads()).toBe(2);
  });

  it('lets every check that arrives during a read wait for it (two tokens of a new key together)', async () => {
    const published = [apiserver.jwk, rotated.jwk];
    const { clock, check, endpoints } = setup({}, () => published);
    const [a, b] = await Promise.all([
      token(clock, rotated, { node: 'a' }),
      token(clock, rotated, { node: 'b' }),
    ]);
    expect(await Promise.all([check.check(a), check.check(b)])).toEqual([{ kind: 'pass' }, { kind: 'pass' }]);
    expect(endpoints.reads()).toBe(1);
  });

  it('refuses on the claims alone, even while the keys cannot be read', async () => {
    const { clock, check, endpoints } = setup();
    endpoints.failing = true;
    const forged = await signer('whatever');
    expect((await check.check(await token(clock, forged, { aud: ['other'] }))).kind).toBe('fail');
    expect((await check.check(await token(clock, forged, { sub: 'system:serviceaccount:x:y' }))).kind).toBe(
      'fail',
    );
    expect((await check.check(await token(clock, forged, { node: null }))).kind).toBe('fail');
    expect(endpoints.reads()).toBe(0);
    expect((await check.check(await token(clock, forged))).kind).toBe('unknown');
  });

  it('forgives a minute of clock skew, as the apiserver does', async () => {
    const { clock, check } = setup();
    const ahead = await new SignJWT({ 'kubernetes.io': { node: { name: 'node-1' } } })
      .setProtectedHeader({ alg: 'RS256', kid: apiserver.jwk.kid! })
      .setIssuer(ISSUER)
      .setSubject(AGENT)
      .setAudience('npu-fault')
      .setNotBefore(Math.floor(clock.now() / 1000) + 10)
      .setExpirationTime(Math.floor(clock.now() / 1000) + 3600)
      .sign(apiserver.privateKey);
    expect(await check.check(ahead)).toEqual({ kind: 'pass' });
  });

  it('leaves a token to TokenReview when the key set holds two keys of its kid', async () => {
    const twin = { ...rotated.jwk, kid: 'k1' };
    const { clock, check } = setup({}, () => [apiserver.jwk, twin]);
    expect((await check.check(await token(clock, apiserver))).kind).toBe('unknown');
  });

  it('says unknown while the keys cannot be read, and tries again after unknownKeyRetryMs', async () => {
    const { clock, check, endpoints, cache } = setup({ unknownKeyRetryMs: 30_000 });
    endpoints.failing = true;
    const good = await token(clock, apiserver);
    expect((await check.check(good)).kind).toBe('unknown');
    expect((await check.check(good)).kind).toBe('unknown');
    expect(endpoints.reads()).toBe(1);
    expect(cache.ready).toBe(false);
    endpoints.failing = false;
    await clock.advance(30_000);
    expect(await check.check(good)).toEqual({ kind: 'pass' });
    expect(cache.ready).toBe(true);
  });

  it('leaves a token of another issuer signed by a published key to TokenReview (unknown)', async () => {
    const { clock, check } = setup();
    const verdict = await check.check(await token(clock, apiserver, { iss: 'https://old-issuer' }));
    expect(verdict.kind).toBe('unknown');
  });
});

describe('createTokenReviewer with a local check', () => {
  const reviewed = (username = AGENT): TokenReviewStatus => ({
    authenticated: true,
    user: { username, uid: 'u', groups: [], extra: { 'authentication.kubernetes.io/node-name': ['node-1'] } },
    audiences: ['npu-fault'],
  });

  it('refuses garbage without a review and keeps every slot for a good token', async () => {
    const { clock, check } = setup();
    const reviews: string[] = [];
    let releaseAll: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (releaseAll = resolve));
    const reviewer = createTokenReviewer({
      review: async (t) => {
        reviews.push(t);
        await gate;
        return reviewed();
      },
      audiences: ['npu-fault'],
      clock,
      localCheck: check,
      maxConcurrent: 1,
      maxQueued: 0,
    });
    // 400 garbage tokens of every kind at once: none reaches TokenReview.
    const forged = await signer('k1');
    const garbage = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        i % 4 === 0
          ? Promise.resolve(`garbage-${i}`)
          : i % 4 === 1
            ? token(clock, forged, { node: `n${i}` })
            : i % 4 === 2
              ? token(clock, apiserver, { sub: `system:serviceaccount:tenant:sa-${i}` })
              : token(clock, apiserver, { aud: ['other'], node: `n${i}` }),
      ),
    );
    const refusals = garbage.map((t) =>
      reviewer.authenticate(t).then(
        () => 'accepted',
        (e: Error) => e.message,
      ),
    );
    const good = reviewer.authenticate(await token(clock, apiserver));
    releaseAll();
    expect((await good).username).toBe(AGENT);
    expect(new Set(await Promise.all(refusals))).toEqual(new Set(['the bearer token was not accepted']));
    expect(reviews).toHaveLength(1);
  });

  it('while the keys cannot be read, still refuses garbage on its claims and reviews the good token', async () => {
    const { clock, check, endpoints } = setup();
    endpoints.failing = true;
    const reviews: string[] = [];
    const reviewer = createTokenReviewer({
      review: async (t) => {
        reviews.push(t);
        return reviewed();
      },
      audiences: ['npu-fault'],
      clock,
      localCheck: check,
    });
    const forged = await signer('k1');
    const garbage = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        i % 2 === 0
          ? token(clock, forged, { sub: `system:serviceaccount:tenant:sa-${i}` })
          : token(clock, forged, { aud: ['https://kubernetes.default.svc'], node: `n${i}` }),
      ),
    );
    const refused = await Promise.all(
      garbage.map((t) =>
        reviewer.authenticate(t).then(
          () => 'accepted',
          () => 'refused',
        ),
      ),
    );
    expect(new Set(refused)).toEqual(new Set(['refused']));
    const good = await token(clock, apiserver);
    expect((await reviewer.authenticate(good)).username).toBe(AGENT);
    expect(reviews).toEqual([good]);
  });

  it('reviews tokens it cannot check in a pool of their own', async () => {
    const { clock, check, endpoints } = setup();
    endpoints.failing = true;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const seen: string[] = [];
    const reviewer = createTokenReviewer({
      review: async (t) => {
        seen.push(t);
        await gate;
        return reviewed();
      },
      audiences: ['npu-fault'],
      clock,
      localCheck: check,
      unverifiedMaxConcurrent: 1,
      unverifiedMaxQueued: 0,
    });
    const first = reviewer.authenticate(await token(clock, apiserver, { node: 'a' }));
    // The unverified pool is full: a second unverifiable token is busy (503), not queued behind.
    await expect(reviewer.authenticate(await token(clock, apiserver, { node: 'b' }))).rejects.toMatchObject({
      code: 'token_review_busy',
    });
    release();
    expect((await first).username).toBe(AGENT);
    expect(seen).toHaveLength(1);
  });
});

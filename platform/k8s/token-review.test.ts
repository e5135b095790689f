import { describe, expect, it, jest } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import { FakeClock } from '../clock.js';
import { K8sApiError } from '../errors.js';
import {
  TOKEN_REVIEW_DEFAULTS,
  TokenReviewUnavailableError,
  UnauthenticatedError,
  bearerToken,
  createTokenReviewer,
  kubeTokenReview,
  type ReviewToken,
  type TokenReviewStatus,
  type TokenReviewerOptions,
} from './token-review.js';

const FUNCTION_USER = 'system:serviceaccount:ai-infra:npu-fault-function';

const authenticated = (
  username = FUNCTION_USER,
  extra: Record<string, string[]> = {},
): TokenReviewStatus => ({
  authenticated: true,
  user: { username, uid: 'uid-1', groups: ['system:serviceaccounts'], extra },
});

/** A TokenReview double: answers from `answer` per token, counting calls; can hold answers back. */
class FakeReview {
  readonly calls: { token: string; audiences: readonly string[] | undefined; signal: AbortSignal }[] = [];
  answer: (token: string) => TokenReviewStatus | Error = () => authenticated();
  /** When set, reviews wait for `release()` (or their signal). */
  holding = false;
  /** When set, a held review ignores its signal (a client that never aborts): only release() ends it. */
  deaf = false;
  #held: (() => void)[] = [];

  readonly review: ReviewToken = async (token, audiences, signal) => {
    this.calls.push({ token, audiences, signal });
    if (this.holding) {
      await new Promise<void>((resolve, reject) => {
        this.#held.push(resolve);
        if (!this.deaf)
          signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      });
    }
    const answer = this.answer(token);
    if (answer instanceof Error) throw answer;
    return answer;
  };

  /** Lets the held reviews answer: the first `count` of them in arrival order, else all. */
  release(count = this.#held.length): void {
    for (const resolve of this.#held.splice(0, count)) resolve();
  }
}

function setup(options: Partial<TokenReviewerOptions> = {}): {
  fake: FakeReview;
  clock: FakeClock;
  reviewer: ReturnType<typeof createTokenReviewer>;
} {
  const fake = new FakeReview();
  const clock = new FakeClock();
  const reviewer = createTokenReviewer({ review: fake.review, clock, ...options });
  return { fake, clock, reviewer };
}

/** An unsigned JWT with `exp` (epoch seconds): the reviewer reads it without verifying. */
function jwt(exp: number): string {
  const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ sub: 'x', exp })}.c2lnbmF0dXJl`;
}

describe('bearerToken', () => {
  it.each([
    ['the Bearer scheme', 'Bearer abc.DEF-_~+/9==', 'abc.DEF-_~+/9=='],
    ['the scheme in any case', 'bEaReR tok', 'tok'],
    ['several spaces and a trailing one', 'Bearer   tok ', 'tok'],
  ])('reads %s', (_name, header, token) => {
    expect(bearerToken(header)).toBe(token);
  });

  it.each([
    ['no header', undefined, 'missing_token'],
    ['an empty header', '  ', 'missing_token'],
    ['another scheme', 'Basic dXNlcjpzZWNyZXQ=', 'malformed_token'],
    ['the scheme alone', 'Bearer', 'malformed_token'],
    ['no space', 'Bearertok', 'malformed_token'],
    ['two tokens', 'Bearer secret1 secret2', 'malformed_token'],
    ['a character outside b64token', 'Bearer secret!', 'malformed_token'],
    ['a line break', 'Bearer secret\nX-Injected: 1', 'malformed_token'],
    ['an oversized header', `Bearer ${'s'.repeat(20_000)}`, 'malformed_token'],
  ])('refuses %s with a one-line 401 that never quotes the header', (_name, header, code) => {
    let caught: unknown;
    try {
      bearerToken(header);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(UnauthenticatedError);
    const error = caught as UnauthenticatedError;
    expect(error.status).toBe(401);
    expect(error.code).toBe(code);
    expect(error.message).not.toContain('\n');
    expect(error.message).not.toMatch(/secret|dXNlcj|sss/);
  });
});

describe('createTokenReviewer', () => {
  it('returns the reviewed user, extra included (a pod-bound token names its node)', async () => {
    const { fake, reviewer } = setup();
    fake.answer = () =>
      authenticated('system:serviceaccount:ai-infra:npu-fault-agent', {
        'authentication.kubernetes.io/node-name': ['node-7'],
      });
    const user = await reviewer.authenticate('tok');
    expect(user).toEqual({
      username: 'system:serviceaccount:ai-infra:npu-fault-agent',
      uid: 'uid-1',
      groups: ['system:serviceaccounts'],
      extra: { 'authentication.kubernetes.io/node-name': ['node-7'] },
      audiences: [],
    });
    expect(Object.isFrozen(user) && Object.isFrozen(user.extra) && Object.isFrozen(user.groups)).toBe(true);
    expect(fake.calls).toEqual([expect.objectContaining({ token: 'tok', audiences: undefined })]);
  });

  it('trusts a positive review for ttlMs, then asks again', async () => {
    const { fake, clock, reviewer } = setup({ ttlMs: 1000, refreshAheadMs: 0 });
    await reviewer.authenticate('tok');
    await clock.advance(999);
    await reviewer.authenticate('tok');
    expect(fake.calls).toHaveLength(1);
    await clock.advance(1);
    await reviewer.authenticate('tok');
    expect(fake.calls).toHaveLength(2);
  });

  it('never trusts a positive review past the JWT exp', async () => {
    const { fake, clock, reviewer } = setup({ ttlMs: 60_000 });
    const token = jwt((clock.now() + 10_000) / 1000);
    await reviewer.authenticate(token);
    await clock.advance(9_999);
    await reviewer.authenticate(token);
    expect(fake.calls).toHaveLength(1);
    await clock.advance(1); // now == exp: the token is no longer valid
    await reviewer.authenticate(token);
    expect(fake.calls).toHaveLength(2);
  });

  it('does not cache a token whose exp has passed by our clock, even if the apiserver accepted it', async () => {
    const { fake, reviewer, clock } = setup();
    const token = jwt(clock.now() / 1000 - 1);
    await reviewer.authenticate(token);
    await reviewer.authenticate(token);
    expect(fake.calls).toHaveLength(2);
    expect(reviewer.size).toBe(0);
  });

  it('keeps a refusal for negativeTtlMs: 401 with the reason for logs only', async () => {
    const { fake, clock, reviewer } = setup({ negativeTtlMs: 500 });
    fake.answer = () => ({ authenticated: false, error: 'service account token has been invalidated' });
    const first = await reviewer.authenticate('bad').catch((error: unknown) => error);
    expect(first).toBeInstanceOf(UnauthenticatedError);
    expect(first).toMatchObject({
      status: 401,
      code: 'invalid_token',
      message: 'the bearer token was not accepted',
      detail: 'service account token has been invalidated',
    });
    await clock.advance(499);
    await expect(reviewer.authenticate('bad')).rejects.toBeInstanceOf(UnauthenticatedError);
    expect(fake.calls).toHaveLength(1);
    fake.answer = () => authenticated();
    await clock.advance(1);
    await expect(reviewer.authenticate('bad')).resolves.toMatchObject({ username: FUNCTION_USER });
    expect(fake.calls).toHaveLength(2);
  });

  it('refuses an authenticated review without a username', async () => {
    const { fake, reviewer } = setup();
    fake.answer = () => ({ authenticated: true, user: {} });
    await expect(reviewer.authenticate('tok')).rejects.toMatchObject({ status: 401 });
  });

  it('turns an apiserver failure into a 503 that is not cached', async () => {
    const { fake, reviewer } = setup();
    fake.answer = () =>
      Object.assign(new Error('HTTP-Code: 500'), { code: 500, body: '{"reason":"InternalError"}' });
    const error = await reviewer.authenticate('tok').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenReviewUnavailableError);
    expect(error).toMatchObject({ status: 503, code: 'token_review_unavailable' });
    expect((error as Error).cause).toBeInstanceOf(K8sApiError);
    expect(reviewer.size).toBe(0);
    fake.answer = () => authenticated();
    await expect(reviewer.authenticate('tok')).resolves.toMatchObject({ username: FUNCTION_USER });
    expect(fake.calls).toHaveLength(2);
  });

  it('gives up on a review that does not answer within timeoutMs: 503, request aborted', async () => {
    const { fake, clock, reviewer } = setup({ timeoutMs: 2000 });
    fake.holding = true;
    const result = reviewer.authenticate('tok').catch((e: unknown) => e);
    await clock.advance(1999);
    expect(fake.calls[0]?.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(await result).toBeInstanceOf(TokenReviewUnavailableError);
    expect(fake.calls[0]?.signal.aborted).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('shares one review among concurrent requests with the same token (single flight)', async () => {
    const { fake, reviewer } = setup();
    fake.holding = true;
    const same = [reviewer.authenticate('tok'), reviewer.authenticate('tok'), reviewer.authenticate('tok')];
    const other = reviewer.authenticate('other');
    await Promise.resolve();
    expect(fake.calls.map((call) => call.token)).toEqual(['tok', 'other']);
    fake.release();
    const users = await Promise.all([...same, other]);
    expect(users.map((user) => user.username)).toEqual(Array(4).fill(FUNCTION_USER));
    expect(fake.calls).toHaveLength(2);
  });

  it('shares a failure too, then forgets it: the next request reviews again', async () => {
    const { fake, reviewer } = setup();
    fake.holding = true;
    fake.answer = () => new Error('connect ECONNREFUSED');
    const both = [reviewer.authenticate('tok'), reviewer.authenticate('tok')].map((p) =>
      p.catch((e: unknown) => e),
    );
    fake.release();
    for (const error of await Promise.all(both)) expect(error).toBeInstanceOf(TokenReviewUnavailableError);
    expect(fake.calls).toHaveLength(1);
    fake.holding = false;
    fake.answer = () => authenticated();
    await reviewer.authenticate('tok');
    expect(fake.calls).toHaveLength(2);
  });

  it('evicts the least recently used token beyond max', async () => {
    const { fake, reviewer } = setup({ max: 2 });
    await reviewer.authenticate('a');
    await reviewer.authenticate('b');
    await reviewer.authenticate('a'); // a is now the most recently used
    await reviewer.authenticate('c'); // evicts b
    expect(reviewer.size).toBe(2);
    await reviewer.authenticate('a');
    expect(fake.calls.map((call) => call.token)).toEqual(['a', 'b', 'c']);
    await reviewer.authenticate('b');
    expect(fake.calls.map((call) => call.token)).toEqual(['a', 'b', 'c', 'b']);
  });

  describe('refresh ahead', () => {
    it('reviews a token again in the background near the end of its stay, serving it meanwhile', async () => {
      const { fake, clock, reviewer } = setup({ ttlMs: 10_000, refreshAheadMs: 2_000 });
      await reviewer.authenticate('tok');
      await clock.advance(7_999);
      await reviewer.authenticate('tok');
      expect(fake.calls).toHaveLength(1);
      await clock.advance(1);
      // The review hangs: the request is answered from the cache all the same.
      fake.holding = true;
      await expect(reviewer.authenticate('tok')).resolves.toMatchObject({ username: FUNCTION_USER });
      await expect(reviewer.authenticate('tok')).resolves.toMatchObject({ username: FUNCTION_USER });
      expect(fake.calls).toHaveLength(2); // one background review, not one per request
      fake.release();
      await clock.advance(0);
      // A new stay from the answer (t = 8 s): past the first one's end (10 s) no request
      // waited, and the next background review comes 8 s into it.
      fake.holding = false;
      await clock.advance(7_999);
      await reviewer.authenticate('tok');
      expect(fake.calls).toHaveLength(2);
      await clock.advance(1);
      await reviewer.authenticate('tok');
      expect(fake.calls).toHaveLength(3);
    });

    it('never trusts a review past ttlMs: a background review still unanswered then is waited for', async () => {
      const { fake, clock, reviewer } = setup({ ttlMs: 10_000, refreshAheadMs: 2_000, timeoutMs: 5_000 });
      await reviewer.authenticate('tok');
      await clock.advance(8_000);
      fake.holding = true;
      await reviewer.authenticate('tok');
      await clock.advance(2_000);
      let settled = false;
      const late = reviewer.authenticate('tok').finally(() => (settled = true));
      await clock.advance(0);
      expect(settled).toBe(false); // the stay has ended: it joins the review under way
      expect(fake.calls).toHaveLength(2);
      fake.answer = () => ({ authenticated: false, error: 'token has been invalidated' });
      fake.release();
      await expect(late).rejects.toBeInstanceOf(UnauthenticatedError);
    });

    it('refuses the token from the moment a background review refuses it', async () => {
      const { fake, clock, reviewer } = setup({ ttlMs: 10_000, refreshAheadMs: 2_000 });
      await reviewer.authenticate('tok');
      await clock.advance(8_000);
      fake.answer = () => ({ authenticated: false, error: 'pod deleted' });
      await expect(reviewer.authenticate('tok')).resolves.toMatchObject({ username: FUNCTION_USER });
      await clock.advance(0);
      await expect(reviewer.authenticate('tok')).rejects.toMatchObject({
        status: 401,
        detail: 'pod deleted',
      });
      expect(fake.calls).toHaveLength(2);
    });

    it('keeps serving the stay when a background review fails, trying again at most once a second', async () => {
      const outcomes: string[] = [];
      const { fake, clock, reviewer } = setup({
        ttlMs: 10_000,
        refreshAheadMs: 5_000,
        onOutcome: (outcome) => outcomes.push(outcome),
      });
      await reviewer.authenticate('tok');
      fake.answer = () => new Error('connect ECONNREFUSED');
      await clock.advance(5_000);
      await expect(reviewer.authenticate('tok')).resolves.toMatchObject({ username: FUNCTION_USER });
      await clock.advance(999);
      await expect(reviewer.authenticate('tok')).resolves.toMatchObject({ username: FUNCTION_USER });
      expect(fake.calls).toHaveLength(2);
      await clock.advance(1);
      await reviewer.authenticate('tok');
      expect(fake.calls).toHaveLength(3);
      expect(outcomes).toEqual(['authenticated', 'unavailable', 'unavailable']);
      // At the stay's end the request waits for a review, and its failure is the usual 503.
      await clock.advance(4_000);
      await expect(reviewer.authenticate('tok')).rejects.toBeInstanceOf(TokenReviewUnavailableError);
    });

    it('takes only a free slot, never a place in the queue', async () => {
      const { fake, clock, reviewer } = setup({
        ttlMs: 10_000,
        refreshAheadMs: 2_000,
        maxConcurrent: 1,
        maxQueued: 4,
      });
      await reviewer.authenticate('tok');
      await clock.advance(8_000);
      fake.holding = true;
      const other = reviewer.authenticate('other'); // holds the only slot
      await reviewer.authenticate('tok');
      expect(fake.calls.map((call) => call.token)).toEqual(['tok', 'other']);
      expect(reviewer.queued).toBe(0);
      fake.release();
      await other;
      fake.holding = false;
      await clock.advance(1_000);
      await reviewer.authenticate('tok');
      expect(fake.calls.map((call) => call.token)).toEqual(['tok', 'other', 'tok']);
    });

    it("does not refresh a stay that ends at the token's exp", async () => {
      const { fake, clock, reviewer } = setup({ ttlMs: 60_000, refreshAheadMs: 10_000 });
      const token = jwt((clock.now() + 30_000) / 1000);
      await reviewer.authenticate(token);
      await clock.advance(29_999);
      await reviewer.authenticate(token);
      expect(fake.calls).toHaveLength(1);
    });

    it('defaults to half of a ttlMs shorter than 20 s, and refuses one not below ttlMs', async () => {
      const { fake, clock, reviewer } = setup({ ttlMs: 1_000 });
      await reviewer.authenticate('tok');
      await clock.advance(499);
      await reviewer.authenticate('tok');
      expect(fake.calls).toHaveLength(1);
      await clock.advance(1);
      await reviewer.authenticate('tok');
      expect(fake.calls).toHaveLength(2);
      expect(() => setup({ ttlMs: 1_000, refreshAheadMs: 1_000 })).toThrow(
        'token review refreshAheadMs: expected less than ttlMs (1000), got 1000',
      );
      expect(() => setup({ refreshAheadMs: -1 })).toThrow('refreshAheadMs');
    });
  });

  describe('with audiences', () => {
    it('asks for them and returns those the token is valid for', async () => {
      const { fake, reviewer } = setup({ audiences: ['npu-fault', 'other'] });
      fake.answer = () => ({ ...authenticated(), audiences: ['npu-fault'] });
      await expect(reviewer.authenticate('tok')).resolves.toMatchObject({ audiences: ['npu-fault'] });
      expect(fake.calls[0]?.audiences).toEqual(['npu-fault', 'other']);
    });

    it.each([
      ['no status.audiences (an audience-unaware authenticator)', undefined],
      ['only other audiences', ['https://kubernetes.default.svc']],
    ])('refuses an authenticated token with %s', async (_name, granted) => {
      const { fake, reviewer } = setup({ audiences: ['npu-fault'] });
      fake.answer = () => ({ ...authenticated(), ...(granted ? { audiences: granted } : {}) });
      await expect(reviewer.authenticate('tok')).rejects.toMatchObject({
        status: 401,
        detail: 'token is not valid for audiences npu-fault',
      });
    });
  });

  it.each(['ttlMs', 'negativeTtlMs', 'max', 'negativeMax', 'timeoutMs', 'maxConcurrent'] as const)(
    'refuses a %s that is not a positive integer',
    (name) => {
      expect(() => setup({ [name]: 0 })).toThrow(`token review ${name}: expected a positive integer, got 0`);
      expect(() => setup({ [name]: 1.5 })).toThrow(`token review ${name}: expected a positive integer`);
    },
  );

  it('refuses a negative maxQueued (0 is allowed: no queue)', () => {
    expect(() => setup({ maxQueued: -1 })).toThrow(
      'token review maxQueued: expected an integer >= 0, got -1',
    );
    expect(() => setup({ maxQueued: 0 })).not.toThrow();
  });

  it('documents its defaults', () => {
    expect(TOKEN_REVIEW_DEFAULTS).toEqual({
      ttlMs: 60_000,
      refreshAheadMs: 10_000,
      negativeTtlMs: 5_000,
      max: 10_000,
      negativeMax: 1_000,
      timeoutMs: 5_000,
      maxConcurrent: 16,
      maxQueued: 64,
      unverifiedMaxConcurrent: 16,
      unverifiedMaxQueued: 64,
    });
  });

  describe('under a flood of unknown tokens', () => {
    /** Starts a review per token without awaiting; each settles to the user or the error. */
    const start = (reviewer: ReturnType<typeof createTokenReviewer>, tokens: string[]): Promise<unknown>[] =>
      tokens.map((token) => reviewer.authenticate(token).catch((e: unknown) => e));
    const tokens = (prefix: string, count: number): string[] =>
      Array.from({ length: count }, (_, i) => `${prefix}${i}`);

    it('runs at most maxConcurrent reviews, queues maxQueued, and refuses the rest at once with a 503', async () => {
      const outcomes: string[] = [];
      const { fake, reviewer } = setup({
        maxConcurrent: 2,
        maxQueued: 3,
        onOutcome: (o) => outcomes.push(o),
      });
      fake.holding = true;
      const results = start(reviewer, tokens('t', 7));
      await Promise.resolve();
      expect(fake.calls.map((call) => call.token)).toEqual(['t0', 't1']);
      expect([reviewer.inFlight, reviewer.queued]).toEqual([2, 3]);
      // t5 and t6 found two in flight and three waiting: refused without asking the apiserver.
      for (const refused of await Promise.all(results.slice(5))) {
        expect(refused).toBeInstanceOf(TokenReviewUnavailableError);
        expect(refused).toMatchObject({ status: 503, code: 'token_review_busy' });
      }
      expect(outcomes).toEqual(['busy', 'busy']);
      // Each finished review lets the longest-waiting one in.
      fake.release(1);
      await results[0];
      await Promise.resolve();
      expect(fake.calls.map((call) => call.token)).toEqual(['t0', 't1', 't2']);
      expect([reviewer.inFlight, reviewer.queued]).toEqual([2, 2]);
      fake.holding = false;
      fake.release();
      const users = await Promise.all(results.slice(0, 5));
      for (const user of users) expect(user).toMatchObject({ username: FUNCTION_USER });
      expect(fake.calls.map((call) => call.token)).toEqual(['t0', 't1', 't2', 't3', 't4']);
      expect([reviewer.inFlight, reviewer.queued]).toEqual([0, 0]);
      expect(outcomes.filter((o) => o === 'authenticated')).toHaveLength(5);
    });

    it('does not cache a refusal for capacity: the same token is reviewed once there is room', async () => {
      const { fake, reviewer } = setup({ maxConcurrent: 1, maxQueued: 0 });
      fake.holding = true;
      const [first, second] = start(reviewer, ['a', 'b']);
      expect(await second).toMatchObject({ code: 'token_review_busy' });
      fake.holding = false;
      fake.release();
      await first;
      await expect(reviewer.authenticate('b')).resolves.toMatchObject({ username: FUNCTION_USER });
      expect(fake.calls.map((call) => call.token)).toEqual(['a', 'b']);
    });

    it('answers cached tokens while every review slot is taken', async () => {
      const { fake, reviewer } = setup({ maxConcurrent: 1, maxQueued: 0 });
      await reviewer.authenticate('known');
      fake.holding = true;
      const flood = start(reviewer, tokens('garbage', 3));
      await expect(reviewer.authenticate('known')).resolves.toMatchObject({ username: FUNCTION_USER });
      fake.release();
      await Promise.all(flood);
    });

    it('shares one queued review among requests with the same token', async () => {
      const { fake, reviewer } = setup({ maxConcurrent: 1, maxQueued: 1 });
      fake.holding = true;
      const results = start(reviewer, ['a', 'b', 'b', 'b']);
      await Promise.resolve();
      expect([reviewer.inFlight, reviewer.queued]).toEqual([1, 1]);
      fake.holding = false;
      fake.release();
      for (const user of await Promise.all(results)) expect(user).toMatchObject({ username: FUNCTION_USER });
      expect(fake.calls.map((call) => call.token)).toEqual(['a', 'b']);
    });

    it('counts the wait in the queue against timeoutMs, and a timed-out waiter leaves the queue', async () => {
      const { fake, clock, reviewer } = setup({ maxConcurrent: 1, maxQueued: 1, timeoutMs: 1000 });
      fake.holding = true;
      const first = reviewer.authenticate('a').catch((e: unknown) => e);
      await clock.advance(600);
      const queued = reviewer.authenticate('b').catch((e: unknown) => e);
      await clock.advance(400); // the first review times out and hands its slot to 'b'
      expect(await first).toMatchObject({ code: 'token_review_unavailable' });
      await Promise.resolve();
      expect(fake.calls.map((call) => call.token)).toEqual(['a', 'b']);
      await clock.advance(600); // 'b' has waited 1000 ms in all: it gives up too
      expect(await queued).toMatchObject({ code: 'token_review_unavailable' });
      expect([reviewer.inFlight, reviewer.queued]).toEqual([0, 0]);
      expect(clock.pending).toBe(0);
    });

    it('takes a waiter whose time is up out of the queue without asking for it', async () => {
      // A review that ignores its abort keeps its slot (the slot is the apiserver's request);
      // the requests queued behind it still get their 503 in time.
      const { fake, clock, reviewer } = setup({ maxConcurrent: 1, maxQueued: 2, timeoutMs: 1000 });
      fake.holding = true;
      fake.deaf = true;
      const stuck = reviewer.authenticate('a').catch((e: unknown) => e);
      await clock.advance(500);
      const waiting = reviewer.authenticate('b').catch((e: unknown) => e);
      await Promise.resolve();
      expect([reviewer.inFlight, reviewer.queued]).toEqual([1, 1]);
      await clock.advance(1000);
      expect(await waiting).toMatchObject({ code: 'token_review_unavailable' });
      expect([reviewer.inFlight, reviewer.queued]).toEqual([1, 0]);
      fake.release();
      expect(await stuck).toMatchObject({ username: FUNCTION_USER });
      expect(fake.calls.map((call) => call.token)).toEqual(['a']);
      expect([reviewer.inFlight, reviewer.queued]).toEqual([0, 0]);
    });

    it('keeps refused tokens apart, so distinct bad tokens never evict a good one', async () => {
      const { fake, reviewer } = setup({ max: 2, negativeMax: 2 });
      await reviewer.authenticate('good');
      fake.answer = (token) => (token === 'good' ? authenticated() : { authenticated: false });
      for (const bad of tokens('bad', 5)) {
        await expect(reviewer.authenticate(bad)).rejects.toBeInstanceOf(UnauthenticatedError);
      }
      expect(reviewer.size).toBe(3); // good, and the last two bad ones
      await reviewer.authenticate('good');
      await expect(reviewer.authenticate('bad4')).rejects.toBeInstanceOf(UnauthenticatedError);
      expect(fake.calls.map((call) => call.token)).toEqual(['good', ...tokens('bad', 5)]);
      await expect(reviewer.authenticate('bad0')).rejects.toBeInstanceOf(UnauthenticatedError);
      expect(fake.calls).toHaveLength(7); // bad0 was evicted by bad2: asked again
    });

    it('tells onOutcome what each review came to', async () => {
      const outcomes: string[] = [];
      const { fake, reviewer } = setup({ onOutcome: (o) => outcomes.push(o) });
      await reviewer.authenticate('ok');
      fake.answer = () => ({ authenticated: false });
      await reviewer.authenticate('no').catch(() => undefined);
      fake.answer = () => new Error('connect ECONNREFUSED');
      await reviewer.authenticate('down').catch(() => undefined);
      await reviewer.authenticate('ok'); // cached: no review, no outcome
      expect(outcomes).toEqual(['authenticated', 'rejected', 'unavailable']);
    });
  });
});

describe('kubeTokenReview', () => {
  it('creates an authentication.k8s.io/v1 TokenReview and returns its status', async () => {
    const createTokenReview = jest.fn(async (_param: k8s.AuthenticationV1ApiCreateTokenReviewRequest) => ({
      status: { authenticated: true, user: { username: 'u' }, audiences: ['npu-fault'] },
    }));
    const review = kubeTokenReview({ createTokenReview } as unknown as k8s.AuthenticationV1Api);
    const status = await review('tok', ['npu-fault'], new AbortController().signal);
    expect(status).toEqual({ authenticated: true, user: { username: 'u' }, audiences: ['npu-fault'] });
    expect(createTokenReview.mock.calls[0]?.[0]).toEqual({
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token: 'tok', audiences: ['npu-fault'] },
      },
    });
  });

  it('leaves audiences to the apiserver when none are asked for, and reads a missing status as empty', async () => {
    const createTokenReview = jest.fn(
      async (_param: k8s.AuthenticationV1ApiCreateTokenReviewRequest) => ({}),
    );
    const review = kubeTokenReview({ createTokenReview } as unknown as k8s.AuthenticationV1Api);
    expect(await review('tok', undefined, new AbortController().signal)).toEqual({});
    expect(createTokenReview.mock.calls[0]?.[0].body.spec).toEqual({ token: 'tok' });
  });
});

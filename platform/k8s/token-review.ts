/**
 * Bearer-token authentication through the TokenReview API (authentication.k8s.io/v1), cached.
 *
 * The controller checks the ingest functions' ServiceAccount tokens with it, and the ingest
 * functions check the agents' pod-bound tokens (whose `user.extra` carries
 * `authentication.kubernetes.io/node-name`, hence `extra` in the result).
 *
 * - **Cache.** Keyed by the SHA-256 of the token, never the token. A positive review is kept
 *   `ttlMs` (60 s), never past the token's own `exp` when it is a JWT (read without
 *   verifying: the apiserver verified it; `exp` only shortens the stay); at most `max`
 *   (10,000), least recently used out. A refusal is kept `negativeTtlMs` (5 s), so a client
 *   retrying a bad token costs one review per 5 s rather than one per request, in a cache of
 *   its own of at most `negativeMax` (1,000): a flood of distinct bad tokens evicts only other
 *   bad tokens, never an agent's good one. Memory stays bounded (about 11,000 × 0.5 KiB)
 *   whatever tokens clients send.
 * - **Refresh ahead.** A positive review in the last `refreshAheadMs` (10 s) of its stay
 *   is still served, and the first request to meet it there starts one review in the
 *   background, whose answer replaces it: an accepted token's new stay, a refused one's
 *   refusal. So a client posting steadily never waits for a review after its first: without
 *   this, an agent posting once a second waited for one every minute (1.7% of its requests,
 *   enough to set a p99), and all at once after a restart. Trust never outlives `ttlMs`: a
 *   review not answered by then leaves the entry to expire as usual. The background review
 *   only takes a free slot (never a queue place a request could need); without one, or when
 *   it fails, a later request tries again, at most once a second. A stay cut short by the
 *   token's `exp` is not refreshed: the token ends there anyway.
 * - **Single flight.** Concurrent requests with one token share one review.
 * - **Bounded load on the apiserver.** At most `maxConcurrent` (16) reviews run at once and
 *   `maxQueued` (64) wait for a turn; a token arriving beyond that is refused at once with
 *   `TokenReviewUnavailableError` code `token_review_busy` (503: the client retries after
 *   Retry-After), so a flood of unknown tokens costs the apiserver at most `maxConcurrent`
 *   requests at a time and the server at most `maxQueued` waiting requests, while cached
 *   tokens are answered as usual. A short queue rather than refusing at once: a function
 *   that starts cold meets every agent's token within a second, and a queue of a few
 *   round-trips absorbs that burst instead of sending most agents away once. `timeoutMs`
 *   runs from the moment a review is wanted, so a wait in the queue counts against it.
 * - **Failures.** An apiserver that errors or does not answer within `timeoutMs` is not the
 *   client's fault: `TokenReviewUnavailableError` (503, not cached), never a 401.
 * - **Audiences.** When `audiences` are set the review asks for them, and a token the
 *   apiserver authenticates for none of them is refused (TokenReview's documented check: an
 *   audience-unaware authenticator may answer `authenticated` without `status.audiences`).
 * - **Checked here first.** With `localCheck` (local-token-check.ts) a token not cached is
 *   first checked against the apiserver's published keys: one that fails is refused (and
 *   cached as refused) without a review, one that passes is reviewed in the pool above, and
 *   one that cannot be checked (keys not read, a key newer than the last read) in a pool of
 *   its own as large as the other (`unverifiedMaxConcurrent` 16, `unverifiedMaxQueued` 64: while
 *   the keys cannot be read, the reviewer behaves as it did before the local check), so a token
 *   the check passed never waits behind one it could not check. At most 32 reviews run at once.
 *
 * A token never appears in an error, a log line or a cache key.
 */
import * as k8s from '@kubernetes/client-node';
import { decodeJwt } from 'jose';
import { hash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { AppError, K8sApiError } from '../errors.js';
import type { LocalTokenCheck } from './local-token-check.js';
import { requestOptions } from './request-options.js';

/** Who a token belongs to, as the apiserver reported it. */
export interface AuthenticatedUser {
  /** `system:serviceaccount:<namespace>:<name>` for a ServiceAccount token. */
  readonly username: string;
  readonly uid: string;
  readonly groups: readonly string[];
  /**
   * Extra attributes; a pod-bound ServiceAccount token carries
   * `authentication.kubernetes.io/pod-name`, `…/pod-uid` and `…/node-name` here.
   */
  readonly extra: Readonly<Record<string, readonly string[]>>;
  /** The requested audiences the token is valid for (empty when none were requested). */
  readonly audiences: readonly string[];
}

/** The `status` of a TokenReview, as the API returns it (all fields optional there). */
export interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  audiences?: string[];
  error?: string;
}

/**
 * Sends one TokenReview: `audiences` undefined leaves them to the apiserver (its own API
 * audiences). Rejects when the API call fails; aborts with `signal`.
 */
export type ReviewToken = (
  token: string,
  audiences: readonly string[] | undefined,
  signal: AbortSignal,
) => Promise<TokenReviewStatus>;

/** The ReviewToken of a real apiserver (needs `create` on `tokenreviews`). */
export function kubeTokenReview(api: k8s.AuthenticationV1Api): ReviewToken {
  return async (token, audiences, signal) => {
    const spec: k8s.V1TokenReviewSpec = audiences ? { token, audiences: [...audiences] } : { token };
    const review = await api.createTokenReview(
      { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec } },
      requestOptions({ signal }),
    );
    return review.status ?? {};
  };
}

/** How a TokenReviewer checks and caches. */
export interface TokenReviewerOptions {
  review: ReviewToken;
  /** Audiences the token must be valid for; omitted: the apiserver's own (its default). */
  audiences?: readonly string[];
  /** Cache ages run on `clock.monotonic()`, JWT `exp` against `clock.now()`. */
  clock: Clock;
  /** How long a positive review is trusted (default 60 s; also bounded by the token's `exp`). */
  ttlMs?: number;
  /**
   * A positive review this close to its end is reviewed again in the background, while still
   * served (default 10 s, or half of ttlMs when that is less; 0: never, so a client's request
   * waits for a review every ttlMs). Less than ttlMs.
   */
  refreshAheadMs?: number;
  /** How long a refused token stays refused without asking again (default 5 s). */
  negativeTtlMs?: number;
  /** Most accepted tokens cached (default 10,000), least recently used evicted first. */
  max?: number;
  /** Most refused tokens cached (default 1,000), least recently used evicted first. */
  negativeMax?: number;
  /** A review not answered within this, queueing included, is a 503 (default 5 s). */
  timeoutMs?: number;
  /** Most TokenReview requests in flight at once (default 16). */
  maxConcurrent?: number;
  /** Most reviews waiting for one of those; beyond, a 503 at once (default 64; 0: no queue). */
  maxQueued?: number;
  /** Checks a token before its review: a failure is refused without one (local-token-check.ts). */
  localCheck?: LocalTokenCheck;
  /** Most reviews in flight at once of tokens the local check could not tell about (default 16). */
  unverifiedMaxConcurrent?: number;
  /** Most such reviews waiting (default 64; 0: no queue). */
  unverifiedMaxQueued?: number;
  /**
   * Told of every TokenReview's outcome (background reviews ahead of a stay's end included:
   * an `unavailable` there failed no request) and of every review refused for want of
   * capacity (metrics).
   */
  onOutcome?: (outcome: TokenReviewOutcome) => void;
}

/**
 * What became of one review: the apiserver `authenticated` the token (for an audience asked
 * for) or `rejected` it, or it could not be asked (`unavailable`: an error or the timeout),
 * or it was not asked because too many reviews were in flight and queued (`busy`), or because
 * the local check refused the token (`refused_locally`).
 */
export type TokenReviewOutcome = 'authenticated' | 'rejected' | 'unavailable' | 'busy' | 'refused_locally';

/** Checks bearer tokens. */
export interface TokenReviewer {
  /**
   * The user `token` authenticates as. Throws `UnauthenticatedError` (401) when the
   * apiserver refuses it, `TokenReviewUnavailableError` (503) when it cannot say.
   * A bound function: pass `reviewer.authenticate` around as it is.
   */
  readonly authenticate: (token: string) => Promise<AuthenticatedUser>;
  /** Reviews held in the caches (positive and negative; an expired one until it is next looked up). */
  readonly size: number;
  /** TokenReview requests in flight now. */
  readonly inFlight: number;
  /** Reviews waiting for a turn now. */
  readonly queued: number;
}

/** Defaults of TokenReviewerOptions. */
export const TOKEN_REVIEW_DEFAULTS = {
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
} as const;

/** The request carries no usable bearer token, or the apiserver refused it: answer 401. */
export class UnauthenticatedError extends AppError {
  /** Why, for logs only (TokenReview's `status.error`): clients get the generic message. */
  readonly detail: string | undefined;
  constructor(code: 'missing_token' | 'malformed_token' | 'invalid_token', message: string, detail?: string) {
    super(code, message, { status: 401 });
    this.detail = detail;
  }
}

/**
 * The token could not be checked, so answer 503 (retry): TokenReview failed or timed out
 * (code `token_review_unavailable`), or too many reviews were already under way
 * (`token_review_busy`).
 */
export class TokenReviewUnavailableError extends AppError {
  declare readonly code: 'token_review_unavailable' | 'token_review_busy';
  constructor(
    cause: unknown,
    code: 'token_review_unavailable' | 'token_review_busy' = 'token_review_unavailable',
  ) {
    const message =
      code === 'token_review_busy'
        ? 'too many token reviews under way; retry later'
        : 'token review is unavailable; retry later';
    super(code, message, { status: 503, cause });
  }
}

/** A review's outcome as cached. */
type Verdict = { ok: true; user: AuthenticatedUser } | { ok: false; detail: string };

/** An accepted token as cached: its verdict, and when (monotonic ms) to review it again ahead. */
interface Accepted {
  readonly verdict: Verdict;
  /** Undefined: not refreshed (refresh ahead off, or its stay ends at the token's `exp`). */
  refreshAt: number | undefined;
}

/** Wait before a background review is tried again after one could not be made. */
const REFRESH_RETRY_MS = 1_000;

/** Builds a reviewer; the caches live as long as it does. */
export function createTokenReviewer(options: TokenReviewerOptions): TokenReviewer {
  const { review, audiences, clock } = options;
  const setting = (name: keyof typeof TOKEN_REVIEW_DEFAULTS, min = 1): number =>
    atLeast(options[name] ?? TOKEN_REVIEW_DEFAULTS[name], name, min);
  const ttlMs = setting('ttlMs');
  const refreshAheadMs =
    options.refreshAheadMs === undefined
      ? Math.min(TOKEN_REVIEW_DEFAULTS.refreshAheadMs, Math.floor(ttlMs / 2))
      : setting('refreshAheadMs', 0);
  if (refreshAheadMs >= ttlMs)
    throw new RangeError(
      `token review refreshAheadMs: expected less than ttlMs (${ttlMs}), got ${refreshAheadMs}`,
    );
  const negativeTtlMs = setting('negativeTtlMs');
  const timeoutMs = setting('timeoutMs');
  const accepted = new TtlLruCache<Accepted>(setting('max'), clock);
  const refused = new TtlLruCache<Verdict>(setting('negativeMax'), clock);
  const slots = new Slots(setting('maxConcurrent'), setting('maxQueued', 0));
  const unverifiedSlots = new Slots(setting('unverifiedMaxConcurrent'), setting('unverifiedMaxQueued', 0));
  const localCheck = options.localCheck;
  const inFlight = new Map<string, Promise<Verdict>>();
  const tell = options.onOutcome ?? ((): void => undefined);

  /** One review; `held`: a slot already taken for it (else one of `pool` is taken, or waited for). */
  const fetchVerdict = async (token: string, held?: () => void, pool = slots): Promise<Verdict> => {
    const controller = new AbortController();
    const cancel = clock.schedule(timeoutMs, () =>
      controller.abort(new Error(`TokenReview did not answer within ${timeoutMs} ms`)),
    );
    let release = held;
    let status: TokenReviewStatus;
    try {
      // A free slot is taken at once, so the review is sent in this same turn.
      release ??= pool.tryAcquire() ?? (await pool.wait(controller.signal));
      status = await review(token, audiences, controller.signal);
    } catch (error) {
      const busy = error instanceof SlotsFullError;
      tell(busy ? 'busy' : 'unavailable');
      throw busy
        ? new TokenReviewUnavailableError(undefined, 'token_review_busy')
        : new TokenReviewUnavailableError(K8sApiError.from(error) ?? error);
    } finally {
      cancel();
      release?.();
    }
    const verdict = verdictOf(status, audiences);
    tell(verdict.ok ? 'authenticated' : 'rejected');
    return verdict;
  };

  /** Reviews `token` (one review per key at a time) and caches what it comes to. */
  const reviewAndCache = (token: string, key: string, held?: () => void, pool = slots): Promise<Verdict> => {
    const pending = fetchVerdict(token, held, pool)
      .then((verdict) => {
        if (verdict.ok) {
          const ttl = Math.min(ttlMs, msUntilExpiry(token, clock.now()));
          // A stay cut short by `exp` is not refreshed: the token ends there.
          const refreshAt =
            refreshAheadMs > 0 && ttl === ttlMs ? clock.monotonic() + ttl - refreshAheadMs : undefined;
          if (ttl >= 1) accepted.set(key, { verdict, refreshAt }, ttl);
          else accepted.delete(key);
        } else {
          accepted.delete(key);
          refused.set(key, verdict, negativeTtlMs);
        }
        return verdict;
      })
      .finally(() => inFlight.delete(key));
    inFlight.set(key, pending);
    return pending;
  };

  /** Starts the background review of an accepted token near its end, when one can be made now. */
  const refreshAhead = (token: string, key: string, entry: Accepted): void => {
    if (entry.refreshAt === undefined || clock.monotonic() < entry.refreshAt || inFlight.has(key)) return;
    entry.refreshAt = clock.monotonic() + REFRESH_RETRY_MS;
    const held = slots.tryAcquire();
    if (!held) return;
    // Its failure is the entry's to outlive: the request that started it is answered already.
    reviewAndCache(token, key, held).catch(() => undefined);
  };

  const verdictFor = (token: string): Promise<Verdict> => {
    // One-shot hash: several times cheaper than createHash() for a token-sized input.
    const key = hash('sha256', token, 'base64url');
    const entry = accepted.get(key);
    if (entry) {
      refreshAhead(token, key, entry);
      return Promise.resolve(entry.verdict);
    }
    const cached = refused.get(key);
    if (cached) return Promise.resolve(cached);
    const pending = inFlight.get(key);
    if (pending) return pending;
    if (!localCheck) return reviewAndCache(token, key);
    return localCheck.check(token).then((local) => {
      if (local.kind === 'fail') {
        const verdict: Verdict = { ok: false, detail: `refused before review: ${local.detail}` };
        refused.set(key, verdict, negativeTtlMs);
        tell('refused_locally');
        return verdict;
      }
      return (
        inFlight.get(key) ??
        reviewAndCache(token, key, undefined, local.kind === 'pass' ? slots : unverifiedSlots)
      );
    });
  };

  return {
    authenticate: async (token) => {
      const verdict = await verdictFor(token);
      if (!verdict.ok) {
        throw new UnauthenticatedError('invalid_token', 'the bearer token was not accepted', verdict.detail);
      }
      return verdict.user;
    },
    get size() {
      return accepted.size + refused.size;
    },
    get inFlight() {
      return slots.active + unverifiedSlots.active;
    },
    get queued() {
      return slots.waiting + unverifiedSlots.waiting;
    },
  };
}

/** Longest Authorization header read; ServiceAccount tokens are about 1 KiB. */
const MAX_AUTHORIZATION_LENGTH = 16 * 1024;
/** RFC 6750 §2.1: `Bearer` 1*SP b64token. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * The token of an `Authorization: Bearer <token>` header. Throws `UnauthenticatedError`
 * (one line, without the header's text) when the header is missing or not a bearer token.
 */
export function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined || authorization.trim() === '') {
    throw new UnauthenticatedError('missing_token', 'missing Authorization: Bearer <token> header');
  }
  if (authorization.length > MAX_AUTHORIZATION_LENGTH) {
    throw new UnauthenticatedError(
      'malformed_token',
      `Authorization header longer than ${MAX_AUTHORIZATION_LENGTH} characters`,
    );
  }
  const token = BEARER.exec(authorization)?.[1];
  if (!token) {
    throw new UnauthenticatedError('malformed_token', 'Authorization header: expected "Bearer <token>"');
  }
  return token;
}

/** What a TokenReview status means, with the requested audiences checked. */
function verdictOf(status: TokenReviewStatus, audiences: readonly string[] | undefined): Verdict {
  if (status.authenticated !== true) return { ok: false, detail: status.error || 'not authenticated' };
  const username = status.user?.username;
  if (!username) return { ok: false, detail: 'authenticated without a username' };
  const granted = status.audiences ?? [];
  if (audiences && !audiences.some((audience) => granted.includes(audience))) {
    return { ok: false, detail: `token is not valid for audiences ${audiences.join(', ')}` };
  }
  const user = status.user ?? {};
  const extra = Object.entries(user.extra ?? {}).map(([key, values]) => [key, Object.freeze([...values])]);
  // Frozen: one cached user is handed to every request that presents the token.
  return {
    ok: true,
    user: Object.freeze({
      username,
      uid: user.uid ?? '',
      groups: Object.freeze([...(user.groups ?? [])]),
      extra: Object.freeze(Object.fromEntries(extra)),
      audiences: Object.freeze(audiences ? granted.filter((audience) => audiences.includes(audience)) : []),
    }),
  };
}

/**
 * Milliseconds the token has left by its JWT `exp` (it is invalid from `exp` on); Infinity
 * for a token that is not a JWT or has no `exp`.
 */
function msUntilExpiry(token: string, now: number): number {
  let exp: unknown;
  try {
    exp = decodeJwt(token).exp;
  } catch {
    return Infinity;
  }
  return typeof exp === 'number' && Number.isFinite(exp) ? Math.floor(exp * 1000 - now) : Infinity;
}

/**
 * A map of at most `max` entries, each fresh until its own ttl has passed on the clock's
 * monotonic time; the least recently used goes first when full. (Kept here rather than taken
 * from lru-cache, which is not a dependency of this package: the hoisted copy is babel's v5.)
 */
class TtlLruCache<V> {
  /** Insertion order is recency order: a hit moves its entry to the end. */
  readonly #entries = new Map<string, { value: V; expiresAt: number }>();
  readonly #max: number;
  readonly #clock: Clock;

  constructor(max: number, clock: Clock) {
    this.#max = max;
    this.#clock = clock;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value while fresh (and marks it most recently used); a stale one is dropped. */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    if (this.#clock.monotonic() >= entry.expiresAt) return undefined;
    this.#entries.set(key, entry);
    return entry.value;
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  set(key: string, value: V, ttlMs: number): void {
    this.#entries.delete(key);
    this.#entries.set(key, { value, expiresAt: this.#clock.monotonic() + ttlMs });
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#max) break;
      this.#entries.delete(oldest);
    }
  }
}

/** Thrown by Slots.acquire when every slot is taken and the queue is full. */
class SlotsFullError extends Error {}

/**
 * A counting semaphore with a bounded FIFO queue: at most `limit` holders, at most
 * `maxWaiting` waiting for a turn.
 */
class Slots {
  #active = 0;
  /** Waiters in arrival order (a Set keeps insertion order and removes an aborted one cheaply). */
  readonly #waiting = new Set<() => void>();
  readonly #limit: number;
  readonly #maxWaiting: number;

  constructor(limit: number, maxWaiting: number) {
    this.#limit = limit;
    this.#maxWaiting = maxWaiting;
  }

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiting.size;
  }

  /** A slot's release function when one is free now, else undefined. */
  tryAcquire(): (() => void) | undefined {
    if (this.#active >= this.#limit) return undefined;
    this.#active++;
    return this.#releaser();
  }

  /**
   * Waits for a slot: resolves with its release function once a holder hands one over,
   * rejects with SlotsFullError at once when `maxWaiting` already wait, and with the
   * signal's reason when it aborts first (leaving the queue).
   */
  wait(signal: AbortSignal): Promise<() => void> {
    if (this.#waiting.size >= this.#maxWaiting) return Promise.reject(new SlotsFullError());
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.#waiting.delete(admit);
        reject(signal.reason as Error);
      };
      // The releasing holder hands its slot over: #active stays as it is.
      const admit = (): void => {
        signal.removeEventListener('abort', onAbort);
        resolve(this.#releaser());
      };
      this.#waiting.add(admit);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A release that frees the slot once, handing it to the first waiter if any. */
  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.values().next();
      if (next.done) this.#active--;
      else {
        this.#waiting.delete(next.value);
        next.value();
      }
    };
  }
}

function atLeast(value: number, name: string, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(
      `token review ${name}: expected ${min === 1 ? 'a positive integer' : `an integer >= ${min}`}, got ${value}`,
    );
  }
  return value;
}

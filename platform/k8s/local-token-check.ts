/**
 * A ServiceAccount token checked here, before any TokenReview: its signature against the keys
 * the apiserver publishes for service-account issuer discovery (`/openid/v1/jwks`), then its
 * audience, expiry and, when asked, its subject and node claim. A flood of garbage, expired,
 * foreign-audience or foreign-account tokens is refused with no request to the apiserver, so
 * the reviews it can make stay free for the tokens that could be good (issue 27: 400 clients
 * sending garbage starved 75 % of new agent tokens of a review).
 *
 * TokenReview is still asked about every token that passes: it alone knows whether the bound
 * pod still exists (revocation) and reports the node binding the authorizer uses. The local
 * check only ever refuses; it never accepts. A refusal needs proof: claims that rule the token
 * out, or a signature that does not verify against the published key its `kid` names.
 *
 * - **Claims first.** The token's claims are read (unverified) before anything else: the wrong
 *   audience, an expired token, another account or no node claim is refused whatever the
 *   signature, so nothing that could never pass costs a review, keys or no keys.
 * - **Keys.** Read on the first check and again every `refreshMs` (10 min) in the background;
 *   a token signed by a key not in the set starts one read at once (a check arriving while a
 *   read is under way waits for it), at most one per `unknownKeyRetryMs` (30 s); a key still
 *   not in the set is `unknown`, never a refusal, since it may be newer than the last read.
 *   So random `kid`s cost the apiserver at most one read per 30 s and go to the small pool,
 *   and a rotation never refuses a good token.
 * - **No keys.** While the keys cannot be read (the discovery endpoints not allowed, the
 *   apiserver down) the answer is `unknown`: the reviewer sends such tokens to TokenReview
 *   through a small pool of their own, so the service degrades to the old behaviour rather
 *   than refusing every agent.
 * - **Issuer.** A token signed by a published key whose `iss` is not the discovery document's
 *   issuer (an apiserver with several `--service-account-issuer`s) is `unknown`, not refused.
 */
import * as k8s from '@kubernetes/client-node';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import type { JSONWebKeySet, JWTPayload } from 'jose';
import { request } from 'node:https';
import type { Clock } from '../clock.js';

/** What the apiserver publishes for issuer discovery: the issuer and its public keys. */
export interface IssuerKeys {
  readonly issuer: string;
  readonly keys: JSONWebKeySet;
}

/** Reads the issuer and keys; rejects when they cannot be read. */
export type FetchIssuerKeys = (signal: AbortSignal) => Promise<IssuerKeys>;

/** `fail`: refuse without review; `pass`: worth a TokenReview; `unknown`: cannot tell here. */
export type LocalVerdict =
  | { readonly kind: 'pass' }
  | { readonly kind: 'fail'; readonly detail: string }
  | { readonly kind: 'unknown'; readonly detail: string };

/** Where the keys come from and how often they are read again. */
export interface IssuerKeyCacheOptions {
  fetchKeys: FetchIssuerKeys;
  clock: Clock;
  /** How often the keys are read again while they serve (default 10 min). */
  refreshMs?: number;
  /** Least time between two reads started by a token with an unknown key, or after a failed read (default 30 s). */
  unknownKeyRetryMs?: number;
  /** A read of the keys not answered within this fails (default 5 s). */
  timeoutMs?: number;
  /** Told of every read of the keys (metrics). */
  onKeysRead?: (ok: boolean) => void;
}

/** The apiserver's keys as last read; one per process, shared by every check. */
export interface IssuerKeyCache {
  /** The keys to check a token signed with `kid` against, read first when due; undefined when none could be read. */
  keysFor(kid: string | undefined): Promise<IssuerKeySet | undefined>;
  /** Whether a key set is held now. */
  readonly ready: boolean;
}

/** A key set as read. */
export interface IssuerKeySet {
  readonly issuer: string;
  readonly verify: ReturnType<typeof createLocalJWKSet>;
  readonly kids: ReadonlySet<string>;
  readonly readAt: number;
}

/** How tokens are checked locally. */
export interface LocalTokenCheckOptions {
  keys: IssuerKeyCache;
  /** The token's `aud` must hold one of these. */
  audiences: readonly string[];
  /** When set, the token's `sub` must be one of these (ServiceAccount usernames). */
  subjects?: readonly string[];
  /** When true, the token must be bound to a pod on a node (`kubernetes.io.node.name`). */
  requireNode?: boolean;
  clock: Clock;
}

/** Checks tokens; `check` never throws. */
export interface LocalTokenCheck {
  check(token: string): Promise<LocalVerdict>;
}

export const LOCAL_TOKEN_CHECK_DEFAULTS = {
  refreshMs: 10 * 60_000,
  unknownKeyRetryMs: 30_000,
  timeoutMs: 5_000,
} as const;

/** The algorithms the apiserver signs ServiceAccount tokens with (RSA or ECDSA keys). */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'];
/**
 * Clock skew forgiven on `exp`/`nbf`: the apiserver's own validator allows a minute, and
 * TokenReview, asked next, has the last word anyway.
 */
const CLOCK_TOLERANCE_S = 60;

/** Reads the keys on first use, then as `keysFor` finds them due (see the file comment). */
export function createIssuerKeyCache(options: IssuerKeyCacheOptions): IssuerKeyCache {
  const { clock, fetchKeys } = options;
  const refreshMs = options.refreshMs ?? LOCAL_TOKEN_CHECK_DEFAULTS.refreshMs;
  const retryMs = options.unknownKeyRetryMs ?? LOCAL_TOKEN_CHECK_DEFAULTS.unknownKeyRetryMs;
  const timeoutMs = options.timeoutMs ?? LOCAL_TOKEN_CHECK_DEFAULTS.timeoutMs;
  let held: IssuerKeySet | undefined;
  let reading: Promise<void> | undefined;
  /** Monotonic time of the last read started (successful or not). */
  let lastReadAt = -Infinity;

  const read = (): Promise<void> => {
    reading ??= (async () => {
      lastReadAt = clock.monotonic();
      try {
        const { issuer, keys } = await fetchKeys(AbortSignal.timeout(timeoutMs));
        if (typeof issuer !== 'string' || !Array.isArray(keys?.keys)) throw new Error('not a key set');
        held = {
          issuer,
          verify: createLocalJWKSet(keys),
          kids: new Set(keys.keys.flatMap((key) => (typeof key.kid === 'string' ? [key.kid] : []))),
          readAt: clock.monotonic(),
        };
        options.onKeysRead?.(true);
      } catch {
        options.onKeysRead?.(false);
      } finally {
        reading = undefined;
      }
    })();
    return reading;
  };

  /** Reads the keys when none are held or they are due; at most one read per retryMs after a failure. */
  const keysFor = async (kid: string | undefined): Promise<IssuerKeySet | undefined> => {
    // A read under way may bring the key this token names (a rotation): wait for it.
    if (reading) await reading;
    const now = clock.monotonic();
    const due = now - lastReadAt >= retryMs;
    if (!held) {
      if (due || reading) await read();
    } else if (kid !== undefined && !held.kids.has(kid) && due) {
      await read();
    } else if (now - held.readAt >= refreshMs && due) {
      // The old set serves while the new one is read.
      void read();
    }
    return held;
  };

  return {
    keysFor,
    get ready() {
      return held !== undefined;
    },
  };
}

export function createLocalTokenCheck(options: LocalTokenCheckOptions): LocalTokenCheck {
  const { clock } = options;
  const audiences = [...options.audiences];
  if (audiences.length === 0) throw new RangeError('local token check: expected at least one audience');
  const subjects = options.subjects ? new Set(options.subjects) : undefined;

  /** Why the token's claims (read unverified) rule it out, or undefined when they may do. */
  const claimProblem = (claims: JWTPayload): string | undefined => {
    const aud = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
    if (!aud.some((a) => audiences.includes(a))) return `claim aud: not one of ${audiences.join(', ')}`;
    if (typeof claims.exp !== 'number' || claims.exp * 1000 + CLOCK_TOLERANCE_S * 1000 <= clock.now())
      return 'the token has expired';
    if (subjects && !subjects.has(claims.sub ?? ''))
      return `subject ${JSON.stringify(claims.sub ?? null)} is not allowed`;
    if (options.requireNode && !boundNode(claims)) return 'the token is not bound to a pod on a node';
    return undefined;
  };

  const check = async (token: string): Promise<LocalVerdict> => {
    let kid: string | undefined;
    let claims: JWTPayload;
    try {
      const header = decodeProtectedHeader(token);
      kid = typeof header.kid === 'string' ? header.kid : undefined;
      claims = decodeJwt(token);
    } catch {
      return { kind: 'fail', detail: 'not a JWT' };
    }
    // Claims first: a token whose claims rule it out is refused whatever its signature, so
    // nothing that could never pass reaches a review, even while the keys cannot be read.
    const problem = claimProblem(claims);
    if (problem !== undefined) return { kind: 'fail', detail: problem };
    const keys = await options.keys.keysFor(kid);
    if (!keys) return { kind: 'unknown', detail: "the apiserver's service-account keys are not read yet" };
    // A key not published when last read may be a rotation newer than that read: TokenReview decides.
    if (kid !== undefined && !keys.kids.has(kid))
      return { kind: 'unknown', detail: `key ${JSON.stringify(kid)} was not published when last read` };
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys.verify, {
        algorithms: ALGORITHMS,
        audience: audiences,
        currentDate: new Date(clock.now()),
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (error) {
      // Only what proves the token false is a refusal; a key set jose cannot use (two keys of
      // one kid, an algorithm it lacks) leaves the token to TokenReview.
      if (
        error instanceof joseErrors.JWKSMultipleMatchingKeys ||
        error instanceof joseErrors.JOSENotSupported
      )
        return { kind: 'unknown', detail: refusal(error) };
      return { kind: 'fail', detail: refusal(error) };
    }
    if (payload.iss !== keys.issuer)
      return { kind: 'unknown', detail: `issuer ${JSON.stringify(payload.iss)} is not the discovery issuer` };
    return { kind: 'pass' };
  };

  return { check };
}

/** The node claim of a pod-bound ServiceAccount token (`kubernetes.io.node.name`). */
function boundNode(payload: JWTPayload): boolean {
  const claims = payload['kubernetes.io'] as { node?: { name?: unknown } } | undefined;
  return typeof claims?.node?.name === 'string' && claims.node.name !== '';
}

/** One line on why jose refused a token (never the token itself). */
function refusal(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (error instanceof joseErrors.JWTClaimValidationFailed) return `claim ${error.claim}: ${error.reason}`;
  if (error instanceof joseErrors.JWKSNoMatchingKey) return 'signed by a key the apiserver does not publish';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'the signature does not verify';
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return 'signature algorithm not allowed';
  if (error instanceof joseErrors.JWKSMultipleMatchingKeys)
    return 'the key set holds several keys of its kid';
  if (error instanceof joseErrors.JOSENotSupported) return 'a key or algorithm this check does not support';
  return 'not a valid signed JWT';
}

/** Largest discovery document or key set read. */
const MAX_DISCOVERY_BYTES = 256 * 1024;

/**
 * FetchIssuerKeys of a real apiserver: `/.well-known/openid-configuration` for the issuer and
 * `/openid/v1/jwks` for the keys, with the kubeconfig's credentials (the ServiceAccount needs
 * the `system:service-account-issuer-discovery` ClusterRole or get on those two URLs). The key
 * set is read from the apiserver itself, not from the document's `jwks_uri`, whose host is the
 * issuer's public name.
 */
export function kubeIssuerKeys(kubeConfig: k8s.KubeConfig): FetchIssuerKeys {
  return async (signal) => {
    const document = (await getJson(kubeConfig, '/.well-known/openid-configuration', signal)) as {
      issuer?: unknown;
    };
    if (typeof document?.issuer !== 'string') throw new Error('discovery document without an issuer');
    const keys = (await getJson(kubeConfig, '/openid/v1/jwks', signal)) as JSONWebKeySet;
    return { issuer: document.issuer, keys };
  };
}

async function getJson(kubeConfig: k8s.KubeConfig, path: string, signal: AbortSignal): Promise<unknown> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig names no cluster server');
  const options: { headers: Record<string, string> } & Record<string, unknown> = { headers: {} };
  await kubeConfig.applyToHTTPSOptions(options);
  const url = new URL(path, server);
  return new Promise((resolve, reject) => {
    const req = request(url, { ...options, method: 'GET', signal }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_DISCOVERY_BYTES) {
          req.destroy(new Error(`${path}: answer larger than ${MAX_DISCOVERY_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`${path}: HTTP ${res.statusCode}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new Error(`${path}: not JSON`));
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

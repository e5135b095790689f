/**
 * `POST /v1/observations`: where the ingest functions hand snapshots to a controller replica
 * (schema.ts has the wire format). Every replica accepts (hot standby); an answer is sent only
 * once the observations are in this replica's engine, and the fence decides, at answer time,
 * whether it answers as the leader (with each node's current published entry) or as a
 * follower (naming the leader it knows of).
 *
 * Checks, in order, each answered with a one-line `{ "error": { "code", "message" } }`:
 * path (404) and method (405, `Allow: POST`); bearer token (401 with `WWW-Authenticate`, or
 * 503 with `Retry-After` when TokenReview cannot say); user allowed (403); Content-Type
 * `application/json` (415); body size (413, `maxBodyBytes`, counted after any
 * Content-Encoding); JSON and the whole batch's schema (400 naming the field as a JSON
 * pointer), all before anything is accepted, so a 400 accepts nothing. Anything unexpected
 * is a 500 with a generic message, logged; no answer carries a stack trace.
 *
 * **Authentication: TokenReview, not mTLS.** The functions already hold a ServiceAccount
 * token (projected, rotated by the kubelet, audience-bound and short-lived), and the same
 * authenticator serves the agent → function hop, where the pod-bound token's node name is
 * what ties an agent to its node. mTLS would need a CA, per-workload certificate issuance and
 * rotation (cert-manager or our own), and its identities would be certificate subjects
 * rather than the Kubernetes users RBAC and this allow list speak. The cost of TokenReview,
 * one apiserver call per token per minute (cached), is small; while the apiserver cannot
 * answer, requests get 503 and the functions retry, which they must anyway while no leader
 * answers. What it does not give is transport encryption: a token sent over plain HTTP can
 * be replayed by whoever reads the traffic until it expires, so the Service should be
 * reachable only from the functions (NetworkPolicy) or behind a mesh's TLS, and the tokens
 * should carry an audience of their own (`audiences` of the reviewer) so one captured here
 * cannot be used against the apiserver.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Snapshot, PublishedNode } from '../../contracts/index.js';
import type { ObserveResult } from '../../core/engine/index.js';
import {
  AppError,
  httpFailureOf,
  jsonRequestOf,
  postEndpoint,
  writeJsonAnswer,
  readRequestBody,
  sendHttpFailure,
  type Clock,
  type Logger,
  type Registry,
  type RequestHandler,
} from '../../platform/index.js';
import { bearerToken, type AuthenticatedUser } from '../../platform/k8s/index.js';
import type { Leadership } from '../leader-election/index.js';
import { createObservationsMetrics, type ObservationsMetrics } from './metrics.js';
import {
  DEFAULT_MAX_BATCH,
  OBSERVATIONS_PATH,
  type FollowerObservationsResponse,
  type LeaderObservationsResponse,
} from '../../contracts/index.js';
import { observationsLimit, parseObservationsBody } from './validate.js';

/** What the engine did with one snapshot (ObserveResult without its transitions). */
export type AcceptResult = Pick<ObserveResult, 'accepted' | 'dropped'>;

/** What the app is built from. */
export interface ObservationsAppDeps {
  /** The user a bearer token belongs to (TokenReviewer.authenticate); throws 401/503 AppErrors. */
  authenticate(token: string): Promise<AuthenticatedUser>;
  /**
   * Observes the snapshots into the engine, in order, received at `now` (epoch ms), and
   * returns one result per snapshot. Returns only once they are in the engine (an ack means
   * that). May throw an AppError with a status (503 while not ready, say).
   */
  accept(snapshots: readonly Snapshot[], now: number): readonly AcceptResult[];
  /** The node's entry as published now; null when it is healthy (not listed). Asked only when leading. */
  entryFor(node: string, now: number): PublishedNode | null;
  /** The fence (LeaderElector.leadership), read after accepting. */
  leadership(): Leadership;
  /** This replica's identity (its pod name). */
  identity: string;
  /** The leader as last observed (LeaderElector.leader), null or undefined when none is known. */
  leaderIdentity(): string | null | undefined;
  clock: Clock;
  log: Logger;
  /** Its metrics are registered here (one app per registry). */
  registry: Registry;
}

/** How the app checks requests. */
export interface ObservationsAppOptions {
  /** Users allowed to post (default: the ingest function's ServiceAccount in ai-infra). */
  allowedUsers?: readonly string[];
  /** Most observations in one request (default 1000). */
  maxBatch?: number;
  /** Largest body, after decompression (default 4 MiB). */
  maxBodyBytes?: number;
  /** Retry-After of a 503 (default 1 s). */
  retryAfterSeconds?: number;
  /** Metric names start `npu_fault_<metricsComponent>_` (default `controller`). */
  metricsComponent?: string;
}

/** The ingest function's ServiceAccount, the one user allowed by default. */
export const DEFAULT_ALLOWED_USERS: readonly string[] = ['system:serviceaccount:ai-infra:npu-fault-function'];
/** Default largest body: 1000 snapshots of a few KiB each fit. */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * Builds the endpoint as a request handler for the platform HTTP server's `handler`, or for
 * node:http directly. It answers every path: 404 outside OBSERVATIONS_PATH. A plain node:http
 * handler, not an express app: express, its router and body-parser added tens of µs to every
 * request, which tells at the function's small batches (decisions/0055).
 */
export function createObservationsApp(
  deps: ObservationsAppDeps,
  options: ObservationsAppOptions = {},
): RequestHandler {
  const allowed = new Set(options.allowedUsers ?? DEFAULT_ALLOWED_USERS);
  if (allowed.size === 0) throw new RangeError('observations allowedUsers: expected at least one user');
  const limit = observationsLimit(options.maxBatch ?? DEFAULT_MAX_BATCH);
  const maxBodyBytes = positiveInteger(options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, 'maxBodyBytes');
  const retryAfter = positiveInteger(options.retryAfterSeconds ?? 1, 'retryAfterSeconds');
  const metrics = createObservationsMetrics(deps.registry, options.metricsComponent ?? 'controller');
  const log = deps.log.child({ component: 'observations' });

  /**
   * The request's observations, checked: credentials, then Content-Type, then the body (read
   * only now: the limit counts inflated bytes). Its own frame, so the body read and parsed
   * here is garbage before the answer is built.
   */
  async function read(req: IncomingMessage): Promise<{ user: string; snapshots: Snapshot[] }> {
    const user = await deps.authenticate(bearerToken(req.headers.authorization));
    if (!allowed.has(user.username)) {
      throw new AppError('forbidden', `user "${user.username}" may not post observations`, {
        status: 403,
      });
    }
    requireJson(req.headers);
    const { body, mayPollute } = jsonRequestOf(await readRequestBody(req, { limit: maxBodyBytes }));
    const request = parseObservationsBody(body, limit, mayPollute);
    return { user: user.username, snapshots: request.observations.map((o) => o.snapshot) };
  }

  /** Answers a POST to OBSERVATIONS_PATH; throws what the failure path answers. */
  async function post(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { user, snapshots } = await read(req);
    const body = answer(deps, snapshots, metrics);
    log.debug({ user, observations: body.results.length, leader: body.leader }, 'observed');
    writeJsonAnswer(res, body);
  }

  return postEndpoint({
    path: OBSERVATIONS_PATH,
    clock: deps.clock,
    metrics,
    post,
    fail: (res, error) =>
      sendHttpFailure(res, httpFailureOf(error, maxBodyBytes), {
        log,
        what: 'observations',
        retryAfterSeconds: retryAfter,
        error,
      }),
  });
}

/** Accepts the batch, then reads the fence and answers as leader or follower. */
function answer(
  deps: ObservationsAppDeps,
  snapshots: readonly Snapshot[],
  metrics: ObservationsMetrics,
): LeaderObservationsResponse | FollowerObservationsResponse {
  const now = deps.clock.now();
  const accepted = deps.accept(snapshots, now);
  if (accepted.length !== snapshots.length) {
    throw new Error(`accept returned ${accepted.length} results for ${snapshots.length} snapshots`);
  }
  const results = snapshots.map((snapshot, i) => {
    const { accepted: ok, dropped } = accepted[i] as AcceptResult;
    metrics.observations.inc({ result: ok ? 'accepted' : (dropped ?? 'unknown') });
    return { node: snapshot.node, accepted: ok, ...(dropped === undefined ? {} : { dropped }) };
  });
  // The fence is read after the observations are in the engine: a replica that stopped
  // leading meanwhile answers as a follower, so the function waits for the real leader.
  const lead = deps.leadership();
  if (!lead.leading) {
    return {
      leader: false,
      identity: deps.identity,
      leader_identity: deps.leaderIdentity() ?? null,
      results,
    };
  }
  const entries = new Map<string, PublishedNode | null>();
  const entryOf = (node: string): PublishedNode | null => {
    if (!entries.has(node)) entries.set(node, deps.entryFor(node, now));
    return entries.get(node) ?? null;
  };
  return {
    leader: true,
    identity: deps.identity,
    term: lead.term,
    results: results.map((result) => ({ ...result, entry: entryOf(result.node) })),
  };
}

/** 415 unless the Content-Type is `application/json` (any parameters, any case). */
function requireJson(headers: IncomingHttpHeaders): void {
  const mediaType = headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    throw new AppError('unsupported_media_type', 'Content-Type must be application/json', { status: 415 });
  }
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`observations ${name}: expected a positive integer, got ${value}`);
  }
  return value;
}

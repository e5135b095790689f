/**
 * `GET /v1/explain/:node` and `/v1/explain/:node/:device`: why a node's devices have their
 * status (core/engine `explain`), read-only, for `npu-fault explain`. Any replica answers
 * (followers apply the same observations: hot standby) and says whether it leads.
 *
 * Checks, each a one-line `{ "error": { "code", "message" } }`: method (405, `Allow: GET`);
 * bearer token through TokenReview (401; 503 when the apiserver cannot say); authorisation
 * through a SubjectAccessReview (403): the caller must be allowed `get` on `explanations` in
 * API group `npu-fault.io` in the controller's namespace (the npu-fault-operator Role,
 * k8s/operator/rbac.yaml; RBAC accepts resource names no API serves); seeded (503); node or
 * device tracked (404).
 *
 * **Token header.** The token is read from `X-Npu-Fault-Authorization: Bearer …` when that
 * header is present, else from `Authorization`. The apiserver's pod proxy
 * (`…/pods/<pod>:8080/proxy/…`), which the CLI uses from outside the cluster, authenticates
 * the caller itself and does not forward its Authorization header to the pod, so the CLI
 * repeats the caller's token in the header of our own. Either way it is checked here: the
 * proxy's own authorisation (`get pods/proxy`) is not what grants an explanation.
 */
import express from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Explanation, NodeExplanation } from '../../core/engine/index.js';
import {
  AppError,
  httpFailureOf,
  sendHttpFailure,
  type Clock,
  type Logger,
  type RequestHandler,
} from '../../platform/index.js';
import { bearerToken, type AuthenticatedUser } from '../../platform/k8s/index.js';
import type { Leadership } from '../leader-election/index.js';
import type { AccessCheck } from './access-review.js';

/** Where the endpoint lives. */
export const EXPLAIN_PATH = '/v1/explain';
/** The header that carries the caller's token through the apiserver's pod proxy. */
export const EXPLAIN_TOKEN_HEADER = 'x-npu-fault-authorization';
/** The RBAC attributes a caller must be allowed (verb `get`, in the controller's namespace). */
export const EXPLAIN_RESOURCE = { group: 'npu-fault.io', resource: 'explanations', verb: 'get' } as const;

/** The answer: who answered, and the explanation. */
export interface ExplainResponse {
  leader: boolean;
  identity: string;
  /** The leader's term when this replica leads; null otherwise. */
  term: number | null;
  /** The leader this replica knows of (itself when leading). */
  leader_identity: string | null;
  explanation: NodeExplanation;
}

/** What the endpoint is built from. */
export interface ExplainAppDeps {
  /** The user a bearer token belongs to (TokenReviewer.authenticate); throws 401/503 AppErrors. */
  authenticate(token: string): Promise<AuthenticatedUser>;
  /** Whether `user` may get explanations (a SubjectAccessReview); throws a 503 AppError when it cannot say. */
  authorize: AccessCheck;
  /** The engine's explanation as of `now`, or undefined while the replica is not seeded. */
  explain(node: string, device: string | undefined, now: number): Explanation | undefined;
  leadership(): Leadership;
  identity: string;
  leaderIdentity(): string | null | undefined;
  /** The controller's namespace: where the caller's role must allow it. */
  namespace: string;
  clock: Clock;
  log: Logger;
}

const MAX_SEGMENT = 253;

/** Builds the endpoint; it answers every path (404 outside EXPLAIN_PATH). */
export function createExplainApp(deps: ExplainAppDeps): RequestHandler {
  const log = deps.log.child({ component: 'explain' });
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  const handle = async (req: express.Request, res: express.Response): Promise<void> => {
    const node = segment(req.params.node, 'node');
    const device = req.params.device === undefined ? undefined : segment(req.params.device, 'device');
    const header = req.headers[EXPLAIN_TOKEN_HEADER];
    const token = bearerToken(Array.isArray(header) ? header[0] : (header ?? req.headers.authorization));
    const user = await deps.authenticate(token);
    const allowed = await deps.authorize(user, {
      ...EXPLAIN_RESOURCE,
      namespace: deps.namespace,
      name: node,
    });
    if (!allowed)
      throw new AppError(
        'forbidden',
        `user "${user.username}" may not get explanations (npu-fault.io) in namespace ${deps.namespace}`,
        { status: 403 },
      );
    const explanation = deps.explain(node, device, deps.clock.now());
    if (explanation === undefined)
      throw new AppError('not_ready', 'controller is starting (seeding its state)', { status: 503 });
    if (!explanation.tracked) throw new AppError('not_found', explanation.message, { status: 404 });
    const lead = deps.leadership();
    const body: ExplainResponse = {
      leader: lead.leading,
      identity: deps.identity,
      term: lead.leading ? lead.term : null,
      leader_identity: lead.leading ? deps.identity : (deps.leaderIdentity() ?? null),
      explanation,
    };
    log.debug({ user: user.username, node, device }, 'explained');
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).json(body);
  };
  for (const path of [`${EXPLAIN_PATH}/:node`, `${EXPLAIN_PATH}/:node/:device`]) {
    app
      .route(path)
      .get(handle)
      .all(() => {
        throw new AppError('method_not_allowed', `${EXPLAIN_PATH} accepts only GET`, { status: 405 });
      });
  }
  app.use(() => {
    throw new AppError('not_found', 'not found', { status: 404 });
  });
  app.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
    sendHttpFailure(res, httpFailureOf(error, 0), {
      log,
      what: 'explain',
      retryAfterSeconds: 1,
      error,
      allow: 'GET',
    }),
  );
  return (req: IncomingMessage, res: ServerResponse) => app(req, res);
}

/**
 * Serves EXPLAIN_PATH with `explain` and everything else with `other` (the observation
 * endpoint), so both share the controller's one listening port.
 */
export function withExplain(explain: RequestHandler, other: RequestHandler): RequestHandler {
  return (req, res) => {
    const path = req.url ?? '';
    if (path === EXPLAIN_PATH || path.startsWith(`${EXPLAIN_PATH}/`)) return explain(req, res);
    return other(req, res);
  };
}

function segment(raw: string | string[] | undefined, what: string): string {
  const value = Array.isArray(raw) ? raw.join('/') : raw;
  if (value === undefined || value === '' || value.length > MAX_SEGMENT)
    throw new AppError('invalid_path', `${what}: expected 1 to ${MAX_SEGMENT} characters`, { status: 400 });
  return value;
}

/**
 * `GET /v1/explain/:node` and `/v1/explain/:node/:device`: why a node's devices have their
 * status (core/engine `explain`), read-only, for `npu-fault explain`. The paths, the token's
 * account, audience and header, and the answer's schema are the contract's
 * (contracts/explain.ts), which the CLI reads with too. Any replica answers
 * (followers apply the same observations: hot standby) and says whether it leads.
 *
 * Checks, each a one-line `{ "error": { "code", "message" } }`: method (405, `Allow: GET`);
 * the bearer token through TokenReview (401; 503 when the apiserver cannot say): it must be a
 * token of the ServiceAccount `npu-fault-explain` in the controller's namespace with the
 * audience `npu-fault-explain` (403 for any other user); seeded (503); node or device
 * tracked (404).
 *
 * **Who may ask is decided by the apiserver.** No operator credential ever reaches this
 * endpoint: `npu-fault explain` asks the apiserver for a 10-minute token of the
 * `npu-fault-explain` ServiceAccount (TokenRequest, `create serviceaccounts/token` on that one
 * name: the npu-fault-operator Role, k8s/operator/rbac.yaml), and sends that. RBAC on the
 * TokenRequest is the authorisation, and the apiserver's audit log records who asked; a
 * stolen explain token reads explanations for at most ten minutes and nothing else, and the
 * ServiceAccount itself holds no permission. (The design before issue 27 sent the operator's
 * own apiserver token to the pod and asked a SubjectAccessReview per request:
 * docs/decisions/ has why it changed.)
 *
 * **Token header.** The token is read from `X-Npu-Fault-Authorization: Bearer …` when that
 * header is present, else from `Authorization`: the apiserver's pod proxy, which the CLI uses
 * from outside the cluster, authenticates the caller itself and does not forward its
 * Authorization header to the pod.
 */
import express from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  EXPLAIN_PATH,
  EXPLAIN_SERVICE_ACCOUNT,
  EXPLAIN_TOKEN_HEADER,
  type ExplainResponse,
} from '../../contracts/index.js';
import type { Explanation } from '../../core/engine/index.js';
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

/** The username of the explain ServiceAccount in `namespace`. */
export function explainUser(namespace: string): string {
  return `system:serviceaccount:${namespace}:${EXPLAIN_SERVICE_ACCOUNT}`;
}

/** What the endpoint is built from. */
export interface ExplainAppDeps {
  /**
   * The user a bearer token belongs to (TokenReviewer.authenticate, audience
   * EXPLAIN_TOKEN_AUDIENCE); throws 401/503 AppErrors.
   */
  authenticate(token: string): Promise<AuthenticatedUser>;
  /** The engine's explanation as of `now`, or undefined while the replica is not seeded. */
  explain(node: string, device: string | undefined, now: number): Explanation | undefined;
  leadership(): Leadership;
  identity: string;
  leaderIdentity(): string | null | undefined;
  /** The controller's namespace: its explain ServiceAccount is the one caller taken. */
  namespace: string;
  clock: Clock;
  log: Logger;
}

const MAX_SEGMENT = 253;

/** Builds the endpoint; it answers every path (404 outside EXPLAIN_PATH). */
export function createExplainApp(deps: ExplainAppDeps): RequestHandler {
  const log = deps.log.child({ component: 'explain' });
  const allowed = explainUser(deps.namespace);
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
    if (user.username !== allowed)
      throw new AppError(
        'forbidden',
        `user "${user.username}" may not get explanations: only tokens of the ServiceAccount ${deps.namespace}/${EXPLAIN_SERVICE_ACCOUNT} are taken (npu-fault explain mints one)`,
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

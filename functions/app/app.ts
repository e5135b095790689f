/**
 * `POST /v1/snapshots`: where node agents send their snapshots (contracts/ingest.ts has the
 * wire format). The function keeps no state: it checks the request, forwards the snapshots
 * (the Forwarder sends them to every ready controller replica) and answers 200 only once the
 * leading replica has accepted them, with each node's published entry from the leader.
 *
 * Checks, in order, each answered with a one-line `{ "error": { "code", "message" } }`:
 * path (404) and method (405, `Allow: POST`); bearer token (401 with `WWW-Authenticate`, or
 * 503 with `Retry-After` when TokenReview cannot say); the agent's ServiceAccount and a token
 * bound to a node (403); Content-Type (415: JSON, or a binary or structured CloudEvent); the
 * body within `bodyTimeoutMs` (408) and `maxBodyBytes` (413, counted after any
 * Content-Encoding); JSON, CloudEvent attributes and the whole batch's schema (400 naming
 * the field as a JSON pointer); at most `maxDevicesPerNode` devices per snapshot (422 naming
 * the count); no snapshot of the simulated collector unless `allowSimulatedCollectors` (422
 * naming `collector`); every snapshot's `node` equal to the token's node (403).
 * Only then is anything forwarded, so a refused request forwards nothing. No leader within
 * the Forwarder's bound is a 503 with `Retry-After`. Anything unexpected is a 500 with a
 * generic message, logged; no answer carries a stack trace.
 *
 * **Slow bodies.** A body not received whole within `bodyTimeoutMs` (default 10 s) after the
 * credentials are checked is answered 408 `body_timeout` and the connection is closed, so a
 * client trickling bytes (slowloris) holds a socket for a bounded time. 408 rather than 400:
 * the request was not malformed, only late, and the agent retries it like any other.
 *
 * **What is forwarded.** One plain-JSON snapshot of at most 64 KiB goes on as the bytes it
 * came in (the controllers validate it again with the same contract); batches, CloudEvents
 * and larger bodies as the validated snapshots serialised (forwardedJson). The body is read
 * as express.json read it, without express (platform/json-request-body.ts; decisions/0055).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import {
  AppError,
  httpFailureOf,
  jsonRequestOf,
  postEndpoint,
  writeJsonAnswer,
  readRequestBody,
  sendHttpFailure,
  writeHttpFailure,
  type Clock,
  type HttpFailure,
  type Logger,
  type RawRequestBody,
  type Registry,
  type RequestHandler,
} from '../../platform/index.js';
import { bearerToken, type AuthenticatedUser } from '../../platform/k8s/index.js';
import { devicesIn } from '../../core/normalise.js';
import {
  DEFAULT_MAX_DEVICES_PER_NODE,
  DEFAULT_MAX_SNAPSHOTS,
  SNAPSHOTS_PATH,
  SNAPSHOT_EVENT_TYPE,
  type IngestResponse,
  type LeaderObservationResult,
  type Snapshot,
} from '../../contracts/index.js';
import { decodeBody, transportOf, type Transport } from './cloudevents.js';
import { createFunctionMetrics, type FunctionMetrics } from './metrics.js';
import { agentUser, boundNode, requireNode } from './node-binding.js';
import {
  batchLimit,
  claimedCount,
  isPlainObject,
  parseSnapshots,
  refusePollutingKeys,
  refuseSimulatedCollectors,
  type SnapshotBatchLimit,
} from './validate.js';

/**
 * Sends validated snapshots on to the controllers (functions/forwarder's Forwarder has this
 * shape). Resolves with the leader's answer once the leader accepted them; rejects with an
 * AppError of status 503 carrying `retryAfterSeconds` (LeaderUnavailableError) when no leader
 * answered within its bound.
 */
export interface Forwarder {
  /**
   * `bytes`: the snapshots' JSON size, so a batch is cut before the controller's body limit;
   * `json`: the snapshots as observations already serialised (`{"snapshot":…}` items, no
   * brackets), sent as they are: text, UTF-8 bytes, or UTF-8 parts to be sent one after another.
   */
  forward(
    snapshots: readonly Snapshot[],
    options?: { bytes?: number; json?: ObservationItems },
  ): Promise<ForwardResult>;
}

/** Observations serialised as JSON array items: text, UTF-8 bytes, or UTF-8 parts sent one after another. */
export type ObservationItems = string | Buffer | readonly Buffer[];

/** The leader's answer for forwarded snapshots, `results[i]` answering `snapshots[i]`. */
export interface ForwardResult {
  /** The identity of the replica whose answer this is. */
  leader: string;
  term: number;
  results: LeaderObservationResult[];
}

/** What the app is built from. */
export interface FunctionAppDeps {
  /** The user a bearer token belongs to (TokenReviewer.authenticate); throws 401/503 AppErrors. */
  authenticate(token: string): Promise<AuthenticatedUser>;
  forwarder: Forwarder;
  clock: Clock;
  log: Logger;
  /** Its metrics are registered here (one app per registry). */
  registry: Registry;
}

/** How the app checks requests. */
export interface FunctionAppOptions {
  /** Users allowed to post (default: the agent's ServiceAccount `npu-fault-agent` in `agentNamespace`). */
  allowedUsers?: readonly string[];
  /** Namespace of the agent's ServiceAccount when `allowedUsers` is not given (default `ai-infra`). */
  agentNamespace?: string;
  /** Most snapshots in one request (default 500). */
  maxBatch?: number;
  /** Most devices (chips) one snapshot may list (default 32, the rules' `max_devices_per_node`); 422 beyond. */
  maxDevicesPerNode?: number;
  /** Largest body, after decompression (default 1 MiB). */
  maxBodyBytes?: number;
  /** Time allowed to receive the body once the credentials are checked (default 10 s). */
  bodyTimeoutMs?: number;
  /** CloudEvent `type`s accepted (default SNAPSHOT_EVENT_TYPE). */
  eventTypes?: readonly string[];
  /** Retry-After of a 503 whose error names none (default 1 s). */
  retryAfterSeconds?: number;
  /** Metric names start `npu_fault_<metricsComponent>_` (default `function`). */
  metricsComponent?: string;
  /** Accept snapshots of the simulated collector (`sim`); default false: 422 `simulated_collector`. */
  allowSimulatedCollectors?: boolean;
}

/** The agents' namespace by default. */
export const DEFAULT_AGENT_NAMESPACE = 'ai-infra';
/** Default largest body: a 500-snapshot batch of small nodes, or one large node many times over. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** Default time to receive a body. */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000;

/** The checked settings of an app. */
interface Settings {
  allowed: ReadonlySet<string>;
  batch: SnapshotBatchLimit;
  maxDevices: number;
  maxBodyBytes: number;
  bodyTimeoutMs: number;
  eventTypes: ReadonlySet<string>;
  retryAfter: number;
  allowSimulated: boolean;
}

/**
 * Builds the endpoint as a request handler for the platform HTTP server's `handler`, or for
 * node:http directly. It answers every path: 404 outside SNAPSHOTS_PATH. A plain node:http
 * handler, not an express app: express and body-parser cost several times what the request
 * itself does at a thousand snapshots a second (`npm run bench:function`; docs/performance.md).
 */
export function createFunctionApp(deps: FunctionAppDeps, options: FunctionAppOptions = {}): RequestHandler {
  const settings = settingsOf(options);
  const metrics = createFunctionMetrics(deps.registry, options.metricsComponent ?? 'function');
  const log = deps.log.child({ component: 'snapshots' });

  /**
   * The request's snapshots, checked, and what is forwarded of them; undefined when the body
   * came too late (answered 408 already). Its own frame, so the body read and parsed here is
   * garbage before the wait for the leader.
   */
  async function accept(
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<{ snapshots: Snapshot[]; node: string; json: ObservationItems; bytes: number } | undefined> {
    const user = await deps.authenticate(bearerToken(req.headers.authorization));
    const node = boundNode(user, settings.allowed);
    const transport = transportOf(req.headers);
    const cancelDeadline = startDeadline(req, res, deps.clock, settings.bodyTimeoutMs, metrics);
    // Content-Type is checked above; any body is read now (the limit counts inflated bytes).
    let read: RawRequestBody | undefined;
    try {
      read = await readRequestBody(req, { limit: settings.maxBodyBytes });
    } finally {
      cancelDeadline();
    }
    if (res.headersSent) return undefined; // timed out: answered 408 already
    const { body, mayPollute } = jsonRequestOf(read);
    const request = { headers: req.headers, body, transport, mayPollute };
    const { snapshots, at, batch } = validate(request, settings, metrics);
    requireNode(snapshots, node, at, batch);
    const { json, bytes } = forwardedJson(snapshots, transport, batch, read);
    // The schema fills in defaults, so what is forwarded can be far larger than what was
    // sent (`{"npu":0}` becomes a whole device): bound it too, or one agent's request could
    // exceed the controllers' body limit and fail every batch it joins.
    if (bytes > settings.maxBodyBytes)
      throw new AppError(
        'body_too_large',
        `snapshots larger than ${settings.maxBodyBytes} bytes once defaults are filled in (${bytes})`,
        { status: 413 },
      );
    return { snapshots, node, json, bytes };
  }

  /** Answers a POST to SNAPSHOTS_PATH; throws what the failure path answers. */
  async function post(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const accepted = await accept(req, res);
    if (accepted === undefined) return;
    const { snapshots, node, json, bytes } = accepted;
    // Only the nodes outlive the wait for the leader; the snapshot objects do not.
    const nodes = snapshots.map((snapshot) => snapshot.node);
    const answer = answerOf(await deps.forwarder.forward(snapshots, { bytes, json }), nodes, metrics);
    log.debug({ node, snapshots: nodes.length, leader: answer.leader }, 'forwarded');
    writeJsonAnswer(res, answer);
  }

  function fail(res: ServerResponse, error: unknown): void {
    const failure = httpFailureOf(error, settings.maxBodyBytes);
    if (!res.headersSent) count(failure, metrics); // else answered already (408), counted then
    if (failure.code === 'token_review_busy' && !res.headersSent) {
      // Counted (auth_failures_total, token_reviews_total), not logged: it comes in floods.
      writeHttpFailure(res, failure, settings.retryAfter);
      return;
    }
    sendHttpFailure(res, failure, {
      log,
      what: 'snapshots',
      retryAfterSeconds: retryAfterOf(error, settings.retryAfter),
      error,
    });
  }

  return postEndpoint({ path: SNAPSHOTS_PATH, clock: deps.clock, metrics, post, fail });
}

function settingsOf(options: FunctionAppOptions): Settings {
  const allowed = new Set(
    options.allowedUsers ?? [agentUser(options.agentNamespace ?? DEFAULT_AGENT_NAMESPACE)],
  );
  if (allowed.size === 0) throw new RangeError('function allowedUsers: expected at least one user');
  const eventTypes = new Set(options.eventTypes ?? [SNAPSHOT_EVENT_TYPE]);
  if (eventTypes.size === 0) throw new RangeError('function eventTypes: expected at least one type');
  return {
    allowed,
    batch: batchLimit(positiveInteger(options.maxBatch ?? DEFAULT_MAX_SNAPSHOTS, 'maxBatch')),
    maxDevices: positiveInteger(
      options.maxDevicesPerNode ?? DEFAULT_MAX_DEVICES_PER_NODE,
      'maxDevicesPerNode',
    ),
    maxBodyBytes: positiveInteger(options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, 'maxBodyBytes'),
    bodyTimeoutMs: positiveInteger(options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS, 'bodyTimeoutMs'),
    eventTypes,
    retryAfter: positiveInteger(options.retryAfterSeconds ?? 1, 'retryAfterSeconds'),
    allowSimulated: options.allowSimulatedCollectors ?? false,
  };
}

/** A request read whole: its headers, parsed body, transport, and whether the body may hold a polluting key. */
interface ReadRequest {
  headers: IncomingHttpHeaders;
  body: unknown;
  transport: Transport;
  /** False when the raw body was searched already and cannot hold a polluting key (mayHoldPollutingKey). */
  mayPollute: boolean;
}

/** The body's snapshots, all validated, counting a refusal. */
function validate(
  { headers, body, transport, mayPollute }: ReadRequest,
  settings: Settings,
  metrics: FunctionMetrics,
): { snapshots: Snapshot[]; at: string; batch: boolean } {
  let data: unknown = body;
  try {
    if (mayPollute !== false) refusePollutingKeys(body);
    const decoded = decodeBody(transport, headers, body, settings.eventTypes);
    data = decoded.data;
    const snapshots = parseSnapshots(data, decoded.at, settings.batch);
    const batch = isPlainObject(data) && Object.hasOwn(data, 'snapshots');
    refuseTooManyDevices(snapshots, decoded.at, batch, settings.maxDevices);
    if (!settings.allowSimulated) refuseSimulatedCollectors(snapshots, decoded.at, batch);
    return { snapshots, at: decoded.at, batch };
  } catch (error) {
    metrics.snapshots.inc({ result: 'invalid' }, claimedCount(data));
    throw error;
  }
}

/**
 * 422 when a snapshot lists more devices than one node may hold: the controllers would drop
 * it (`too-many-devices`), and one agent must not make every replica keep, and the document
 * publish, thousands of devices. Valid JSON of a valid shape, so not a 400.
 */
function refuseTooManyDevices(snapshots: readonly Snapshot[], at: string, batch: boolean, max: number): void {
  snapshots.forEach((snapshot, i) => {
    const devices = devicesIn(snapshot.payload);
    if (devices <= max) return;
    const pointer = `${at}${batch ? `/snapshots/${i}` : ''}/payload`;
    throw new AppError(
      'too_many_devices',
      `${pointer}: lists ${devices} devices; a node may hold at most ${max} (--max-devices-per-node)`,
      { status: 422 },
    );
  });
}

/** Largest body forwarded as it was sent (forwardedJson). */
export const MAX_FORWARDED_RAW_BYTES = 64 * 1024;
const SNAPSHOT_OPEN = Buffer.from('{"snapshot":');
const SNAPSHOT_CLOSE = Buffer.from('}');

/**
 * The snapshots as the forwarder sends them: `json` the observations `{"snapshot":…}` as JSON
 * array items (no brackets), and `bytes` the size of the snapshots as one JSON array (what
 * the body limit bounds).
 *
 * One plain-JSON snapshot of at most MAX_FORWARDED_RAW_BYTES is forwarded as the bytes it
 * came in (the UTF-8 body just validated): the controllers parse and validate it again with
 * the same contract, so they take exactly the snapshot validated here (unknown keys stripped
 * and defaults filled in there), and the function spares a JSON.stringify and an encoding.
 * The bound keeps an agent from making the function forward padding the schema would have
 * stripped. Batches, CloudEvents and larger bodies are serialised from the validated snapshots.
 */
function forwardedJson(
  snapshots: readonly Snapshot[],
  transport: Transport,
  batch: boolean,
  read: RawRequestBody | undefined,
): { json: ObservationItems; bytes: number } {
  if (
    transport === 'json' &&
    !batch &&
    snapshots.length === 1 &&
    read !== undefined &&
    read.charset === 'utf-8' &&
    read.raw.length <= MAX_FORWARDED_RAW_BYTES
  ) {
    return { json: [SNAPSHOT_OPEN, read.raw, SNAPSHOT_CLOSE], bytes: read.raw.length + 2 };
  }
  return serialise(snapshots);
}

/** The validated snapshots serialised: forwardedJson's `json` and `bytes`. */
function serialise(snapshots: readonly Snapshot[]): { json: string; bytes: number } {
  let json = '';
  let bytes = snapshots.length + 1; // brackets and commas
  for (const snapshot of snapshots) {
    const text = JSON.stringify(snapshot);
    bytes += Buffer.byteLength(text);
    json += `${json === '' ? '' : ','}{"snapshot":${text}}`;
  }
  return { json, bytes };
}

/** The agent's answer from the leader's, checked to answer every snapshot (of `nodes`, in order). */
function answerOf(
  forwarded: ForwardResult,
  nodes: readonly string[],
  metrics: FunctionMetrics,
): IngestResponse {
  if (forwarded.results.length !== nodes.length) {
    throw new Error(`forward returned ${forwarded.results.length} results for ${nodes.length} snapshots`);
  }
  // Never serve an agent another node's entry, whatever went wrong on the way.
  forwarded.results.forEach((result, i) => {
    if (result.node !== nodes[i])
      throw new Error(`forward answered node ${result.node} for a snapshot of ${nodes[i]}`);
  });
  for (const result of forwarded.results)
    metrics.snapshots.inc({ result: result.accepted ? 'accepted' : 'dropped' });
  return { leader: forwarded.leader, term: forwarded.term, results: forwarded.results };
}

/**
 * Answers 408 if the body has not been read whole within `ms`, then closes the connection
 * (the reader, still waiting, then fails on the closed socket and is ignored). Returns the
 * cancel of the deadline.
 */
function startDeadline(
  req: IncomingMessage,
  res: ServerResponse,
  clock: Clock,
  ms: number,
  metrics: FunctionMetrics,
): () => void {
  const cancel = clock.schedule(ms, () => {
    if (res.headersSent) return;
    const failure: HttpFailure = {
      status: 408,
      code: 'body_timeout',
      message: `body not received within ${ms} ms`,
    };
    count(failure, metrics);
    res.setHeader('Connection', 'close');
    res.on('finish', () => req.destroy());
    writeHttpFailure(res, failure, 1);
  });
  res.once('close', cancel);
  return cancel;
}

/** Codes of credential failures (401, 403, and 503 from TokenReview). */
const AUTH_CODES = new Set([
  'missing_token',
  'malformed_token',
  'invalid_token',
  'token_review_unavailable',
  'token_review_busy',
  'forbidden_user',
  'not_node_bound',
  'node_mismatch',
]);

function count(failure: HttpFailure, metrics: FunctionMetrics): void {
  if (AUTH_CODES.has(failure.code)) metrics.authFailures.inc({ reason: failure.code });
  else if ([400, 408, 413, 415, 422].includes(failure.status))
    metrics.validationFailures.inc({ reason: failure.code });
}

/** Retry-After of a 503: the error's own `retryAfterSeconds` (LeaderUnavailableError), else the default. */
function retryAfterOf(error: unknown, fallback: number): number {
  const seconds = (error as { retryAfterSeconds?: unknown } | null)?.retryAfterSeconds;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0
    ? Math.ceil(seconds)
    : fallback;
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`function ${name}: expected a positive integer, got ${value}`);
  }
  return value;
}

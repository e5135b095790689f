/**
 * How one observations request reaches one replica: `POST <url>/v1/observations` with the
 * function's bearer token, answered by the contract's leader or follower response. The
 * default transport keeps a node:http(s) keep-alive Agent per replica: at most
 * `connections` sockets, one request on a socket at a time (so a slow answer never holds the
 * next request up), a connect timeout; the caller bounds each request with its signal.
 *
 * node:http rather than undici: far less garbage promoted per request, so fewer full
 * collections and a lower p99 (why: docs/decisions/0010-forwarder-transport-node-http.md).
 */
import type { Agent, ClientRequest, IncomingMessage } from 'node:http';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import {
  OBSERVATIONS_PATH,
  dropReasonSchema,
  observationsErrorSchema,
  publishedNodeSchema,
  type FollowerObservationResult,
  type LeaderObservationResult,
  type ObservationDropReason,
  type ObservationsResponse,
  type PublishedNode,
} from '../../contracts/index.js';
import { describeError, nodeHttp, nodeHttps } from '../../platform/index.js';
import { ReplicaRequestError } from './errors.js';
import type { Replica } from './replicas.js';

/** One request: a serialised ObservationsRequest body and the bearer token to send it with. */
export interface ReplicaRequest {
  /** The JSON, as UTF-8 bytes (or a string). */
  readonly body: Uint8Array | string;
  readonly token: string;
  /** Aborts the request (its timeout, or the replica leaving). */
  readonly signal: AbortSignal;
}

/** Sends observations to replicas. */
export interface ReplicaTransport {
  /**
   * Posts `request` to `replica` and resolves with its 200 answer, validated against the
   * contract. Rejects with a ReplicaRequestError (its `reason` a metric label) otherwise.
   */
  post(replica: Replica, request: ReplicaRequest): Promise<ObservationsResponse>;
  /** Closes the connections to `replica` (it left); a later post opens new ones. */
  forget(replica: Replica): void;
  /** Closes every connection. */
  close(): Promise<void>;
}

/** Settings of the node:http transport. */
export interface HttpTransportOptions {
  /** Most connections per replica (default 4: a leader request and retries never queue behind each other). */
  connections?: number;
  /** Give up connecting after this long, ms (default 1000). */
  connectTimeoutMs?: number;
  /** Close a connection idle this long, ms (default 30 000; below the controller's server keep-alive). */
  keepAliveTimeoutMs?: number;
  /** Largest answer read, bytes (default 16 MiB: 1000 leader results with their entries). */
  maxAnswerBytes?: number;
}

/** The default transport: a keep-alive node:http(s) Agent per replica URL. */
export function createHttpTransport(options: HttpTransportOptions = {}): ReplicaTransport {
  const endpoints = new Map<string, Endpoint>();
  const limits = {
    connectTimeoutMs: options.connectTimeoutMs ?? 1000,
    maxAnswerBytes: options.maxAnswerBytes ?? 16 * 1024 * 1024,
  };
  // Built once per replica URL, so a post parses no URL and picks no module.
  const endpointOf = (replica: Replica): Endpoint => {
    let endpoint = endpoints.get(replica.url);
    if (!endpoint) {
      const target = new URL(OBSERVATIONS_PATH, replica.url);
      const http = target.protocol === 'https:' ? nodeHttps : nodeHttp;
      const serverName = replica.serverName;
      const agent = new http.Agent({
        keepAlive: true,
        maxSockets: options.connections ?? 4,
        // Idle sockets close after this (the caller's signal bounds a request in flight).
        timeout: options.keepAliveTimeoutMs ?? 30_000,
        scheduling: 'lifo',
        // A replica reached by pod IP shows the Service's certificate: check it for that name.
        ...(serverName
          ? {
              servername: serverName,
              checkServerIdentity: (_host: string, cert: PeerCertificate) =>
                checkServerIdentity(serverName, cert),
            }
          : {}),
      });
      endpoint = { target, agent, request: http.request };
      endpoints.set(replica.url, endpoint);
    }
    return endpoint;
  };
  return {
    async post(replica, request) {
      const { status, text } = await send(replica, endpointOf(replica), request, limits);
      return parseAnswer(replica, status, text);
    },
    forget(replica) {
      endpoints.get(replica.url)?.agent.destroy();
      endpoints.delete(replica.url);
    },
    close() {
      for (const endpoint of endpoints.values()) endpoint.agent.destroy();
      endpoints.clear();
      return Promise.resolve();
    },
  };
}

/** Where one replica's observations go, and the keep-alive Agent that holds its sockets. */
interface Endpoint {
  readonly target: URL;
  readonly agent: Agent;
  readonly request: typeof nodeHttp.request;
}

/** One POST: the answer's status and text, or a ReplicaRequestError of reason `connection`. */
function send(
  replica: Replica,
  endpoint: Endpoint,
  request: ReplicaRequest,
  limits: { connectTimeoutMs: number; maxAnswerBytes: number },
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const fail = (problem: string, error?: unknown): void =>
      reject(new ReplicaRequestError('connection', `${replica.identity}: ${problem}`, { cause: error }));
    const body = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
    const client: ClientRequest = endpoint.request(endpoint.target, {
      method: 'POST',
      agent: endpoint.agent,
      signal: request.signal,
      headers: {
        authorization: `Bearer ${request.token}`,
        'content-type': 'application/json',
        'content-length': body.byteLength,
      },
    });
    let connectTimer: NodeJS.Timeout | undefined;
    client.once('socket', (socket) => {
      if (!socket.connecting) return;
      connectTimer = setTimeout(
        () => client.destroy(new Error(`not connected within ${limits.connectTimeoutMs} ms`)),
        limits.connectTimeoutMs,
      );
      socket.once('connect', () => clearTimeout(connectTimer));
    });
    client.once('error', (error) => {
      clearTimeout(connectTimer);
      fail(describeError(error), error);
    });
    client.once('response', (answer: IncomingMessage) => {
      clearTimeout(connectTimer);
      const length = Number(answer.headers['content-length']);
      if (length > limits.maxAnswerBytes) {
        answer.destroy();
        fail(`answer broken: answer of ${length} bytes is over ${limits.maxAnswerBytes}`);
        return;
      }
      const chunks: Buffer[] = [];
      let received = 0;
      answer.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > limits.maxAnswerBytes) {
          answer.destroy();
          fail(`answer broken: answer over ${limits.maxAnswerBytes} bytes`);
          return;
        }
        chunks.push(chunk);
      });
      answer.once('error', (error) => fail(`answer broken: ${describeError(error)}`, error));
      answer.once('close', () => {
        if (!answer.complete) fail('answer broken: the connection closed before the answer ended');
      });
      answer.once('end', () =>
        resolve({ status: answer.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    client.end(body);
  });
}

/**
 * A replica's answer, checked against the contract (observationsResponseSchema) and, like
 * the schema's output, holding only the contract's keys. Checked by hand rather than with
 * zod: every batch brings two answers (leader and follower) on the hot path, and their
 * envelope and results are flat; an `entry` that is not null (a node's published entry,
 * nested) is still parsed with the contract's schema.
 */
export function parseAnswer(replica: Replica, status: number, text: string): ObservationsResponse {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (status !== 200) {
    const error = observationsErrorSchema.safeParse(json);
    const why = error.success ? `${error.data.error.code}: ${error.data.error.message}` : 'no error body';
    throw new ReplicaRequestError(
      status === 401 || status === 403 ? 'unauthorized' : 'http-error',
      `${replica.identity} answered ${status} (${why})`,
      { status },
    );
  }
  const answer = answerOf(json);
  if (typeof answer === 'string')
    throw new ReplicaRequestError(
      'bad-answer',
      `${replica.identity}: answer is not an observations response (${answer})`,
      { status },
    );
  return answer;
}

/** Every reason a follower or leader may give for not applying an observation. */
const DROP_REASONS: ReadonlySet<unknown> = new Set(dropReasonSchema.options);

/** The answer `json` holds, or what is wrong with it (`path: problem`, `/` for the whole). */
function answerOf(json: unknown): ObservationsResponse | string {
  if (!isObject(json)) return '/: expected object';
  const { leader, identity, results } = json;
  if (typeof leader !== 'boolean') return 'leader: expected boolean';
  if (!isName(identity)) return 'identity: expected a non-empty string';
  if (!Array.isArray(results)) return 'results: expected array';
  const checked: FollowerObservationResult[] = [];
  for (const [i, value] of (results as unknown[]).entries()) {
    const result = resultOf(value);
    if (typeof result === 'string') return `results.${i}.${result}`;
    checked.push(result);
  }
  if (!leader) {
    const leaderIdentity = json.leader_identity;
    if (leaderIdentity !== null && !isName(leaderIdentity))
      return 'leader_identity: expected a non-empty string or null';
    return { leader, identity, leader_identity: leaderIdentity, results: checked };
  }
  const { term } = json;
  if (typeof term !== 'number' || !Number.isSafeInteger(term) || term < 0)
    return 'term: expected a non-negative integer';
  const withEntries: LeaderObservationResult[] = [];
  for (const [i, result] of checked.entries()) {
    const entry = entryOf((results[i] as Record<string, unknown>).entry);
    if (typeof entry === 'string') return `results.${i}.entry${entry}`;
    withEntries.push({ ...result, entry });
  }
  return { leader, identity, term, results: withEntries };
}

/** One result with only the contract's keys (a follower's; a leader's adds `entry`), or what is wrong. */
function resultOf(value: unknown): FollowerObservationResult | string {
  if (!isObject(value)) return ': expected object';
  const { node, accepted, dropped } = value;
  if (!isName(node)) return 'node: expected a non-empty string';
  if (typeof accepted !== 'boolean') return 'accepted: expected boolean';
  if (dropped === undefined) return { node, accepted };
  if (!isDropReason(dropped)) return 'dropped: not a drop reason';
  return { node, accepted, dropped };
}

/** A leader result's `entry`: null (healthy), or a published entry checked with its schema. */
function entryOf(value: unknown): PublishedNode | null | string {
  if (value === null) return null;
  const entry = publishedNodeSchema.safeParse(value);
  if (entry.success) return entry.data;
  const issue = entry.error.issues[0];
  return `${issue?.path.map((key) => `.${String(key)}`).join('') ?? ''}: ${issue?.message ?? 'invalid'}`;
}

function isDropReason(value: unknown): value is ObservationDropReason {
  return DROP_REASONS.has(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isName(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

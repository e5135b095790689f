/**
 * How one observations request reaches one replica: `POST <url>/v1/observations` with the
 * function's bearer token, answered by the contract's leader or follower response. The
 * default transport keeps an undici Pool per replica: keep-alive HTTP/1.1 connections
 * (`pipelining: 1`, i.e. no pipelining: a slow answer never holds the next request up on
 * the same connection), at most `connections` of them, a connect timeout; the caller bounds
 * each request with its signal.
 */
import { Pool } from 'undici';
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

/** Settings of the undici transport. */
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

/** The default transport: undici Pools, one per replica URL. */
export function createHttpTransport(options: HttpTransportOptions = {}): ReplicaTransport {
  const pools = new Map<string, Pool>();
  const maxAnswerBytes = options.maxAnswerBytes ?? 16 * 1024 * 1024;
  const poolOf = (replica: Replica): Pool => {
    let pool = pools.get(replica.url);
    if (!pool) {
      pool = new Pool(replica.url, {
        connections: options.connections ?? 4,
        pipelining: 1,
        connectTimeout: options.connectTimeoutMs ?? 1000,
        keepAliveTimeout: options.keepAliveTimeoutMs ?? 30_000,
        // The caller's signal bounds each request; these only stop a socket hanging forever.
        headersTimeout: 60_000,
        bodyTimeout: 60_000,
      });
      pools.set(replica.url, pool);
    }
    return pool;
  };
  return {
    async post(replica, request) {
      let answer: Awaited<ReturnType<Pool['request']>>;
      try {
        answer = await poolOf(replica).request({
          path: OBSERVATIONS_PATH,
          method: 'POST',
          headers: { authorization: `Bearer ${request.token}`, 'content-type': 'application/json' },
          body: request.body,
          signal: request.signal,
        });
      } catch (error) {
        throw new ReplicaRequestError('connection', `${replica.identity}: ${describe(error)}`, {
          cause: error,
        });
      }
      let text: string;
      try {
        const length = Number(answer.headers['content-length']);
        if (length > maxAnswerBytes) {
          answer.body.destroy();
          throw new Error(`answer of ${length} bytes is over ${maxAnswerBytes}`);
        }
        text = await answer.body.text();
      } catch (error) {
        throw new ReplicaRequestError(
          'connection',
          `${replica.identity}: answer broken: ${describe(error)}`,
          {
            cause: error,
          },
        );
      }
      return parseAnswer(replica, answer.statusCode, text);
    },
    forget(replica) {
      const pool = pools.get(replica.url);
      pools.delete(replica.url);
      void pool?.destroy().catch(() => undefined);
    },
    async close() {
      const all = [...pools.values()];
      pools.clear();
      await Promise.all(all.map((pool) => pool.close().catch(() => undefined)));
    },
  };
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

function describe(error: unknown): string {
  return error instanceof Error ? (error.message.split('\n', 1)[0] ?? error.name) : String(error);
}

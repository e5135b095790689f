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
  observationsErrorSchema,
  observationsResponseSchema,
  type ObservationsResponse,
} from '../../contracts/index.js';
import { ReplicaRequestError } from './errors.js';
import type { Replica } from './replicas.js';

/** One request: a serialised ObservationsRequest body and the bearer token to send it with. */
export interface ReplicaRequest {
  readonly body: string;
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

/** A replica's answer, checked against the contract. */
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
  const parsed = observationsResponseSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ReplicaRequestError(
      'bad-answer',
      `${replica.identity}: answer is not an observations response (${issue?.path.join('.') || '/'}: ${issue?.message})`,
      { status },
    );
  }
  return parsed.data;
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.message.split('\n', 1)[0] ?? error.name) : String(error);
}

/**
 * The agent's node-local HTTP API (port 8081, beside /healthz, /readyz and /metrics of the
 * platform server), for people and for pods on the node without API credentials; its paths
 * and the fault body are the contract's (contracts/agent-local.ts), which the consumer SDK
 * reads with:
 *
 * - `GET /v1/health`: `{"status": "ok"|"degraded", "node", "last_sample", "last_push",
 *   "tool"}`; `degraded` (still 200: the agent itself is alive) when the node's health tool is
 *   failing (the message names the tool's error: the agent is up and sends liveness), or when
 *   the ingest function has not answered for `staleAfterMs`, counted from start before the
 *   first answer.
 * - `GET /v1/fault`: `{"node", "entry", "id", "leader", "term", "updated_at", "stale"}`, the
 *   node's published entry as the function last answered it (null: healthy, or no answer
 *   yet, when `leader` is null too), its event id and when it last changed; `stale` is true
 *   before the first answer and after none for a while (fault-feed.ts): the entry may be old.
 * - `GET /v1/fault/stream`: the same as Server-Sent Events (fault-stream.ts).
 *
 * Unknown paths answer 404, other methods 405 (with Allow), each as one-line JSON
 * `{"error": {"code", "message"}}` like the ingest function's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AGENT_FAULT_PATH,
  AGENT_FAULT_STREAM_PATH,
  AGENT_HEALTH_PATH,
  type AgentFault,
} from '../../contracts/index.js';
import { writeHttpFailure, type Clock, type Logger, type Registry } from '../../platform/index.js';
import type { FaultFeed } from './fault-feed.js';
import { FaultStream } from './fault-stream.js';
import { createLocalMetrics } from './metrics.js';

/** How pushing goes (the sender's `status()` has this shape). */
export interface LocalPushStatus {
  queued: number;
  lastOkAt: string | null;
  lastFailure: { at: string; result: string; message: string } | null;
  consecutiveFailures: number;
}

/** How the node's health tool is doing (the probe's `status()` has this shape). */
export interface LocalToolStatus {
  ok: boolean;
  error: string | null;
  failingSince: string | null;
  lastSuccessAt: string | null;
}

/** What the app is built from. */
export interface LocalAppDeps {
  feed: FaultFeed;
  /** The last snapshot sent, or null. */
  lastSample: () => unknown;
  /** How pushing goes, shown under `last_push` (optional). */
  pushStatus?: () => LocalPushStatus;
  /** How the health tool is doing, shown under `tool` (optional). */
  toolStatus?: () => LocalToolStatus;
  node: string;
  clock: Clock;
  log: Logger;
  registry: Registry;
}

/** How the app serves. */
export interface LocalAppOptions {
  /** A heartbeat comment on every stream this often, ms (default 15 000). */
  heartbeatMs: number;
  /** The reconnection delay suggested to stream clients, ms (default 3000). */
  retryMs?: number;
  /** Most open streams (default 256); 503 beyond. */
  maxClients?: number;
  /** A stream client with more than this unsent when the next write comes is dropped (default 64 KiB). */
  maxBufferedBytes?: number;
  /** `/v1/health` says degraded after this long without an answer, ms (default 30 000). */
  staleAfterMs?: number;
  /** Metric names start `npu_fault_<metricsComponent>_local_` (default `agent`). */
  metricsComponent?: string;
}

/** Defaults of LocalAppOptions. */
export const LOCAL_APP_DEFAULTS = {
  heartbeatMs: 15_000,
  retryMs: 3000,
  maxClients: 256,
  maxBufferedBytes: 64 * 1024,
  staleAfterMs: 30_000,
} as const;

/**
 * The API as a request handler for the platform HTTP server's `handler`. `close()` ends the
 * open streams and refuses new ones: call it when the server starts stopping, or the
 * streams hold its shutdown for the whole grace period.
 */
export interface LocalApp {
  (req: IncomingMessage, res: ServerResponse): void;
  close(): void;
  /** Open streams. */
  readonly streams: number;
}

/** Builds the API. */
export function createLocalApp(deps: LocalAppDeps, options: LocalAppOptions): LocalApp {
  const settings = {
    heartbeatMs: positive(options.heartbeatMs, 'heartbeatMs'),
    retryMs: positive(options.retryMs ?? LOCAL_APP_DEFAULTS.retryMs, 'retryMs'),
    maxClients: positive(options.maxClients ?? LOCAL_APP_DEFAULTS.maxClients, 'maxClients'),
    maxBufferedBytes: positive(
      options.maxBufferedBytes ?? LOCAL_APP_DEFAULTS.maxBufferedBytes,
      'maxBufferedBytes',
    ),
    staleAfterMs: positive(options.staleAfterMs ?? LOCAL_APP_DEFAULTS.staleAfterMs, 'staleAfterMs'),
  };
  const { log } = deps;
  // Read at scrape time only, once `faults` exists.
  const metrics = createLocalMetrics(deps.registry, options.metricsComponent ?? 'agent', () => faults.size);
  // The contract's fields, each filled in (the entry is the function's answer, kept as sent).
  const faultBody = (feed: FaultFeed): Record<keyof AgentFault, unknown> => {
    const state = feed.current();
    return {
      node: deps.node,
      entry: state.entry ?? null,
      id: state.id,
      leader: state.leader,
      term: state.term,
      updated_at: state.at,
      stale: state.stale,
    };
  };
  const faults = new FaultStream(
    { feed: deps.feed, body: faultBody, clock: deps.clock, log, metrics },
    settings,
  );
  const startedAt = deps.clock.now();

  const health = (): object => {
    const state = deps.feed.current();
    const push = deps.pushStatus?.();
    const okAt = push?.lastOkAt ?? state.answeredAt;
    const since = okAt === null ? startedAt : Date.parse(okAt);
    const silentMs = deps.clock.now() - since;
    const tool = deps.toolStatus?.();
    const pushSilent = silentMs > settings.staleAfterMs;
    // Each side that fails is named; the tool first, as the node's own news.
    const problems = [
      ...(tool !== undefined && tool.error !== null
        ? [
            `the health tool is failing since ${tool.failingSince ?? 'start'}: ${tool.error}` +
              (pushSilent ? '' : '; the agent is up and its snapshots say so'),
          ]
        : []),
      ...(pushSilent
        ? [
            `no answer from the ingest function for ${Math.round(silentMs / 1000)} s${okAt === null ? ' (none since start)' : ''}`,
          ]
        : []),
    ];
    const message = problems.length === 0 ? undefined : problems.join('; and ');
    return {
      status: message === undefined ? 'ok' : 'degraded',
      ...(message === undefined ? {} : { message }),
      node: deps.node,
      last_sample: deps.lastSample() ?? null,
      last_push: {
        ok_at: okAt,
        leader: state.leader,
        term: state.term,
        ...(push
          ? {
              queued: push.queued,
              consecutive_failures: push.consecutiveFailures,
              last_failure: push.lastFailure,
            }
          : {}),
      },
      ...(tool === undefined
        ? {}
        : {
            tool: {
              ok: tool.ok,
              error: tool.error,
              failing_since: tool.failingSince,
              last_success_at: tool.lastSuccessAt,
            },
          }),
    };
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = [AGENT_HEALTH_PATH, AGENT_FAULT_PATH, AGENT_FAULT_STREAM_PATH].includes(url.pathname)
      ? url.pathname
      : 'other';
    res.once('finish', () => {
      // An open stream was counted as it opened; it finishes only when it ends.
      if (path !== AGENT_FAULT_STREAM_PATH || res.statusCode !== 200)
        metrics.requests.inc({ path, code: String(res.statusCode) });
    });
    if (path === 'other') return fail(res, 404, 'not_found', 'not found');
    const allow = path === AGENT_FAULT_STREAM_PATH ? 'GET' : 'GET, HEAD';
    if (!allow.split(', ').includes(req.method ?? '')) {
      return fail(res, 405, 'method_not_allowed', `${path} accepts only ${allow}`, allow);
    }
    if (path === AGENT_FAULT_STREAM_PATH) {
      faults.open(req, res, lastEventIdOf(req, url));
      if (res.statusCode === 200) metrics.requests.inc({ path, code: '200' });
      return;
    }
    sendJson(res, path === AGENT_HEALTH_PATH ? health() : faultBody(deps.feed));
  };
  return Object.defineProperties(handler, {
    close: { value: () => faults.close() },
    streams: { get: () => faults.size },
  }) as LocalApp;
}

/** The id a client resumes from: the Last-Event-ID header (EventSource's), else `?lastEventId=`. */
function lastEventIdOf(req: IncomingMessage, url: URL): string | undefined {
  const header = req.headers['last-event-id'];
  if (typeof header === 'string') return header;
  return url.searchParams.get('lastEventId') ?? undefined;
}

function sendJson(res: ServerResponse, body: object): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.end(JSON.stringify(body));
}

function fail(res: ServerResponse, status: number, code: string, message: string, allow?: string): void {
  writeHttpFailure(res, { status, code, message }, 1, allow);
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`local api ${name}: expected a positive integer, got ${value}`);
  return value;
}

/**
 * The agent's node-local stream (`GET /v1/fault/stream` on port 8081, agent/local; the
 * contract is contracts/agent-local.ts) as a transport. Each `fault` event carries `{node,
 * entry, id, leader, term, updated_at, stale}` (entry null: healthy; `stale` true: the agent has heard nothing from the ingest function
 * lately, so its entry is old); comments are heartbeats. The stream is resumed with the last event id
 * (`Last-Event-ID`), so a reconnect to the same agent sends nothing until the next change
 * and one to a restarted agent sends its state at once. Reconnects back off exponentially
 * from the server's `retry:` (with jitter, capped); a stream silent for `idleTimeoutMs`
 * (no event, no heartbeat: a dead peer TCP does not notice) is cut and reconnected.
 */
import { AGENT_FAULT_EVENT, AGENT_FAULT_STREAM_PATH, AGENT_LOCAL_PORT } from '../contracts/index.js';
import { parseEntry } from './document.js';
import type { Transport, TransportSink } from './follower.js';
import { FollowError, type ConsumerClock } from './types.js';

/**
 * The agent's node-local Service (k8s/agent/service.yaml, `internalTrafficPolicy: Local`): from
 * a pod it reaches the agent on the pod's own node, with no host port open.
 */
export const AGENT_SERVICE_URL = `http://npu-fault-agent.npu-fault-agent.svc:${AGENT_LOCAL_PORT}`;

/** Where the agent is and how to reconnect. */
export interface SseTransportOptions {
  /**
   * The agent's base URL (default `$NPU_FAULT_AGENT_URL`, else AGENT_SERVICE_URL; `http://$NODE_IP:8081`
   * needs the agent's host port, k8s/agent/host-port).
   */
  url?: string;
  /** First reconnect delay before the server suggests one, ms (default 500). */
  initialBackoffMs?: number;
  /** Longest reconnect delay, ms (default 30 000). */
  maxBackoffMs?: number;
  /** Cut a stream silent this long, ms (default 45 000: three of the agent's 15 s heartbeats). */
  idleTimeoutMs?: number;
  /** Environment for the default URL (default process.env). */
  env?: Record<string, string | undefined>;
}

export const SSE_DEFAULTS = { initialBackoffMs: 500, maxBackoffMs: 30_000, idleTimeoutMs: 45_000 } as const;

/** One message block of an event stream. */
export interface SseMessage {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
  comment?: boolean;
}

/** Splits event-stream text into message blocks; keeps an incomplete tail for the next chunk. */
export function createSseParser(deliver: (message: SseMessage) => void): (chunk: string) => void {
  let buffer = '';
  return (chunk) => {
    buffer += chunk.replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      deliver(parseBlock(block));
    }
  };
}

function parseBlock(block: string): SseMessage {
  const message: SseMessage = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      message.comment = true;
      continue;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') message.data = message.data === undefined ? value : `${message.data}\n${value}`;
    else if (field === 'id') message.id = value;
    else if (field === 'event') message.event = value;
    else if (field === 'retry' && /^\d+$/.test(value)) message.retry = Number(value);
  }
  return message;
}

/** The agent's base URL: the options', else `$NPU_FAULT_AGENT_URL`, else the node-local Service. */
export function agentUrl(options: SseTransportOptions): string {
  const url = options.url ?? (options.env ?? process.env).NPU_FAULT_AGENT_URL ?? AGENT_SERVICE_URL;
  if (!/^https?:\/\/[^/]+/.test(url))
    throw new FollowError(
      'config',
      `sse url: expected http(s)://host[:port], got ${JSON.stringify(url.slice(0, 100))}`,
    );
  return url.replace(/\/+$/, '');
}

/** Follows the agent's stream. */
export function sseTransport(options: SseTransportOptions, clock: ConsumerClock): Transport {
  const url = `${agentUrl(options)}${AGENT_FAULT_STREAM_PATH}`;
  const maxBackoffMs = options.maxBackoffMs ?? SSE_DEFAULTS.maxBackoffMs;
  const idleTimeoutMs = options.idleTimeoutMs ?? SSE_DEFAULTS.idleTimeoutMs;
  let baseBackoffMs = options.initialBackoffMs ?? SSE_DEFAULTS.initialBackoffMs;
  const counts = { connects: 0, events: 0, heartbeats: 0, errors: 0 };
  let lastEventId: string | undefined;
  let stopped = false;
  let abort: AbortController | undefined;
  let cancelWait: (() => void) | undefined;
  let wake: (() => void) | undefined;
  let loop: Promise<void> = Promise.resolve();

  const wait = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      wake = resolve;
      cancelWait = clock.schedule(ms, resolve);
    });

  const connectOnce = async (sink: TransportSink): Promise<boolean> => {
    abort = new AbortController();
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    let cancelIdle: (() => void) | undefined;
    const controller = abort;
    const armIdle = (): void => {
      cancelIdle?.();
      cancelIdle = clock.schedule(idleTimeoutMs, () =>
        controller.abort(new Error(`silent for ${idleTimeoutMs} ms`)),
      );
    };
    let delivered = false;
    try {
      armIdle();
      const response = await fetch(url, { headers, signal: controller.signal });
      counts.connects += 1;
      if (response.status !== 200 || !response.body) {
        await response.body?.cancel().catch(() => undefined);
        throw new FollowError('http', `${url}: HTTP ${response.status}`);
      }
      const parse = createSseParser((message) => {
        delivered = true;
        if (message.retry !== undefined) baseBackoffMs = message.retry;
        if (message.comment && message.data === undefined) {
          counts.heartbeats += 1;
          sink.alive();
          return;
        }
        if (message.event !== AGENT_FAULT_EVENT || message.data === undefined) return;
        handleEvent(sink, message);
      });
      const decoder = new TextDecoder();
      for await (const chunk of response.body) {
        armIdle();
        parse(decoder.decode(chunk, { stream: true }));
      }
      if (!stopped) throw new FollowError('connection', `${url}: the stream ended`);
    } catch (error) {
      if (stopped) return delivered;
      counts.errors += 1;
      sink.error(
        error instanceof FollowError
          ? error
          : new FollowError('connection', `${url}: ${describe(error, controller.signal)}`, { cause: error }),
      );
    } finally {
      cancelIdle?.();
    }
    return delivered;
  };

  const handleEvent = (sink: TransportSink, message: SseMessage): void => {
    let body: {
      node?: unknown;
      entry?: unknown;
      leader?: unknown;
      term?: unknown;
      updated_at?: unknown;
      stale?: unknown;
    };
    try {
      body = JSON.parse(message.data ?? '') as typeof body;
    } catch {
      sink.error(new FollowError('invalid', `${url}: an event's data is not JSON`));
      return;
    }
    const entry = parseEntry(body.entry);
    if (entry instanceof FollowError) return sink.error(entry);
    if (typeof body.node !== 'string')
      return sink.error(new FollowError('invalid', `${url}: event has no node`));
    if (message.id !== undefined) lastEventId = message.id;
    counts.events += 1;
    sink.entry({
      node: body.node,
      entry,
      leader: typeof body.leader === 'string' ? body.leader : null,
      term: typeof body.term === 'number' ? body.term : null,
      updatedAt: typeof body.updated_at === 'string' ? body.updated_at : null,
      stale: body.stale === true,
    });
  };

  return {
    kind: 'sse',
    start(sink) {
      loop = (async () => {
        let attempt = 0;
        while (!stopped) {
          const delivered = await connectOnce(sink);
          if (stopped) break;
          attempt = delivered ? 0 : attempt + 1;
          const ceiling = Math.min(maxBackoffMs, baseBackoffMs * 2 ** attempt);
          // Full jitter on the upper half, so agents restarting together are not hit at once.
          await wait(ceiling / 2 + Math.random() * (ceiling / 2));
        }
      })();
    },
    async stop() {
      stopped = true;
      abort?.abort();
      cancelWait?.();
      wake?.();
      await loop;
    },
    stats: () => ({ ...counts }),
  };
}

function describe(error: unknown, signal: AbortSignal): string {
  if (signal.aborted && signal.reason instanceof Error) return signal.reason.message;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message ?? String(error);
}

/**
 * An API watch of the status ConfigMap as a transport, for pods whose ServiceAccount may
 * `get/list/watch` it (a Role naming the ConfigMap is enough). Plain HTTPS (undici fetch),
 * no client library:
 *
 * 1. list `/api/v1/namespaces/<ns>/configmaps?fieldSelector=metadata.name=<name>`: the
 *    current document and the list's resourceVersion;
 * 2. watch from that resourceVersion (bookmarks on); every ADDED/MODIFIED is a document,
 *    every event and bookmark moves the resume point;
 * 3. when the server ends the watch (its timeout) or the connection drops, watch again from
 *    the resume point, missing nothing; on 410 Gone (the resume point was compacted away) list
 *    again. Failures back off exponentially (with jitter, capped).
 *
 * In-cluster credentials are re-read at every request: projected tokens rotate.
 */
import { readFile } from 'node:fs/promises';
import { Agent, fetch, type Response } from 'undici';
import {
  FAULT_DATA_KEY,
  STATUS_CONFIGMAP_NAME,
  STATUS_NAMESPACE,
  VERSION_DATA_KEY,
} from '../contracts/index.js';
import { parseDocument } from './document.js';
import type { Transport, TransportSink } from './follower.js';
import { FollowError, type ConsumerClock } from './types.js';

/** A watch shorter than this that ends by itself counts as a failure. */
const MIN_WATCH_MS = 1000;
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** How to reach the apiserver: in-cluster (the pod's ServiceAccount) or explicit. */
export type WatchCredentials =
  | 'in-cluster'
  | {
      /** e.g. https://10.0.0.1:443 */
      server: string;
      /** A bearer token, or a function returning the current one. */
      token: string | (() => string | Promise<string>);
      /** PEM of the CA that signed the apiserver's certificate (default: the system's). */
      ca?: string;
    };

/** What to watch and how. */
export interface WatchTransportOptions {
  credentials?: WatchCredentials;
  /** Default `ai-infra`; a pod following its namespace's mirror names its own namespace. */
  namespace?: string;
  /** Default `npu-fault-status-v3`. */
  name?: string;
  /** Ask the server to end each watch after this many seconds (default 300); it is resumed. */
  timeoutSeconds?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Environment for in-cluster credentials (default process.env). */
  env?: Record<string, string | undefined>;
}

export const WATCH_DEFAULTS = { timeoutSeconds: 300, initialBackoffMs: 250, maxBackoffMs: 30_000 } as const;

interface ConfigMapObject {
  metadata?: { name?: string; resourceVersion?: string };
  data?: Record<string, string>;
}

interface WatchEvent {
  type?: string;
  object?: ConfigMapObject & { code?: number; message?: string };
}

interface Connection {
  server: string;
  token: string;
  dispatcher: Agent;
}

/** Follows the ConfigMap through the API. */
export function watchTransport(options: WatchTransportOptions, clock: ConsumerClock): Transport {
  const namespace = options.namespace ?? STATUS_NAMESPACE;
  const name = options.name ?? STATUS_CONFIGMAP_NAME;
  const timeoutSeconds = options.timeoutSeconds ?? WATCH_DEFAULTS.timeoutSeconds;
  const initialBackoffMs = options.initialBackoffMs ?? WATCH_DEFAULTS.initialBackoffMs;
  const maxBackoffMs = options.maxBackoffMs ?? WATCH_DEFAULTS.maxBackoffMs;
  const credentials = options.credentials ?? 'in-cluster';
  const env = options.env ?? process.env;
  const listPath = `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`;
  const selector = `fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`;
  const where = `configmap ${namespace}/${name}`;
  const counts = { lists: 0, watches: 0, relists: 0, resumes: 0, events: 0, errors: 0 };
  const dispatchers = new Map<string, Agent>();
  let resourceVersion: string | undefined;
  let lastText: string | undefined;
  let stopped = false;
  let abort: AbortController | undefined;
  let cancelWait: (() => void) | undefined;
  let wake: (() => void) | undefined;
  let loop: Promise<void> = Promise.resolve();

  const connection = async (): Promise<Connection> => {
    if (credentials === 'in-cluster') {
      const host = env.KUBERNETES_SERVICE_HOST;
      const port = env.KUBERNETES_SERVICE_PORT ?? '443';
      if (!host)
        throw new FollowError(
          'config',
          'watch credentials: not in a cluster ($KUBERNETES_SERVICE_HOST unset)',
        );
      const [token, ca] = await Promise.all([
        readFile(`${SERVICE_ACCOUNT_DIR}/token`, 'utf8'),
        readFile(`${SERVICE_ACCOUNT_DIR}/ca.crt`, 'utf8'),
      ]);
      return {
        server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
        token: token.trim(),
        dispatcher: agentFor(ca),
      };
    }
    const token = typeof credentials.token === 'function' ? await credentials.token() : credentials.token;
    return { server: credentials.server.replace(/\/+$/, ''), token, dispatcher: agentFor(credentials.ca) };
  };

  const agentFor = (ca: string | undefined): Agent => {
    const cacheKey = ca ?? '';
    let agent = dispatchers.get(cacheKey);
    if (!agent) {
      agent = new Agent(ca ? { connect: { ca } } : {});
      dispatchers.set(cacheKey, agent);
    }
    return agent;
  };

  const get = async (query: string): Promise<Response> => {
    const { server, token, dispatcher } = await connection();
    abort = new AbortController();
    return fetch(`${server}${listPath}?${query}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      signal: abort.signal,
      dispatcher,
    });
  };

  const deliver = (sink: TransportSink, object: ConfigMapObject): void => {
    const text = object.data?.[FAULT_DATA_KEY];
    if (text === undefined)
      return sink.error(new FollowError('missing', `${where}: no key ${FAULT_DATA_KEY}`));
    if (text === lastText) return;
    const parsed = parseDocument(text, object.data?.[VERSION_DATA_KEY]);
    if (parsed instanceof FollowError) return sink.error(parsed);
    lastText = text;
    sink.document(parsed);
  };

  /** Lists; returns the list's resourceVersion. */
  const list = async (sink: TransportSink): Promise<string> => {
    counts.lists += 1;
    const response = await get(selector);
    if (response.status !== 200) throw await httpError(response, `listing ${where}`);
    const body = JSON.parse(await readCapped(response, `listing ${where}`)) as {
      metadata?: { resourceVersion?: string };
      items?: ConfigMapObject[];
    };
    const item = body.items?.[0];
    if (item) deliver(sink, item);
    else sink.error(new FollowError('missing', `${where}: not found`));
    const version = body.metadata?.resourceVersion;
    if (!version) throw new FollowError('invalid', `listing ${where}: no metadata.resourceVersion`);
    return version;
  };

  /** Watches from `resourceVersion`; returns 'gone' on 410, 'ended' when the server ended it. */
  const watchOnce = async (sink: TransportSink, from: string): Promise<'gone' | 'ended'> => {
    counts.watches += 1;
    const query = `${selector}&watch=true&allowWatchBookmarks=true&timeoutSeconds=${timeoutSeconds}&resourceVersion=${encodeURIComponent(from)}`;
    const response = await get(query);
    if (response.status === 410) {
      await response.body?.cancel().catch(() => undefined);
      return 'gone';
    }
    if (response.status !== 200 || !response.body) throw await httpError(response, `watching ${where}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk, { stream: true });
      if (buffer.length > MAX_ANSWER_BYTES)
        throw new FollowError('invalid', `watching ${where}: an event over ${MAX_ANSWER_BYTES} bytes`);
      let end: number;
      while ((end = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, end).trim();
        buffer = buffer.slice(end + 1);
        // Leaving the loop cancels the body, closing this watch.
        if (line && handle(sink, JSON.parse(line) as WatchEvent) === 'gone') return 'gone';
      }
    }
    return 'ended';
  };

  const handle = (sink: TransportSink, event: WatchEvent): 'gone' | undefined => {
    counts.events += 1;
    const object = event.object;
    if (event.type === 'ERROR') {
      if (object?.code === 410) return 'gone';
      sink.error(new FollowError('http', `watching ${where}: ${object?.message ?? 'error event'}`));
      return undefined;
    }
    const version = object?.metadata?.resourceVersion;
    if (version) resourceVersion = version;
    if (!object || event.type === 'BOOKMARK') return undefined;
    if (event.type === 'DELETED') {
      lastText = undefined;
      sink.error(new FollowError('missing', `${where}: deleted`));
      return undefined;
    }
    deliver(sink, object);
    return undefined;
  };

  const wait = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      wake = resolve;
      cancelWait = clock.schedule(ms, resolve);
    });

  const run = async (sink: TransportSink): Promise<void> => {
    let failures = 0;
    while (!stopped) {
      try {
        if (resourceVersion === undefined) resourceVersion = await list(sink);
        const began = clock.now();
        const outcome = await watchOnce(sink, resourceVersion);
        if (outcome === 'gone') {
          counts.relists += 1;
          resourceVersion = undefined;
        } else counts.resumes += 1;
        // A watch ended within a second (a proxy cutting it) backs off, so it cannot spin.
        if (clock.now() - began >= MIN_WATCH_MS || outcome === 'gone') {
          failures = 0;
          continue;
        }
        failures += 1;
      } catch (error) {
        if (stopped) break;
        counts.errors += 1;
        failures += 1;
        sink.error(
          error instanceof FollowError
            ? error
            : new FollowError('connection', `${where}: ${describe(error)}`, { cause: error }),
        );
      }
      const ceiling = Math.min(maxBackoffMs, initialBackoffMs * 2 ** (failures - 1));
      await wait(ceiling / 2 + Math.random() * (ceiling / 2));
    }
  };

  return {
    kind: 'watch',
    start(sink) {
      loop = run(sink);
    },
    async stop() {
      stopped = true;
      abort?.abort();
      cancelWait?.();
      wake?.();
      await loop;
      await Promise.all([...dispatchers.values()].map((agent) => agent.close().catch(() => undefined)));
    },
    stats: () => ({ ...counts }),
  };
}

/** The largest list answer or watch event read: a ConfigMap is at most 1 MiB, escaped a few times over. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** The body as text, of at most MAX_ANSWER_BYTES (a broken or hostile peer cannot grow the pod's memory). */
async function readCapped(response: Response, what: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  let received = 0;
  for await (const chunk of response.body ?? []) {
    received += chunk.byteLength;
    if (received > MAX_ANSWER_BYTES)
      throw new FollowError('invalid', `${what}: an answer over ${MAX_ANSWER_BYTES} bytes`);
    chunks.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

async function httpError(response: Response, what: string): Promise<FollowError> {
  const text = await response.text().catch(() => '');
  let message = text.slice(0, 200);
  try {
    message = (JSON.parse(text) as { message?: string }).message ?? message;
  } catch {
    // not a Status object: keep the text
  }
  return new FollowError('http', `${what}: HTTP ${response.status}${message ? ` (${message})` : ''}`);
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message ?? String(error);
}

/**
 * The HTTP server every component runs (node:http), as a Runnable:
 *
 * - `GET /healthz`: 200 `ok` while the process serves requests (liveness).
 * - `GET /readyz`: 200 `ok` when every named ready check passes, else 503 naming the failing
 *   ones; `?verbose` lists each check with its reason (as kube-apiserver does). A check
 *   that throws or hangs fails; it never takes the server down.
 * - `GET /metrics`: the component's prom-client Registry (404 when none was given).
 * - any other path: the application handler (an express app, say), else 404.
 *
 * On abort it stops accepting connections, lets requests in flight finish (their
 * connections then close, keep-alive or not), closes idle keep-alive connections at once,
 * and force-closes whatever is left after the grace period.
 *
 * **Limits** (ListenerLimits, every listener): a client must send its headers within 10 s and
 * its whole request within 30 s (Node's own defaults are 60 s and 300 s), headers of at most
 * 16 KiB, and idle keep-alive connections close after 5 s; at most `maxConnections` (1,024)
 * are open at once, and any beyond are closed as they arrive. So half-sent requests hold a
 * socket for seconds, not minutes, and a flood of them is bounded in memory. A component with
 * long-lived responses (the agent's SSE streams) is unaffected: these bound the request, not
 * the response.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { nodeHttp, nodeHttps } from './node-http.js';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { systemClock, type Clock } from './clock.js';
import { describeError, toHttpResponse } from './errors.js';
import { LinkedSet } from './linked-set.js';
import type { Logger } from './logger.js';
import type { Runnable } from './runnable.js';
import { readTlsPair, watchTlsPair, type TlsFiles } from './tls-files.js';

/** Ready when it returns `true`; `false` or a string (the reason) means not ready; a throw too. */
export type ReadyCheck = () => boolean | string | Promise<boolean | string>;

/** Handles every request outside the probe and metrics paths (an express app fits). */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => unknown;

/** What a listener allows a client (see the file comment). */
export interface ListenerLimits {
  /** The whole request head must arrive within this (ms). */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this (ms). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this (ms). */
  keepAliveTimeoutMs: number;
  /** Most bytes of request headers. */
  maxHeaderBytes: number;
  /** Most connections open at once; more are closed as they arrive. */
  maxConnections: number;
}

/** The limits every listener has unless its component says otherwise. */
export const DEFAULT_LISTENER_LIMITS: Readonly<ListenerLimits> = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxHeaderBytes: 16 * 1024,
  maxConnections: 1024,
});

/** How to build the server. */
export interface HttpServerOptions {
  /** Its name as a Runnable (default `http`). */
  name?: string;
  /** Interface to listen on (default: all of them, as Node chooses: `::` or `0.0.0.0`). */
  host?: string;
  /** Port to listen on; 0 picks a free one (read it from `listening`). */
  port: number;
  log: Logger;
  /** Served on /metrics. */
  registry?: Registry;
  /** Serves every other path. */
  handler?: RequestHandler;
  /**
   * How long requests in flight get to finish once stopping begins (default 10 s); must be
   * below the runAll grace period, so the server is gone before the process is.
   */
  gracePeriodMs?: number;
  /**
   * How long one ready check may take (default 1 s, kubelet's default probe timeout) before
   * it counts as failed, so a hung check answers 503 with a reason instead of hanging the probe.
   */
  readyCheckTimeoutMs?: number;
  /** Overrides of DEFAULT_LISTENER_LIMITS. */
  limits?: Partial<ListenerLimits>;
  /** Serve HTTPS with this certificate and key, re-read as they are renewed (tls-files.ts). */
  tls?: TlsFiles;
  clock?: Clock;
}

/** The component HTTP server. */
export interface HttpServer extends Runnable {
  /** Resolves with the bound address once listening; rejects when it could not listen. */
  readonly listening: Promise<AddressInfo>;
  /** Adds a check to /readyz; names are unique (`informer-synced`, `leader-lease`). */
  addReadyCheck(name: string, check: ReadyCheck): void;
}

/** Builds the server; it listens when started. */
export function createHttpServer(options: HttpServerOptions): HttpServer {
  return new ComponentServer(options);
}

/** `host:port`, `:port` (all interfaces) or `[v6]:port`, as in `--listen 0.0.0.0:8080`. */
export const listenAddressSchema = z.string().transform((text, ctx) => {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[3]);
  if (!match || port > 65535) {
    ctx.addIssue({ code: 'custom', message: `expected host:port, :port or [ipv6]:port, got "${text}"` });
    return z.NEVER;
  }
  const host = match[1] ?? match[2];
  return { host: host ? host : undefined, port };
});

/** A parsed listen address. */
export type ListenAddress = z.output<typeof listenAddressSchema>;

const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

class ComponentServer implements HttpServer {
  readonly name: string;
  readonly listening: Promise<AddressInfo>;
  readonly #options: HttpServerOptions;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #checks = new Map<string, ReadyCheck>();
  /** Responses under way (a LinkedSet, not a Set: see linked-set.ts). */
  readonly #inFlight = new LinkedSet<ServerResponse>();
  #stopping = false;
  #server: Server | undefined;
  /** The last /readyz verdict, so changes are logged once rather than on every probe. */
  #lastFailing = '';
  #resolveListening!: (address: AddressInfo) => void;
  #rejectListening!: (error: unknown) => void;

  constructor(options: HttpServerOptions) {
    this.name = options.name ?? 'http';
    this.#options = options;
    this.#log = options.log.child({ server: this.name });
    this.#clock = options.clock ?? systemClock;
    this.listening = new Promise((resolve, reject) => {
      this.#resolveListening = resolve;
      this.#rejectListening = reject;
    });
    this.listening.catch(() => undefined); // start() rejects too; an unread `listening` must not crash
  }

  addReadyCheck(name: string, check: ReadyCheck): void {
    if (this.#checks.has(name)) throw new RangeError(`ready check "${name}" is already added`);
    this.#checks.set(name, check);
  }

  async start(signal: AbortSignal): Promise<void> {
    if (this.#server) throw new Error(`${this.name}: already started`);
    if (signal.aborted) {
      this.#rejectListening(new Error(`${this.name}: stopped before listening`));
      return;
    }
    const limits = listenerLimits(this.#options.limits);
    const serverOptions = {
      maxHeaderSize: limits.maxHeaderBytes,
      // How often Node checks the two timeouts (its default, 30 s, would let them run late by that).
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
    };
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => this.#onRequest(req, res);
    let stopWatching = (): void => undefined;
    let server: Server;
    const tls = this.#options.tls;
    if (tls) {
      let pair;
      try {
        pair = readTlsPair(tls);
      } catch (error) {
        this.#rejectListening(error);
        throw error;
      }
      const secure = nodeHttps.createServer(
        // A handshake is part of the request's head: bounded like the headers (Node's own is 120 s).
        { ...serverOptions, ...pair, minVersion: 'TLSv1.2', handshakeTimeout: limits.headersTimeoutMs },
        onRequest,
      );
      // A handshake that fails (a plain-HTTP client, a client that distrusts us) is the client's
      // problem: counted by the client, logged here at debug only (it can come in floods).
      secure.on('tlsClientError', (error) => this.#log.debug({ err: error }, 'TLS handshake failed'));
      stopWatching = watchTlsPair(
        tls,
        pair,
        this.#clock,
        (next) => {
          secure.setSecureContext({ ...next, minVersion: 'TLSv1.2' });
          this.#log.info({ certFile: tls.certFile }, 'TLS certificate reloaded');
        },
        (error) => this.#log.warn({ err: error }, 'TLS certificate not reloaded; the previous one stays'),
      );
      server = secure;
    } else server = nodeHttp.createServer(serverOptions, onRequest);
    server.headersTimeout = limits.headersTimeoutMs;
    server.requestTimeout = limits.requestTimeoutMs;
    server.keepAliveTimeout = limits.keepAliveTimeoutMs;
    server.maxConnections = limits.maxConnections;
    this.#server = server;
    try {
      await listen(server, this.#options.host, this.#options.port);
    } catch (error) {
      stopWatching();
      this.#rejectListening(error);
      throw error;
    }
    const address = server.address() as AddressInfo;
    this.#log.info({ address: address.address, port: address.port }, 'listening');
    this.#resolveListening(address);
    let failure: Error | undefined;
    const failed = new Promise<void>((resolve) =>
      server.once('error', (error) => resolve(void (failure = error))),
    );
    await Promise.race([aborted(signal), failed]);
    stopWatching();
    await this.#stop(server);
    if (failure) throw failure;
  }

  async #stop(server: Server): Promise<void> {
    this.#stopping = true;
    for (const res of this.#inFlight.values()) if (!res.headersSent) res.setHeader('Connection', 'close');
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const grace = this.#options.gracePeriodMs ?? 10_000;
    const cancel = this.#clock.schedule(grace, () => {
      this.#log.warn(
        { inFlight: this.#inFlight.size, gracePeriodMs: grace },
        'closing connections still open',
      );
      server.closeAllConnections();
    });
    await closed;
    cancel();
    this.#log.info('stopped');
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    const done = this.#inFlight.add(res);
    res.on('close', () => {
      done();
      // A keep-alive connection that just finished its last response is idle now: close it.
      if (this.#stopping) setImmediate(() => this.#server?.closeIdleConnections());
    });
    if (this.#stopping) res.setHeader('Connection', 'close'); // a request pipelined behind one in flight
    this.#route(req, res).catch((error: unknown) => this.#fail(res, error));
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!PROBE_PATHS.has(url.pathname)) {
      if (this.#options.handler) await this.#options.handler(req, res);
      else sendJson(res, 404, { error: 'not found' });
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      sendJson(res, 405, { error: 'method not allowed' });
      return;
    }
    if (url.pathname === '/healthz') sendText(res, 200, 'ok\n');
    else if (url.pathname === '/readyz') await this.#ready(res, url.searchParams.has('verbose'));
    else await this.#metrics(res);
  }

  async #ready(res: ServerResponse, verbose: boolean): Promise<void> {
    const results = await Promise.all(
      [...this.#checks].map(async ([name, check]): Promise<[string, string | undefined]> => [
        name,
        await this.#runCheck(check),
      ]),
    );
    const failing = results.filter(([, reason]) => reason !== undefined);
    this.#logReadiness(failing);
    const lines = results
      .filter(([, reason]) => verbose || reason !== undefined)
      .map(([name, reason]) =>
        reason === undefined ? `[+]${name} ok` : `[-]${name} failed${verbose ? `: ${reason}` : ''}`,
      );
    if (failing.length === 0)
      sendText(res, 200, verbose ? `${lines.join('\n')}\nreadyz check passed\n` : 'ok\n');
    else sendText(res, 503, `${lines.join('\n')}\nreadyz check failed\n`);
  }

  /** Runs one check: undefined when it passes, else the one-line reason it does not. */
  async #runCheck(check: ReadyCheck): Promise<string | undefined> {
    const timeoutMs = this.#options.readyCheckTimeoutMs ?? 1000;
    let cancel = (): void => undefined;
    const timedOut = new Promise<string>((resolve) => {
      cancel = this.#clock.schedule(timeoutMs, () => resolve(`timed out after ${timeoutMs} ms`));
    });
    try {
      const verdict = await Promise.race([Promise.resolve().then(check), timedOut]);
      if (verdict === true) return undefined;
      return verdict === false || verdict === '' ? 'not ready' : describeError(verdict);
    } catch (error) {
      return describeError(error);
    } finally {
      cancel();
    }
  }

  #logReadiness(failing: [string, string | undefined][]): void {
    const key = failing.map(([name, reason]) => `${name}:${reason}`).join('\n');
    if (key === this.#lastFailing) return;
    this.#lastFailing = key;
    if (failing.length === 0) this.#log.info('ready');
    else this.#log.warn({ failing: Object.fromEntries(failing) }, 'not ready');
  }

  async #metrics(res: ServerResponse): Promise<void> {
    const registry = this.#options.registry;
    if (!registry) {
      sendJson(res, 404, { error: 'not found' });
      return;
    }
    const body = await registry.metrics();
    res.setHeader('Content-Type', registry.contentType);
    res.statusCode = 200;
    res.end(body);
  }

  /** A request whose handling threw: log it, answer it if nothing was sent yet. */
  #fail(res: ServerResponse, error: unknown): void {
    this.#log.error({ err: error }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const { status, body } = toHttpResponse(error);
    sendJson(res, status, body);
  }
}

/** The limits with `overrides`, checked: positive integers, and headers due before the whole request. */
export function listenerLimits(overrides: Partial<ListenerLimits> = {}): ListenerLimits {
  const limits = { ...DEFAULT_LISTENER_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits))
    if (!Number.isInteger(value) || value < 1)
      throw new RangeError(`listener ${name}: expected a positive integer, got ${String(value)}`);
  if (limits.headersTimeoutMs > limits.requestTimeoutMs)
    throw new RangeError('listener headersTimeoutMs: must not exceed requestTimeoutMs');
  return limits;
}

function listen(server: Server, host: string | undefined, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.end(text);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(body));
}

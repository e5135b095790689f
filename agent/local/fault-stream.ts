/**
 * `GET /v1/fault/stream`: the node's fault status as Server-Sent Events (the WHATWG
 * EventSource format), for pods on the node.
 *
 * ```
 * retry: 3000
 *
 * id: 1767225600000
 * event: fault
 * data: {"node":"gpu-1","entry":null,"id":1767225600000,"leader":"c-0","term":3,"updated_at":"…"}
 *
 * : heartbeat
 * ```
 *
 * - On connect the current state is sent at once, unless the client resumes with the id it
 *   last saw (`Last-Event-ID` header, as EventSource sends on reconnecting, or
 *   `?lastEventId=`) and that is still the current id: then nothing until the next change.
 * - Every change goes to every client; a comment every `heartbeatMs` keeps proxies and idle
 *   timeouts from cutting a quiet stream and lets a client notice a dead agent.
 * - At most `maxClients` streams (503 beyond). A client that does not read (its socket
 *   buffer holds more than `maxBufferedBytes` unsent when the next write comes) is
 *   disconnected rather than buffered without bound; EventSource reconnects and resumes.
 * - `close()` ends every stream and refuses new ones, so open streams never hold up the
 *   HTTP server's shutdown.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AGENT_FAULT_EVENT } from '../../contracts/index.js';
import { writeHttpFailure, type Cancel, type Clock, type Logger } from '../../platform/index.js';
import type { FaultFeed } from './fault-feed.js';
import type { LocalMetrics } from './metrics.js';

/** How the stream behaves. */
export interface FaultStreamOptions {
  heartbeatMs: number;
  /** The reconnection delay suggested to clients (`retry:`), ms. */
  retryMs: number;
  maxClients: number;
  maxBufferedBytes: number;
}

/** The body of `/v1/fault` and of each event. */
export type FaultBody = (feed: FaultFeed) => object;

/** The open streams. */
export class FaultStream {
  readonly #clients = new Set<ServerResponse>();
  readonly #feed: FaultFeed;
  readonly #body: FaultBody;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: LocalMetrics;
  readonly #options: FaultStreamOptions;
  #unsubscribe: (() => void) | undefined;
  #cancelHeartbeat: Cancel | undefined;
  #closed = false;

  constructor(
    deps: { feed: FaultFeed; body: FaultBody; clock: Clock; log: Logger; metrics: LocalMetrics },
    options: FaultStreamOptions,
  ) {
    this.#feed = deps.feed;
    this.#body = deps.body;
    this.#clock = deps.clock;
    this.#log = deps.log;
    this.#metrics = deps.metrics;
    this.#options = options;
  }

  /** Open streams. */
  get size(): number {
    return this.#clients.size;
  }

  /** Serves one stream request. */
  open(req: IncomingMessage, res: ServerResponse, lastEventId: string | undefined): void {
    if (this.#closed || this.#clients.size >= this.#options.maxClients) {
      this.#metrics.streamsRefused.inc({ reason: this.#closed ? 'stopping' : 'full' });
      const message = this.#closed
        ? 'the agent is stopping'
        : `${this.#options.maxClients} streams open already`;
      writeHttpFailure(res, { status: 503, code: 'unavailable', message }, 5, 'GET');
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      // nginx and similar proxies buffer responses unless told not to.
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    req.socket.setNoDelay(true);
    this.#clients.add(res);
    res.once('close', () => this.#remove(res));
    this.#start();
    let text = `retry: ${this.#options.retryMs}\n\n`;
    if (lastEventId?.trim() !== String(this.#feed.current().id)) text += this.#event();
    this.#write(res, text);
  }

  /** Ends every stream and refuses new ones. */
  close(): void {
    this.#closed = true;
    for (const res of [...this.#clients]) {
      this.#remove(res);
      res.end();
    }
  }

  /** Starts following the feed and the heartbeat with the first client. */
  #start(): void {
    if (this.#unsubscribe) return;
    this.#unsubscribe = this.#feed.subscribe(() => this.#broadcast(this.#event()));
    this.#armHeartbeat();
  }

  #armHeartbeat(): void {
    this.#cancelHeartbeat = this.#clock.schedule(this.#options.heartbeatMs, () => {
      this.#broadcast(': heartbeat\n\n');
      if (this.#clients.size > 0) this.#armHeartbeat();
    });
  }

  #remove(res: ServerResponse): void {
    if (!this.#clients.delete(res) || this.#clients.size > 0) return;
    // The last one left: stop following until the next one comes.
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    this.#cancelHeartbeat?.();
    this.#cancelHeartbeat = undefined;
  }

  #event(): string {
    const body = this.#body(this.#feed);
    return `id: ${this.#feed.current().id}\nevent: ${AGENT_FAULT_EVENT}\ndata: ${JSON.stringify(body)}\n\n`;
  }

  #broadcast(text: string): void {
    for (const res of [...this.#clients]) this.#write(res, text);
  }

  /** Writes to one client, or disconnects it when it has stopped reading. */
  #write(res: ServerResponse, text: string): void {
    if (res.writableLength > this.#options.maxBufferedBytes) {
      this.#metrics.streamsDropped.inc({ reason: 'slow' });
      this.#log.warn(
        { buffered: res.writableLength, maxBufferedBytes: this.#options.maxBufferedBytes },
        'fault stream client not reading; disconnected',
      );
      this.#remove(res);
      res.destroy();
      return;
    }
    res.write(text);
  }
}

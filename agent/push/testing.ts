/**
 * Test support for the sender: a fake ingest function on a loopback port that records every
 * request and answers as a test decides (an answer, an error with Retry-After, a hang, a cut
 * connection), and waits that resolve when requests arrive, so tests never sleep.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PublishedNode, SnapshotInput } from '../../contracts/index.js';

/** One request as the fake function received it. */
export interface ReceivedRequest {
  /** 1 for the first request. */
  n: number;
  /** The bearer token, without `Bearer `. */
  token: string | undefined;
  contentType: string | undefined;
  /** The body as sent. */
  body: unknown;
  /** The snapshots it carries (the body itself, or the batch's `snapshots`). */
  snapshots: SnapshotInput[];
  /** Whether it was a batch `{"snapshots": […]}`. */
  batch: boolean;
}

/** How the fake answers one request. */
export type Reply =
  /** 200 with a result per snapshot (accepted, entry null unless given). */
  | {
      kind: 'ok';
      entry?: PublishedNode | null;
      dropped?: 'duplicate' | 'out-of-order' | 'future' | 'old-boot' | 'too-many-devices';
    }
  /** An error answer `{"error": {code, message}}`, with headers (Retry-After, say). */
  | { kind: 'error'; status: number; code?: string; headers?: Record<string, string> }
  /** A 200 with this body as it is. */
  | { kind: 'raw'; status: number; body: string }
  /** No answer until `release` is called (or the server closes). */
  | { kind: 'hang' }
  /** The connection is cut without an answer. */
  | { kind: 'reset' };

/** Decides the reply of a request (default: `{ kind: 'ok' }`). */
export type Responder = (request: ReceivedRequest) => Reply;

/** The fake ingest function. */
export interface FakeIngestFunction {
  /** Its base URL, `http://127.0.0.1:<port>` (the sender adds /v1/snapshots). */
  readonly url: string;
  readonly port: number;
  /** Every request so far, in order of arrival. */
  readonly requests: ReceivedRequest[];
  /** Replaces how requests are answered. */
  respond(responder: Responder): void;
  /** Resolves once `count` requests have arrived (at once when they have). */
  received(count: number): Promise<ReceivedRequest>;
  /** Answers the hung requests with `reply` (default `{ kind: 'ok' }`). */
  release(reply?: Exclude<Reply, { kind: 'hang' }>): void;
  close(): Promise<void>;
}

/** The leader identity and term the fake answers with. */
export const FAKE_LEADER = { leader: 'controller-0', term: 3 } as const;

/** Starts a fake function on `port` (0: a free one) of 127.0.0.1. */
export async function startFakeIngestFunction(port = 0): Promise<FakeIngestFunction> {
  const requests: ReceivedRequest[] = [];
  const waiters: { count: number; resolve: (r: ReceivedRequest) => void }[] = [];
  const hung: { request: ReceivedRequest; res: ServerResponse }[] = [];
  let responder: Responder = () => ({ kind: 'ok' });

  const server: Server = createServer((req, res) => {
    void readBody(req).then((text) => {
      const request = record(req, text, requests.length + 1);
      requests.push(request);
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(requests[waiter.count - 1] as ReceivedRequest);
      }
      const reply = responder(request);
      if (reply.kind === 'hang') hung.push({ request, res });
      else answer(res, request, reply);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port }, resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    requests,
    respond(next) {
      responder = next;
    },
    received(count) {
      const arrived = requests[count - 1];
      if (arrived) return Promise.resolve(arrived);
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    release(reply: Exclude<Reply, { kind: 'hang' }> = { kind: 'ok' }) {
      for (const { request, res } of hung.splice(0)) answer(res, request, reply);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function record(req: IncomingMessage, text: string, n: number): ReceivedRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  const batch = typeof body === 'object' && body !== null && 'snapshots' in body;
  const snapshots = batch ? (body as { snapshots: SnapshotInput[] }).snapshots : [body as SnapshotInput];
  const authorization = req.headers.authorization;
  return {
    n,
    token: authorization?.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : undefined,
    contentType: req.headers['content-type'],
    body,
    snapshots,
    batch,
  };
}

function answer(
  res: ServerResponse,
  request: ReceivedRequest,
  reply: Exclude<Reply, { kind: 'hang' }>,
): void {
  if (reply.kind === 'reset') {
    res.socket?.destroy();
    return;
  }
  if (reply.kind === 'raw') {
    res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.body);
    return;
  }
  if (reply.kind === 'error') {
    const code = reply.code ?? `http_${reply.status}`;
    res
      .writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers })
      .end(JSON.stringify({ error: { code, message: `${code} (fake)` } }));
    return;
  }
  const results = request.snapshots.map((snapshot) => ({
    node: snapshot.node,
    accepted: reply.dropped === undefined,
    ...(reply.dropped ? { dropped: reply.dropped } : {}),
    entry: reply.entry ?? null,
  }));
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...FAKE_LEADER, results }));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

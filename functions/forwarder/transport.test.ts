import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { nodeHttp } from '../../platform/index.js';
import { observationsResponseSchema, snapshotSchema, type PublishedNode } from '../../contracts/index.js';
import { gpuSnapshot } from '../../contracts/testing.js';
import { createEngine } from '../../core/engine/index.js';
import { ReplicaRequestError } from './errors.js';
import { createHttpTransport, parseAnswer, type ReplicaTransport } from './transport.js';

const replica = { identity: 'controller-0', url: 'http://127.0.0.1:1' };

function failure(status: number, text: string): ReplicaRequestError {
  try {
    parseAnswer(replica, status, text);
  } catch (error) {
    return error as ReplicaRequestError;
  }
  throw new Error('parseAnswer accepted it');
}

describe('parseAnswer', () => {
  it('accepts a leader and a follower answer', () => {
    const leader = {
      leader: true,
      identity: 'controller-0',
      term: 3,
      results: [{ node: 'n', accepted: true, entry: null }],
    };
    expect(parseAnswer(replica, 200, JSON.stringify(leader))).toEqual(leader);
    const follower = { leader: false, identity: 'controller-0', leader_identity: null, results: [] };
    expect(parseAnswer(replica, 200, JSON.stringify(follower))).toEqual(follower);
  });

  it('keeps only the contract’s keys, entries included, as the contract’s schema does', () => {
    const entry = failedEntry();
    const answer = {
      leader: true,
      identity: 'controller-0',
      term: 3,
      newer: 'field',
      results: [
        { node: 'gpu-node-1', accepted: true, entry: { ...entry, extra: 1 }, extra: 1 },
        { node: 'n2', accepted: false, dropped: 'duplicate', entry: null },
      ],
    };
    const parsed = parseAnswer(replica, 200, JSON.stringify(answer));
    expect(parsed).toEqual(observationsResponseSchema.parse(answer));
    expect(parsed).toEqual({
      leader: true,
      identity: 'controller-0',
      term: 3,
      results: [
        { node: 'gpu-node-1', accepted: true, entry },
        { node: 'n2', accepted: false, dropped: 'duplicate', entry: null },
      ],
    });
    const follower = {
      leader: false,
      identity: 'controller-1',
      leader_identity: 'controller-0',
      results: [{ node: 'n', accepted: true, entry: null, extra: 1 }],
    };
    expect(parseAnswer(replica, 200, JSON.stringify(follower))).toEqual({
      leader: false,
      identity: 'controller-1',
      leader_identity: 'controller-0',
      results: [{ node: 'n', accepted: true }],
    });
  });

  it.each([
    [
      401,
      '{"error":{"code":"unauthenticated","message":"invalid token"}}',
      'unauthorized',
      'controller-0 answered 401 (unauthenticated: invalid token)',
    ],
    [403, 'nope', 'unauthorized', 'controller-0 answered 403 (no error body)'],
    [
      503,
      '{"error":{"code":"not_ready","message":"seeding"}}',
      'http-error',
      'controller-0 answered 503 (not_ready: seeding)',
    ],
    [
      200,
      '{"leader":true}',
      'bad-answer',
      'controller-0: answer is not an observations response (identity: ',
    ],
    [200, 'not json', 'bad-answer', 'controller-0: answer is not an observations response (/: '],
    [200, '[]', 'bad-answer', 'controller-0: answer is not an observations response (/: '],
    [200, '{"leader":"yes","identity":"c","results":[]}', 'bad-answer', '(leader: '],
    [200, '{"leader":true,"identity":"","term":1,"results":[]}', 'bad-answer', '(identity: '],
    [200, '{"leader":true,"identity":"c","term":-1,"results":[]}', 'bad-answer', '(term: '],
    [200, '{"leader":true,"identity":"c","term":1.5,"results":[]}', 'bad-answer', '(term: '],
    [200, '{"leader":true,"identity":"c","term":1,"results":{}}', 'bad-answer', '(results: '],
    [200, '{"leader":true,"identity":"c","term":1,"results":[7]}', 'bad-answer', '(results.0.: '],
    [
      200,
      '{"leader":true,"identity":"c","term":1,"results":[{"node":"n","accepted":true}]}',
      'bad-answer',
      '(results.0.entry: ',
    ],
    [
      200,
      '{"leader":true,"identity":"c","term":1,"results":[{"node":"n","accepted":true,"entry":{"node":"n"}}]}',
      'bad-answer',
      '(results.0.entry.observed_at: ',
    ],
    [
      200,
      '{"leader":false,"identity":"c","leader_identity":null,"results":[{"node":"n","accepted":"yes"}]}',
      'bad-answer',
      '(results.0.accepted: ',
    ],
    [
      200,
      '{"leader":false,"identity":"c","leader_identity":null,"results":[{"node":"n","accepted":false,"dropped":"lost"}]}',
      'bad-answer',
      '(results.0.dropped: ',
    ],
    [
      200,
      '{"leader":false,"identity":"c","leader_identity":5,"results":[]}',
      'bad-answer',
      '(leader_identity: ',
    ],
  ])('%d %s → %s', (status, text, reason, message) => {
    const error = failure(status, text);
    expect(error).toBeInstanceOf(ReplicaRequestError);
    expect(error.reason).toBe(reason);
    expect(error.message).toContain(message);
    expect(error.message).not.toContain('\n');
  });
});

/** A real published entry of a failed node, from the engine the controllers run. */
function failedEntry(): PublishedNode {
  const engine = createEngine();
  const snapshot = snapshotSchema.parse(gpuSnapshot({ xids: [79] }));
  engine.observe(snapshot, Date.parse(snapshot.collected_at));
  const entry = engine.nodeEntry('gpu-node-1');
  if (!entry) throw new Error('the engine lists no entry for a node with XID 79');
  return entry;
}

/** A replica's HTTP(S) server on a loopback port: `respond` answers each request. */
interface TestReplica {
  url: string;
  /** Requests seen: method, path, headers, body. */
  requests: { method: string; path: string; authorization: string; type: string; body: string }[];
  /** Connections accepted so far, and how many are open now. */
  connections: { accepted: number; open: number };
  close(): Promise<void>;
}

const LEADER_ANSWER = JSON.stringify({
  leader: true,
  identity: 'controller-0',
  term: 1,
  results: [{ node: 'n', accepted: true, entry: null }],
});

/** `tls`: serve https with this key and certificate. */
async function testReplica(
  respond: (req: IncomingMessage, res: ServerResponse) => void,
  tls?: { key: Buffer; cert: Buffer },
): Promise<TestReplica> {
  const requests: TestReplica['requests'] = [];
  const connections = { accepted: 0, open: 0 };
  const sockets = new Set<Socket>();
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        authorization: req.headers.authorization ?? '',
        type: req.headers['content-type'] ?? '',
        body: Buffer.concat(chunks).toString('utf8'),
      });
      respond(req, res);
    });
  };
  const server: Server = tls ? createHttpsServer(tls, handle) : nodeHttp.createServer(handle);
  server.on('connection', (socket: Socket) => {
    connections.accepted++;
    connections.open++;
    sockets.add(socket);
    socket.on('close', () => {
      connections.open--;
      sockets.delete(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    requests,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A loopback port whose listener never accepts, with its accept queue full, so that a new
 * connection hangs in its handshake: the kernel drops a SYN to a listener whose queue is full
 * (Linux holds backlog + 1 connections). The listener lives in a worker thread whose event
 * loop is blocked from the moment it listens, so nothing ever accepts; two connections made
 * here fill the queue of backlog 1.
 */
async function unacceptingListener(): Promise<{ url: string; queued: () => number; close(): Promise<void> }> {
  const release = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const server = require('node:net').createServer();
     server.listen({ host: '127.0.0.1', port: 0, backlog: 1 }, () => {
       parentPort.postMessage(server.address().port);
       Atomics.wait(workerData, 0, 0);
       server.close();
     });`,
    { eval: true, workerData: release },
  );
  const port = await new Promise<number>((resolve) => worker.once('message', resolve));
  const fillers: Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const socket = connect(port, '127.0.0.1');
    fillers.push(socket);
    await new Promise((resolve) => socket.once('connect', resolve));
  }
  // The listening socket's receive queue, in /proc/net/tcp, is its accept queue's length.
  const queued = (): number => {
    const local = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
    for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n')) {
      const fields = line.trim().split(/\s+/);
      if (fields[1]?.endsWith(local) && fields[3] === '0A')
        return parseInt(fields[4]?.split(':')[1] ?? '', 16);
    }
    return -1;
  };
  return {
    url: `http://127.0.0.1:${port}`,
    queued,
    close: async () => {
      for (const socket of fillers) socket.destroy();
      Atomics.store(release, 0, 1);
      Atomics.notify(release, 0);
      await worker.terminate();
    },
  };
}

/** True where a full accept queue drops a SYN (Linux, tcp_abort_on_overflow off). */
function handshakesCanBeHeld(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    return readFileSync('/proc/sys/net/ipv4/tcp_abort_on_overflow', 'utf8').trim() === '0';
  } catch {
    return false;
  }
}

/** Resolves once `check` holds, looking again at each turn of the event loop (no timed sleep). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setImmediate(resolve));
}

describe('createHttpTransport', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  const setUp = async (
    respond: (req: IncomingMessage, res: ServerResponse) => void,
    options: Parameters<typeof createHttpTransport>[0] = {},
  ): Promise<{
    server: TestReplica;
    transport: ReplicaTransport;
    replica: { identity: string; url: string };
  }> => {
    const server = await testReplica(respond);
    const transport = createHttpTransport(options);
    cleanups.push(
      () => transport.close(),
      () => server.close(),
    );
    return { server, transport, replica: { identity: 'controller-0', url: server.url } };
  };
  const post = (
    transport: ReplicaTransport,
    replica: { identity: string; url: string },
    signal?: AbortSignal,
  ) =>
    transport.post(replica, {
      body: Buffer.from('{"observations":[]}'),
      token: 'the-token',
      signal: signal ?? new AbortController().signal,
    });

  it('posts the body with the bearer token and reuses one connection for requests one after another', async () => {
    const { server, transport, replica } = await setUp((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(LEADER_ANSWER);
    });
    for (let i = 0; i < 3; i++) expect(await post(transport, replica)).toEqual(JSON.parse(LEADER_ANSWER));
    expect(server.requests).toEqual(
      Array.from({ length: 3 }, () => ({
        method: 'POST',
        path: '/v1/observations',
        authorization: 'Bearer the-token',
        type: 'application/json',
        body: '{"observations":[]}',
      })),
    );
    expect(server.connections.accepted).toBe(1);
  });

  it('refuses an answer larger than maxAnswerBytes, announced or streamed', async () => {
    const announced = await setUp(
      (_req, res) => {
        res.writeHead(200, { 'content-length': 100 });
        res.end('x'.repeat(100));
      },
      { maxAnswerBytes: 50 },
    );
    await expect(post(announced.transport, announced.replica)).rejects.toMatchObject({
      reason: 'connection',
      message: expect.stringContaining('answer of 100 bytes is over 50') as unknown,
    });
    const streamed = await setUp(
      (_req, res) => {
        res.writeHead(200); // chunked: no length announced
        res.write('x'.repeat(40));
        res.end('x'.repeat(40));
      },
      { maxAnswerBytes: 50 },
    );
    await expect(post(streamed.transport, streamed.replica)).rejects.toMatchObject({
      reason: 'connection',
      message: expect.stringContaining('answer over 50 bytes') as unknown,
    });
  });

  it('fails, rather than hangs, when the connection closes halfway through the answer', async () => {
    const { transport, replica } = await setUp((_req, res) => {
      res.writeHead(200, { 'content-length': 1000 });
      res.write('{"leader":');
      res.socket?.destroy();
    });
    await expect(post(transport, replica)).rejects.toMatchObject({
      reason: 'connection',
      message: expect.stringContaining('controller-0: ') as unknown,
    });
  });

  it('gives up a request when its signal aborts, and answers a refused connection as a connection failure', async () => {
    const { server, transport, replica } = await setUp(() => undefined); // never answers
    const abort = new AbortController();
    const pending = post(transport, replica, abort.signal);
    await until(() => server.requests.length === 1);
    abort.abort();
    await expect(pending).rejects.toMatchObject({ reason: 'connection' });
    await server.close();
    await expect(post(transport, replica)).rejects.toMatchObject({
      reason: 'connection',
      message: expect.stringContaining('ECONNREFUSED') as unknown,
    });
  });

  // Linux only: the full accept queue that holds a handshake is read from /proc/net/tcp, and
  // a kernel set to answer an overflow with a reset (tcp_abort_on_overflow) holds nothing.
  (handshakesCanBeHeld() ? it : it.skip)(
    'gives up connecting after connectTimeoutMs when the replica never completes the handshake',
    async () => {
      const listener = await unacceptingListener();
      cleanups.push(() => listener.close());
      expect(listener.queued()).toBe(2);
      const transport = createHttpTransport({ connectTimeoutMs: 50 });
      cleanups.push(() => transport.close());
      // The request's own signal never aborts: only the connect timeout can end it.
      await expect(post(transport, { identity: 'controller-0', url: listener.url })).rejects.toMatchObject({
        reason: 'connection',
        message: expect.stringContaining('controller-0: not connected within 50 ms') as unknown,
      });
      expect(listener.queued()).toBe(2);
    },
  );

  it('closes its connections to a replica it forgets, and opens new ones if asked again', async () => {
    const { server, transport, replica } = await setUp((_req, res) => res.end(LEADER_ANSWER));
    await post(transport, replica);
    expect(server.connections.open).toBe(1);
    transport.forget(replica);
    await until(() => server.connections.open === 0);
    await post(transport, replica);
    expect(server.connections).toEqual({ accepted: 2, open: 1 });
  });

  it('reads a non-200 answer as the replica’s refusal', async () => {
    const { transport, replica } = await setUp((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'unauthorized', message: 'no' } }));
    });
    await expect(post(transport, replica)).rejects.toMatchObject({ reason: 'unauthorized', status: 401 });
  });
});

describe('createHttpTransport to an https replica (a proxy or mesh in front of the controllers)', () => {
  // testdata/: a CA and a replica certificate for 127.0.0.1, made once with `openssl ca` (EC
  // P-256, valid from 2000 to 2126, so no machine's clock finds them not yet valid) for these
  // tests only; the CA's key was thrown away.
  const testdata = (file: string): string => fileURLToPath(new URL(`testdata/${file}`, import.meta.url));
  const root = fileURLToPath(new URL('../..', import.meta.url));

  /** An https replica answering as the leader, accepting the one observation the child posts. */
  async function httpsReplica(): Promise<TestReplica> {
    const answer = JSON.stringify({
      leader: true,
      identity: 'controller-0',
      term: 3,
      results: [{ node: 'node-a', accepted: true, entry: null }],
    });
    return testReplica(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(answer);
      },
      { key: readFileSync(testdata('replica-key.pem')), cert: readFileSync(testdata('replica.pem')) },
    );
  }

  /**
   * Posts one observation to `url` from a fresh node process (NODE_EXTRA_CA_CERTS is read only
   * when a process starts) and returns what the transport resolved or rejected with.
   */
  function postFromChild(
    url: string,
    extraCa: string | undefined,
    serverName?: string,
  ): Promise<Record<string, unknown>> {
    const replica = { identity: 'controller-0', url, ...(serverName ? { serverName } : {}) };
    const script = `
      const { createHttpTransport } = await import(${JSON.stringify(new URL('transport.ts', import.meta.url).href)});
      const transport = createHttpTransport();
      const body = JSON.stringify({ observations: [{ snapshot: { node: 'node-a' } }] });
      try {
        const answer = await transport.post(${JSON.stringify(replica)},
          { body, token: 't', signal: AbortSignal.timeout(10_000) });
        process.stdout.write(JSON.stringify({ answer }));
      } catch (error) {
        process.stdout.write(JSON.stringify({ reason: error.reason, message: error.message }));
      }
      await transport.close();`;
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_EXTRA_CA_CERTS;
    if (extraCa !== undefined) env.NODE_EXTRA_CA_CERTS = extraCa;
    return new Promise((resolve, reject) => {
      // Killed past 15 s, within the test's own timeout, so a stuck child never outlives it.
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: root,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 15_000,
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code, signal) =>
        code === 0
          ? resolve(JSON.parse(out) as Record<string, unknown>)
          : reject(new Error(`child exited ${code ?? signal}: ${err.trim()}`)),
      );
    });
  }

  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('posts over https to a replica whose certificate a CA in NODE_EXTRA_CA_CERTS signed', async () => {
    const replica = await httpsReplica();
    cleanups.push(replica.close);
    expect(await postFromChild(replica.url, testdata('ca.pem'))).toEqual({
      answer: {
        leader: true,
        identity: 'controller-0',
        term: 3,
        results: [{ node: 'node-a', accepted: true, entry: null }],
      },
    });
  }, 20_000);

  it("checks the certificate against the replica's serverName, not the address dialled", async () => {
    const replica = await httpsReplica();
    cleanups.push(replica.close);
    // Dialled by IP, as a pod IP from an EndpointSlice; the certificate also names localhost.
    expect(await postFromChild(replica.url, testdata('ca.pem'), 'localhost')).toMatchObject({
      answer: { leader: true },
    });
    const wrong = await postFromChild(replica.url, testdata('ca.pem'), 'npu-fault-controller.ai-infra.svc');
    expect(wrong.reason).toBe('connection');
    expect(wrong.message).toMatch(/npu-fault-controller\.ai-infra\.svc/);
  }, 30_000);

  it('refuses the replica as a connection failure when no trusted CA signed its certificate', async () => {
    const replica = await httpsReplica();
    cleanups.push(replica.close);
    const failed = await postFromChild(replica.url, undefined);
    expect(failed.reason).toBe('connection');
    expect(failed.message).toMatch(/^controller-0: .*(certificate|verify)/);
  }, 20_000);
});

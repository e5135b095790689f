import { afterEach, describe, expect, it } from '@jest/globals';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Counter, Registry } from 'prom-client';
import { FakeClock } from './clock.js';
import { HttpError } from './errors.js';
import {
  DEFAULT_LISTENER_LIMITS,
  createHttpServer,
  listenAddressSchema,
  listenerLimits,
  type HttpServer,
  type HttpServerOptions,
} from './http-server.js';
import { createLogger, type Logger } from './logger.js';

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function get(port: number, path: string, options: { method?: string; agent?: Agent } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', agent: options.agent },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function memoryLog(): { log: Logger; messages: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', destination: { write: (l: string) => void lines.push(l) } });
  return { log, messages: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** A started server on a free loopback port; stopped after each test. */
interface Running {
  server: HttpServer;
  port: number;
  stop: () => Promise<void>;
  messages: () => Record<string, unknown>[];
}

const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

async function startServer(
  options: Partial<HttpServerOptions> = {},
  setup?: (server: HttpServer) => void,
): Promise<Running> {
  const { log, messages } = memoryLog();
  const server = createHttpServer({ host: '127.0.0.1', port: 0, log, ...options });
  setup?.(server);
  const controller = new AbortController();
  const started = server.start(controller.signal);
  const { port } = await server.listening;
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    controller.abort();
    stopped ??= started;
    return stopped;
  };
  const entry = { server, port, stop, messages };
  running.push(entry);
  return entry;
}

describe('probes', () => {
  it('answers /healthz and reports its bound address', async () => {
    const { port, server, messages } = await startServer();
    expect(port).toBeGreaterThan(0);
    expect((await server.listening).address).toBe('127.0.0.1');
    expect(await get(port, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect((await get(port, '/healthz', { method: 'HEAD' })).status).toBe(200);
    expect(messages().find((m) => m.msg === 'listening')).toMatchObject({ port, server: 'http' });
  });

  it('is ready with no checks', async () => {
    const { port } = await startServer();
    expect(await get(port, '/readyz')).toMatchObject({ status: 200, body: 'ok\n' });
  });

  it('names the failing checks in 503, lists every check with reasons under ?verbose', async () => {
    let cacheSynced: boolean | string = 'informer not synced';
    const { port } = await startServer({}, (server) => {
      server.addReadyCheck('ping', () => true);
      server.addReadyCheck('cache', () => cacheSynced);
      server.addReadyCheck('lease', async () => false);
      server.addReadyCheck('throws', () => {
        throw new Error('check exploded\nsecond line');
      });
      server.addReadyCheck('rejects', () => Promise.reject(new TypeError('bad')));
    });
    const plain = await get(port, '/readyz');
    expect(plain.status).toBe(503);
    expect(plain.body).toBe(
      '[-]cache failed\n[-]lease failed\n[-]throws failed\n[-]rejects failed\nreadyz check failed\n',
    );
    const verbose = await get(port, '/readyz?verbose');
    expect(verbose.body).toBe(
      [
        '[+]ping ok',
        '[-]cache failed: informer not synced',
        '[-]lease failed: not ready',
        '[-]throws failed: check exploded',
        '[-]rejects failed: bad',
        'readyz check failed',
        '',
      ].join('\n'),
    );
    cacheSynced = true;
    expect((await get(port, '/readyz')).status).toBe(503); // the others still fail
  });

  it('passes verbosely when all pass', async () => {
    const { port } = await startServer({}, (server) => {
      server.addReadyCheck('a', () => true);
      server.addReadyCheck('b', async () => true);
    });
    expect(await get(port, '/readyz?verbose')).toMatchObject({
      status: 200,
      body: '[+]a ok\n[+]b ok\nreadyz check passed\n',
    });
  });

  it('fails a check that hangs past its timeout instead of hanging the probe', async () => {
    const clock = new FakeClock();
    let called!: () => void;
    const checkCalled = new Promise<void>((resolve) => (called = resolve));
    const { port } = await startServer({ clock, readyCheckTimeoutMs: 800 }, (server) => {
      server.addReadyCheck('hung', () => {
        called();
        return new Promise<boolean>(() => undefined);
      });
    });
    const reply = get(port, '/readyz?verbose');
    await checkCalled;
    await clock.advance(799);
    await clock.advance(1);
    expect(await reply).toMatchObject({
      status: 503,
      body: '[-]hung failed: timed out after 800 ms\nreadyz check failed\n',
    });
  });

  it('logs readiness when it changes, not on every probe', async () => {
    let ok = false;
    const { port, messages } = await startServer({}, (server) => server.addReadyCheck('sync', () => ok));
    await get(port, '/readyz');
    await get(port, '/readyz');
    ok = true;
    await get(port, '/readyz');
    await get(port, '/readyz');
    const changes = messages().filter((m) => m.msg === 'ready' || m.msg === 'not ready');
    expect(changes.map((m) => [m.msg, m.failing])).toEqual([
      ['not ready', { sync: 'not ready' }],
      ['ready', undefined],
    ]);
  });

  it('refuses a second check of the same name', async () => {
    const { log } = memoryLog();
    const server = createHttpServer({ port: 0, log });
    server.addReadyCheck('x', () => true);
    expect(() => server.addReadyCheck('x', () => true)).toThrow('ready check "x" is already added');
  });

  it('answers 405 to other methods on probe paths', async () => {
    const { port } = await startServer();
    const reply = await get(port, '/healthz', { method: 'POST' });
    expect([reply.status, reply.headers.allow]).toEqual([405, 'GET, HEAD']);
  });
});

describe('/metrics', () => {
  it('serves the given registry in the Prometheus text format', async () => {
    const registry = new Registry();
    new Counter({ name: 'npu_fault_test_requests_total', help: 'requests', registers: [registry] }).inc(3);
    const { port } = await startServer({ registry });
    const reply = await get(port, '/metrics');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe(registry.contentType);
    expect(reply.body).toContain('npu_fault_test_requests_total 3');
  });

  it('is 404 without a registry, and a generic 500 when collecting fails', async () => {
    const { port } = await startServer();
    expect((await get(port, '/metrics')).status).toBe(404);
    const registry = new Registry();
    registry.metrics = () => Promise.reject(new Error('collector /secret/path failed'));
    const failing = await startServer({ registry });
    expect(await get(failing.port, '/metrics')).toMatchObject({
      status: 500,
      body: '{"error":"internal error"}',
    });
  });
});

describe('application handler', () => {
  it('gets every other path; without one they are 404', async () => {
    const withHandler = await startServer({
      handler: (req, res) => {
        res.statusCode = 202;
        res.end(`app saw ${req.method} ${req.url}`);
      },
    });
    expect(await get(withHandler.port, '/v1/snapshots?x=1', { method: 'POST' })).toMatchObject({
      status: 202,
      body: 'app saw POST /v1/snapshots?x=1',
    });
    const without = await startServer();
    expect(await get(without.port, '/v1/snapshots')).toMatchObject({
      status: 404,
      body: '{"error":"not found"}',
    });
  });

  it('maps what a handler throws through toHttpResponse and keeps serving', async () => {
    const { port, messages } = await startServer({
      handler: async (req) => {
        if (req.url === '/missing') throw new HttpError(404, 'no such node');
        throw new Error('stack and internals');
      },
    });
    expect(await get(port, '/missing')).toMatchObject({ status: 404, body: '{"error":"no such node"}' });
    expect(await get(port, '/bug')).toMatchObject({ status: 500, body: '{"error":"internal error"}' });
    expect((await get(port, '/healthz')).status).toBe(200);
    expect(messages().filter((m) => m.msg === 'request failed')).toHaveLength(2);
  });
});

describe('lifecycle', () => {
  it('rejects start and listening when the port is taken', async () => {
    const first = await startServer();
    const { log } = memoryLog();
    const second = createHttpServer({ host: '127.0.0.1', port: first.port, log });
    await expect(second.start(new AbortController().signal)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await expect(second.listening).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });

  it('does not listen when started with an aborted signal', async () => {
    const { log } = memoryLog();
    const server = createHttpServer({ port: 0, log });
    await expect(server.start(AbortSignal.abort())).resolves.toBeUndefined();
    await expect(server.listening).rejects.toThrow('http: stopped before listening');
  });

  it('on abort: stops accepting, finishes requests in flight, then closes their keep-alive connections', async () => {
    let release!: () => void;
    let inHandler!: () => void;
    const handlerEntered = new Promise<void>((resolve) => (inHandler = resolve));
    const { port, stop } = await startServer({
      handler: (_req, res) => {
        inHandler();
        release = () => res.end('finished');
      },
    });
    const agent = new Agent({ keepAlive: true });
    try {
      expect((await get(port, '/healthz', { agent })).headers.connection).toBe('keep-alive');
      const inFlight = get(port, '/slow', { agent });
      await handlerEntered;
      let stopped = false;
      const stopping = stop().then(() => (stopped = true));
      await expect(get(port, '/healthz')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      expect(stopped).toBe(false);
      release();
      const reply = await inFlight;
      expect([reply.status, reply.body, reply.headers.connection]).toEqual([200, 'finished', 'close']);
      await stopping;
      expect(stopped).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  it('on abort: closes a keep-alive connection whose response had already started, once it ends', async () => {
    let release!: () => void;
    let inHandler!: () => void;
    const handlerEntered = new Promise<void>((resolve) => (inHandler = resolve));
    const { port, stop } = await startServer({
      clock: new FakeClock(), // the grace period never ends: only the closing of the connection can stop it
      handler: (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.write('part,');
        inHandler();
        release = () => res.end('rest');
      },
    });
    const agent = new Agent({ keepAlive: true });
    try {
      const inFlight = get(port, '/stream', { agent });
      await handlerEntered;
      const stopping = stop();
      await expect(get(port, '/healthz')).rejects.toMatchObject({ code: 'ECONNREFUSED' }); // stopping has begun
      release();
      const reply = await inFlight;
      expect([reply.body, reply.headers.connection]).toEqual(['part,rest', 'keep-alive']);
      await stopping;
    } finally {
      agent.destroy();
    }
  });

  it('force-closes requests still open after the grace period', async () => {
    const clock = new FakeClock();
    let inHandler!: () => void;
    const handlerEntered = new Promise<void>((resolve) => (inHandler = resolve));
    const { port, stop, messages } = await startServer({
      clock,
      gracePeriodMs: 3000,
      handler: () => inHandler(), // never answers
    });
    const stuck = get(port, '/stuck').catch((error: unknown) => error); // settles during advance
    await handlerEntered;
    let stopped = false;
    const stopping = stop().then(() => (stopped = true));
    await clock.advance(2999);
    expect(stopped).toBe(false);
    await clock.advance(1);
    expect(await stuck).toMatchObject({ code: 'ECONNRESET' });
    await stopping;
    expect(messages().find((m) => m.msg === 'closing connections still open')).toMatchObject({ inFlight: 1 });
  });
});

describe('listener limits', () => {
  /** A raw TCP client: what it wrote, and everything the server sent until it closed. */
  function raw(port: number): { socket: Socket; closed: Promise<string> } {
    const socket = connect(port, '127.0.0.1');
    socket.setEncoding('utf8');
    let received = '';
    socket.on('data', (chunk: string) => (received += chunk));
    const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
    socket.on('error', () => undefined);
    return { socket, closed };
  }

  it('answers 408 and closes a connection whose headers do not arrive within headersTimeoutMs', async () => {
    const { port } = await startServer({ limits: { headersTimeoutMs: 200, requestTimeoutMs: 400 } });
    const client = raw(port);
    client.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'); // and never the blank line
    const started = performance.now();
    expect(await client.closed).toMatch(/^HTTP\/1\.1 408 /);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('answers 408 to a body trickled slower than requestTimeoutMs allows', async () => {
    const { port } = await startServer({
      limits: { headersTimeoutMs: 200, requestTimeoutMs: 400 },
      handler: (req, res) => {
        req.resume();
        req.on('end', () => res.end('read'));
      },
    });
    const client = raw(port);
    client.socket.write('POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n');
    const trickle = setInterval(() => client.socket.write('a'), 50);
    try {
      expect(await client.closed).toMatch(/HTTP\/1\.1 408 /);
    } finally {
      clearInterval(trickle);
    }
  });

  it('answers 431 to headers over maxHeaderBytes', async () => {
    const { port } = await startServer({ limits: { maxHeaderBytes: 1024 } });
    const client = raw(port);
    client.socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(2048)}\r\n\r\n`);
    expect(await client.closed).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('closes connections beyond maxConnections as they arrive, and serves the others', async () => {
    const { port } = await startServer({ limits: { maxConnections: 2 } });
    const held = [raw(port), raw(port)];
    // Each held connection has been served once (so the server has it), and stays open.
    await Promise.all(
      held.map(
        (c) =>
          new Promise<void>((resolve) => {
            c.socket.once('data', () => resolve());
            c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
          }),
      ),
    );
    const third = raw(port);
    expect(await third.closed).toBe('');
    for (const c of held) c.socket.destroy();
  });

  it('refuses limits that are not positive integers, or headers due after the whole request', () => {
    expect(() => listenerLimits({ maxConnections: 0 })).toThrow('listener maxConnections');
    expect(() => listenerLimits({ headersTimeoutMs: 2000, requestTimeoutMs: 1000 })).toThrow(
      'listener headersTimeoutMs',
    );
    expect(listenerLimits()).toEqual(DEFAULT_LISTENER_LIMITS);
  });
});

describe('listenAddressSchema', () => {
  it.each([
    ['0.0.0.0:8080', { host: '0.0.0.0', port: 8080 }],
    [':9090', { host: undefined, port: 9090 }],
    ['[::1]:0', { host: '::1', port: 0 }],
    ['localhost:65535', { host: 'localhost', port: 65535 }],
  ])('reads %p', (text, address) => {
    expect(listenAddressSchema.parse(text)).toEqual(address);
  });

  it.each(['8080', 'host:', 'host:65536', '::1:80', 'a:b'])('refuses %p', (text) => {
    const result = listenAddressSchema.safeParse(text);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe(`expected host:port, :port or [ipv6]:port, got "${text}"`);
  });
});

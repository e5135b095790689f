import { afterEach, describe, expect, it } from '@jest/globals';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serve, type TestServer } from '../../platform/testing.js';
import { MAX_ANSWER_BYTES, createHttpPost, type HttpPost, type HttpPostInit } from './http-post.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<{ server: TestServer; post: HttpPost }> {
  const server = await serve((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => handler(req, res, body));
  });
  const post = createHttpPost();
  cleanups.push(
    () => server.close(),
    () => post.close(),
  );
  return { server, post };
}

function init(body: string, signal = new AbortController().signal): HttpPostInit {
  return {
    method: 'POST',
    headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
    body,
    signal,
    redirect: 'error',
  };
}

describe('createHttpPost', () => {
  it('POSTs the body with its headers and gives status, headers and the answer text', async () => {
    const seen: { method?: string; auth?: string; length?: string; body?: string }[] = [];
    const { server, post } = await setup((req, res, body) => {
      seen.push({
        method: req.method,
        auth: req.headers.authorization,
        length: req.headers['content-length'],
        body,
      });
      res.writeHead(503, { 'retry-after': '7', 'content-type': 'application/json' });
      res.end('{"error":"later"}');
    });
    const response = await post(`${server.origin}/v1/snapshots`, init('{"é":1}'));
    expect(response.status).toBe(503);
    expect(response.headers.get('Retry-After')).toBe('7');
    expect(response.headers.get('x-missing')).toBeNull();
    await expect(response.text()).resolves.toBe('{"error":"later"}');
    // The length counts bytes, not characters.
    expect(seen).toEqual([{ method: 'POST', auth: 'Bearer t', length: '8', body: '{"é":1}' }]);
  });

  it('reuses the connection for the next request (keep-alive)', async () => {
    const ports: number[] = [];
    const { server, post } = await setup((req, res) => {
      ports.push(req.socket.remotePort ?? 0);
      res.end('ok');
    });
    for (let i = 0; i < 3; i++) await (await post(server.origin, init('{}'))).text();
    expect(new Set(ports).size).toBe(1);
  });

  it('fails on a redirect rather than following it', async () => {
    const { server, post } = await setup((_req, res) => {
      res.writeHead(307, { location: '/elsewhere' });
      res.end();
    });
    await expect(post(server.origin, init('{}'))).rejects.toThrow(/redirected \(307\) to \/elsewhere/);
  });

  it('the signal aborts a request that gets no answer', async () => {
    const { server, post } = await setup(() => undefined);
    const controller = new AbortController();
    const request = post(server.origin, init('{}', controller.signal));
    controller.abort(new Error('no answer within 5 ms'));
    await expect(request).rejects.toThrow();
  });

  it('the signal aborts the reading of an answer that stalls half-way', async () => {
    const { server, post } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"half":');
    });
    const controller = new AbortController();
    const response = await post(server.origin, init('{}', controller.signal));
    const text = response.text();
    controller.abort(new Error('no answer within 5 ms'));
    await expect(text).rejects.toThrow('no answer within 5 ms');
  });

  it('an answer cut short by the server is an error, not a short text', async () => {
    const { server, post } = await setup((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('{"half":');
      setImmediate(() => res.socket?.destroy());
    });
    const response = await post(server.origin, init('{}'));
    await expect(response.text()).rejects.toThrow();
  });

  it('refuses an answer over MAX_ANSWER_BYTES, declared or streamed without end', async () => {
    const { server, post } = await setup((req, res) => {
      if (req.url === '/declared') {
        res.writeHead(200, { 'content-length': String(MAX_ANSWER_BYTES + 1) });
        res.write('{');
        return;
      }
      res.writeHead(200); // chunked, no length: 64 KiB at a time until the client stops reading
      const chunk = 'x'.repeat(64 * 1024);
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    for (const path of ['/declared', '/endless']) {
      const response = await post(`${server.origin}${path}`, init('{}'));
      await expect(response.text()).rejects.toThrow(`the answer is over ${MAX_ANSWER_BYTES} bytes`);
    }
  });
});

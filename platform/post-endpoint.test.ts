import { describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError, httpFailureOf, sendHttpFailure } from './index.js';
import { createLogger } from './logger.js';
import { postEndpoint } from './post-endpoint.js';
import { FakeClock } from './clock.js';

async function serve(
  post: () => Promise<void>,
): Promise<{ url: string; codes: string[]; close(): Promise<void> }> {
  const codes: string[] = [];
  const log = createLogger({ level: 'silent' });
  const handler = postEndpoint({
    path: '/v1/things',
    clock: new FakeClock(0),
    metrics: { requests: { inc: ({ code }) => codes.push(code) }, seconds: { observe: () => undefined } },
    post: async (_req, res) => {
      await post();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    },
    fail: (res, error) =>
      sendHttpFailure(res, httpFailureOf(error, 1024), { log, what: 'things', retryAfterSeconds: 1, error }),
  });
  const server: Server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    codes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('postEndpoint', () => {
  it('answers its path (query and fragment aside), refuses other paths and methods, and counts every answer', async () => {
    const server = await serve(() => Promise.resolve());
    try {
      expect((await fetch(`${server.url}/v1/things?x=1`, { method: 'POST', body: '{}' })).status).toBe(200);
      expect((await fetch(`${server.url}/v1/other`, { method: 'POST', body: '{}' })).status).toBe(404);
      const get = await fetch(`${server.url}/v1/things`);
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST');
      expect(server.codes).toEqual(['200', '404', '405']);
    } finally {
      await server.close();
    }
  });

  it("hands what the handler throws to the failure path: an AppError's status, else a 500", async () => {
    let error: Error = new AppError('busy', 'try later', { status: 503 });
    const server = await serve(() => Promise.reject(error));
    try {
      expect((await fetch(`${server.url}/v1/things`, { method: 'POST', body: '{}' })).status).toBe(503);
      error = new Error('boom');
      const answer = await fetch(`${server.url}/v1/things`, { method: 'POST', body: '{}' });
      expect(answer.status).toBe(500);
      expect(await answer.text()).not.toContain('boom');
    } finally {
      await server.close();
    }
  });
});

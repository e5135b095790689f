/**
 * Test helpers for the components' HTTP endpoints (tests of other folders may import a
 * folder's testing.ts): a handler served on a free loopback port, and a POST that reads the
 * answer whole.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from './http-server.js';

/** A handler served on 127.0.0.1 at an ephemeral port. */
export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** `origin` + the endpoint's path */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Serves `handler` with node:http on a free loopback port. */
export async function serve(handler: RequestHandler, path = ''): Promise<TestServer> {
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    url: `${origin}${path}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A response read whole: status, headers and the body parsed as JSON (undefined when it is not). */
export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/**
 * POSTs `body` (an object is sent as JSON) as application/json, with a bearer token
 * (`good-token` by default) unless `token` is null.
 */
export async function postJson(
  url: string,
  body: unknown,
  options: { token?: string | null; headers?: Record<string, string>; method?: string } = {},
): Promise<TestResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  const token = options.token === undefined ? 'good-token' : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const payload = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
  const method = options.method ?? 'POST';
  const withBody = method !== 'GET' && method !== 'HEAD';
  const response = await fetch(url, { method, headers, ...(withBody ? { body: payload } : {}) });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

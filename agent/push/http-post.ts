/**
 * The sender's default way to POST: node:http(s) on a keep-alive agent, shaped as the
 * minimal fetch the sender calls. One small request a second needs no more; undici (or the
 * global fetch, undici inside) cost the agent ~10 MiB of RSS to load and more garbage and
 * CPU per request (a Response, Headers, a web stream, a resource-timing entry each).
 *
 * As with fetch and `redirect: 'error'`, a redirect is a failure (thrown), not followed.
 * The signal aborts the request and the reading of its answer. An answer is read up to
 * MAX_ANSWER_BYTES: the function answers a node's entry in a few KiB, and a larger answer (a
 * broken or hostile peer) fails the request rather than growing the agent's memory.
 */
import type { Agent as HttpAgent, IncomingMessage } from 'node:http';
import { AnswerTooLargeError, nodeHttp } from '../../platform/index.js';

/** What one POST is given (a subset of fetch's RequestInit). */
export interface HttpPostInit {
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
  redirect: 'error';
}

/** The answer (a subset of fetch's Response). */
export interface HttpPostResponse {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/** POSTs on keep-alive connections; `close()` ends them. */
export interface HttpPost {
  (url: string, init: HttpPostInit): Promise<HttpPostResponse>;
  close(): void;
}

/** Most connections per origin (one request at a time is sent; one more while a socket closes). */
const MAX_SOCKETS = 2;
/** The largest answer read (a node's entry of 32 devices is some 40 KiB at most). */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** Builds the poster; https is loaded the first time an https URL is posted to. */
export function createHttpPost(): HttpPost {
  const http = new nodeHttp.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
  let https: Promise<{ agent: HttpAgent; request: typeof nodeHttp.request }> | undefined;
  const transport = (
    protocol: string,
  ):
    | { agent: HttpAgent; request: typeof nodeHttp.request }
    | Promise<{ agent: HttpAgent; request: typeof nodeHttp.request }> => {
    if (protocol !== 'https:') return { agent: http, request: nodeHttp.request };
    https ??= import('node:https').then((m) => ({
      agent: new m.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS }),
      request: m.request,
    }));
    return https;
  };
  const post = async (url: string, init: HttpPostInit): Promise<HttpPostResponse> => {
    const target = new URL(url);
    const { agent, request } = await transport(target.protocol);
    init.signal.throwIfAborted();
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        target,
        {
          method: init.method,
          agent,
          headers: { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) },
          signal: init.signal,
        },
        resolve,
      );
      req.once('error', reject);
      req.end(init.body);
    });
    const status = response.statusCode ?? 0;
    if (status >= 300 && status < 400 && response.headers.location !== undefined) {
      response.destroy();
      throw new Error(`redirected (${status}) to ${response.headers.location}; redirects are not followed`);
    }
    return {
      status,
      headers: { get: (name) => headerValue(response.headers[name.toLowerCase()]) },
      text: () => readBody(response, init.signal, MAX_ANSWER_BYTES),
    };
  };
  return Object.assign(post, {
    close: (): void => {
      http.destroy();
      void https?.then((t) => t.agent.destroy());
    },
  });
}

function headerValue(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * The answer's body as text, of at most `maxBytes`; rejects when it is larger, when the
 * connection ends early or when the signal aborts.
 */
export function readBody(response: IncomingMessage, signal: AbortSignal, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onAbort = (): void => {
      response.destroy();
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    const tooLarge = (): void => {
      signal.removeEventListener('abort', onAbort);
      response.destroy();
      reject(new AnswerTooLargeError(maxBytes));
    };
    if (Number(response.headers['content-length']) > maxBytes) return tooLarge();
    response.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxBytes) tooLarge();
      else chunks.push(chunk);
    });
    response.once('end', () => {
      signal.removeEventListener('abort', onAbort);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    response.once('close', () => {
      signal.removeEventListener('abort', onAbort);
      // After 'end' this settles nothing; before it, the answer was cut short.
      reject(new Error('the connection closed before the answer was complete'));
    });
    response.once('error', (error) => {
      signal.removeEventListener('abort', onAbort);
      reject(error);
    });
  });
}

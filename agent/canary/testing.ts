/**
 * A stand-in OpenAI-compatible inference server (the fake beside the canary's client) for
 * tests, the demo and integration tests: `GET /v1/models`, `POST /v1/chat/completions` and
 * `POST /v1/completions` shaped as vLLM answers them, on a loopback port. Its "model" does
 * sums: asked "What is 2+3?" it answers "5" when behaving right and "6" when wrong, so a test
 * checks the canary's judgement against an answer the stand-in worked out, not a hard-coded
 * one. It can also answer empty, malformed, with an error, slowly (when released), not at all,
 * or cut the connection; it records every request and says when they arrive, so tests never
 * sleep.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How the stand-in answers a completion request. */
export type StandInBehaviour =
  /** The sum the prompt asks for (`What is 2+3?` → `5`). */
  | 'right'
  /** The sum plus one. */
  | 'wrong'
  /** A well-formed answer whose text is empty. */
  | 'empty'
  /** 200 with a body that is JSON but no completion (no choices). */
  | 'malformed'
  /** 200 with a body that is not JSON. */
  | 'not-json'
  /** 500 with an OpenAI-style error. */
  | 'error'
  /** The right answer, held until `release()` (or `slowMs` of real time when set). */
  | 'slow'
  /** Reads the request and never answers (until closed). */
  | 'silent'
  /** Cuts the connection without an answer. */
  | 'reset';

/** One request as the stand-in received it. */
export interface StandInRequest {
  method: string;
  path: string;
  /** The body parsed as JSON (undefined for a GET or a body that is not JSON). */
  body: Record<string, unknown> | undefined;
}

/** The stand-in server. */
export interface StandInInferenceServer {
  /** Its base URL, `http://127.0.0.1:<port>` (the canary's `url`). */
  readonly url: string;
  readonly port: number;
  /** Every request so far, in order of arrival. */
  readonly requests: readonly StandInRequest[];
  /** How completion requests are answered from now on (default `right`). */
  behave(behaviour: StandInBehaviour): void;
  /** Resolves once `count` requests have arrived (at once when they have). */
  received(count: number): Promise<StandInRequest>;
  /** Answers the requests held by `slow`. */
  release(): void;
  close(): Promise<void>;
}

/** The stand-in's settings. */
export interface StandInOptions {
  /** The models `GET /v1/models` lists and the completion endpoints accept (default one). */
  models?: readonly string[];
  /** `slow` answers after this many real milliseconds (for demos); unset: on `release()` only. */
  slowMs?: number;
  /** The port to listen on (default 0: a free one) of 127.0.0.1. */
  port?: number;
}

/** The model the stand-in serves by default. */
export const STAND_IN_MODEL = 'stand-in-sum-1b';

const SUM = /(-?\d{1,9}) ?\+ ?(-?\d{1,9})/;

/** Starts a stand-in on 127.0.0.1. */
export async function startStandInInferenceServer(
  options: StandInOptions = {},
): Promise<StandInInferenceServer> {
  const models = options.models ?? [STAND_IN_MODEL];
  const requests: StandInRequest[] = [];
  const waiters: { count: number; resolve: (request: StandInRequest) => void }[] = [];
  const held: { res: ServerResponse; answer: () => void }[] = [];
  let behaviour: StandInBehaviour = 'right';

  const server: Server = createServer((req, res) => {
    void readBody(req).then((text) => {
      const request = record(req, text);
      requests.push(request);
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(requests[waiter.count - 1] as StandInRequest);
      }
      route(request, res);
    });
  });

  const route = (request: StandInRequest, res: ServerResponse): void => {
    if (request.method === 'GET' && request.path === '/v1/models') {
      const data = models.map((id) => ({ id, object: 'model', owned_by: 'stand-in' }));
      json(res, 200, { object: 'list', data });
      return;
    }
    const api =
      request.path === '/v1/chat/completions'
        ? 'chat'
        : request.path === '/v1/completions'
          ? 'completions'
          : null;
    if (request.method !== 'POST' || api === null) {
      json(res, 404, { error: { message: `no route ${request.method} ${request.path}`, code: 404 } });
      return;
    }
    const model = request.body?.model;
    if (typeof model !== 'string' || !models.includes(model)) {
      json(res, 404, {
        error: {
          message: `The model \`${String(model)}\` does not exist.`,
          type: 'NotFoundError',
          code: 404,
        },
      });
      return;
    }
    answer(res, api, model, promptOf(api, request.body));
  };

  const answer = (res: ServerResponse, api: 'chat' | 'completions', model: string, prompt: string): void => {
    const sum = SUM.exec(prompt);
    const right = sum ? String(Number(sum[1]) + Number(sum[2])) : 'I cannot tell.';
    const completion = (text: string): unknown => completionBody(api, model, text);
    switch (behaviour) {
      case 'right':
        json(res, 200, completion(right));
        return;
      case 'wrong':
        json(res, 200, completion(sum ? String(Number(right) + 1) : 'Maybe.'));
        return;
      case 'empty':
        json(res, 200, completion(''));
        return;
      case 'malformed':
        json(res, 200, { id: 'cmpl-stand-in', object: 'list', data: [] });
        return;
      case 'not-json':
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Bad gateway</html>');
        return;
      case 'error':
        json(res, 500, {
          error: { message: 'CUDA error: an illegal memory access was encountered', code: 500 },
        });
        return;
      case 'slow': {
        const entry = { res, answer: () => json(res, 200, completion(right)) };
        held.push(entry);
        if (options.slowMs !== undefined)
          setTimeout(() => {
            if (held.includes(entry)) {
              held.splice(held.indexOf(entry), 1);
              entry.answer();
            }
          }, options.slowMs).unref();
        return;
      }
      case 'silent':
        return;
      case 'reset':
        res.socket?.destroy();
        return;
    }
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: options.port ?? 0 }, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    behave(next) {
      behaviour = next;
    },
    received(count) {
      const arrived = requests[count - 1];
      if (arrived) return Promise.resolve(arrived);
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    release() {
      for (const entry of held.splice(0)) if (!entry.res.destroyed) entry.answer();
    },
    close: () =>
      new Promise<void>((resolve) => {
        held.length = 0;
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A loopback URL nothing listens on: a port just freed (a connection to it is refused). */
export async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** The question of a request: the last user message (chat) or the prompt (completions). */
function promptOf(api: 'chat' | 'completions', body: Record<string, unknown> | undefined): string {
  if (api === 'completions') return typeof body?.prompt === 'string' ? body.prompt : '';
  const messages = Array.isArray(body?.messages) ? (body.messages as unknown[]) : [];
  const last = messages.at(-1) as { content?: unknown } | undefined;
  return typeof last?.content === 'string' ? last.content : '';
}

/** A completion as vLLM shapes it. */
function completionBody(api: 'chat' | 'completions', model: string, text: string): unknown {
  const choice =
    api === 'chat'
      ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }
      : { index: 0, text, finish_reason: 'stop' };
  return {
    id: 'cmpl-stand-in',
    object: api === 'chat' ? 'chat.completion' : 'text_completion',
    created: 0,
    model,
    choices: [choice],
    usage: { prompt_tokens: 12, completion_tokens: 1, total_tokens: 13 },
  };
}

function record(req: IncomingMessage, text: string): StandInRequest {
  let body: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      body = parsed as Record<string, unknown>;
  } catch {
    body = undefined;
  }
  return { method: req.method ?? '', path: (req.url ?? '').split('?')[0] ?? '', body };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/**
 * One JSON POST endpoint on plain node:http, as the ingest function and the controller's
 * observation endpoint serve theirs (decisions/0055): every answer counted by status and
 * timed; a path other than `path` is a 404, another method a 405 (`Allow: POST`, added by the
 * failure writer); what `post` throws goes to `fail`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from './clock.js';
import { AppError } from './errors.js';
import type { RequestHandler } from './http-server.js';
import { requestPath } from './request-path.js';

/** What the endpoint counts each answer in. */
export interface PostEndpointMetrics {
  readonly requests: { inc(labels: { code: string }): void };
  readonly seconds: { observe(value: number): void };
}

/** Answers 200 with `body` as JSON, never cached (what express's res.json wrote, without an ETag). */
export function writeJsonAnswer(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, {
    'Cache-Control': 'no-store',
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Builds the endpoint's handler. */
export function postEndpoint(options: {
  path: string;
  clock: Clock;
  metrics: PostEndpointMetrics;
  /** Answers a POST to `path`; throws what `fail` answers. */
  post(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Answers a failure (an AppError with its status, or anything else as a 500). */
  fail(res: ServerResponse, error: unknown): void;
}): RequestHandler {
  const { path, clock, metrics, post, fail } = options;
  return async (req: IncomingMessage, res: ServerResponse) => {
    const start = clock.monotonic();
    res.once('finish', () => {
      metrics.requests.inc({ code: String(res.statusCode) });
      metrics.seconds.observe((clock.monotonic() - start) / 1000);
    });
    try {
      if (requestPath(req.url) !== path) throw new AppError('not_found', 'not found', { status: 404 });
      if (req.method !== 'POST')
        throw new AppError('method_not_allowed', `${path} accepts only POST`, { status: 405 });
      await post(req, res);
    } catch (error) {
      fail(res, error);
    }
  };
}

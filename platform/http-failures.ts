/**
 * How an HTTP boundary answers an error (the controller's observation endpoint, the ingest
 * function): an AppError with a status says so itself; body-parser's errors (http-errors,
 * told apart by `type`) map to 400/413/415; anything else is a 500 that names nothing. The
 * message is always one printable line: input is quoted only through `excerpt`.
 */
import type { ServerResponse } from 'node:http';
import { excerpt } from '../core/errors.js';
import { AppError, describeError } from './errors.js';
import type { Logger } from './logger.js';

/** An error answer. */
export interface HttpFailure {
  status: number;
  code: string;
  message: string;
}

/** The errors body-parser raises (http-errors), told apart by `type`. */
const BODY_ERRORS: Readonly<
  Record<string, (maxBodyBytes: number) => Omit<HttpFailure, 'message'> & { message?: string }>
> = {
  'entity.too.large': (max) => ({
    status: 413,
    code: 'body_too_large',
    message: `body larger than ${max} bytes`,
  }),
  'entity.parse.failed': () => ({ status: 400, code: 'invalid_json' }),
  'encoding.unsupported': () => ({
    status: 415,
    code: 'unsupported_encoding',
    message: 'unsupported Content-Encoding',
  }),
  'charset.unsupported': () => ({
    status: 415,
    code: 'unsupported_charset',
    message: 'charset must be utf-8',
  }),
  'request.aborted': () => ({ status: 400, code: 'aborted', message: 'request aborted' }),
  'request.size.invalid': () => ({
    status: 400,
    code: 'invalid_length',
    message: 'body length differs from Content-Length',
  }),
};

/** The answer for `error`: its own status when it has one a client may see, else 500. */
export function httpFailureOf(error: unknown, maxBodyBytes: number): HttpFailure {
  if (error instanceof AppError && error.status !== undefined) {
    return { status: error.status, code: error.code, message: firstLine(error.message) };
  }
  const type = (error as { type?: unknown } | null)?.type;
  const known = typeof type === 'string' ? BODY_ERRORS[type]?.(maxBodyBytes) : undefined;
  if (known) {
    // V8's message quotes the body: escaped and cut to one short line.
    const message = known.message ?? `body is not valid JSON: ${excerpt(describeError(error), 160)}`;
    return { ...known, message };
  }
  return { status: 500, code: 'internal', message: 'internal error' };
}

/** RFC 6750 §3: no error code when no credentials were sent. */
export function wwwAuthenticate(code: string): string {
  const realm = 'Bearer realm="npu-fault"';
  if (code === 'invalid_token') return `${realm}, error="invalid_token"`;
  if (code === 'malformed_token') return `${realm}, error="invalid_request"`;
  return realm;
}

/** An UnauthenticatedError's reason (TokenReview's status.error), for the debug line only. */
export function errorDetail(error: unknown): string | undefined {
  const detail = (error as { detail?: unknown } | null)?.detail;
  return typeof detail === 'string' ? detail : undefined;
}

/** The first line of one of our messages (already printable: they quote input through excerpt). */
function firstLine(text: string): string {
  return (text.split('\n', 1)[0] ?? '').trim();
}

/** Least time between two warn lines of one code from one logger (a flood is counted, not logged). */
export const UNAVAILABLE_LOG_INTERVAL_MS = 10_000;

/** Per logger and code: when the last warn line went, and how many were held back since. */
const unavailableLogged = new WeakMap<Logger, Map<string, { at: number; suppressed: number }>>();

/**
 * Whether a 503 of `code` is logged now, and how many were held back before it: at most one
 * line per UNAVAILABLE_LOG_INTERVAL_MS per code, so a flood of `token_review_busy` answers
 * (each counted by the component's metrics) cannot make logging the bottleneck.
 */
export function unavailableLogTurn(
  log: Logger,
  code: string,
  now: number,
): { log: boolean; suppressed: number } {
  let codes = unavailableLogged.get(log);
  if (!codes) unavailableLogged.set(log, (codes = new Map()));
  const last = codes.get(code);
  if (last && now - last.at < UNAVAILABLE_LOG_INTERVAL_MS) {
    last.suppressed++;
    return { log: false, suppressed: 0 };
  }
  codes.set(code, { at: now, suppressed: 0 });
  return { log: true, suppressed: last?.suppressed ?? 0 };
}

/**
 * Logs and answers a failure: 500s at error, 503s at warn (one line per code per 10 s, with
 * the number held back), the rest at debug (with the
 * TokenReview detail, never in the answer). The body is `{"error": {"code", "message"}}`;
 * 401 carries WWW-Authenticate, 503 Retry-After, 405 Allow. A response already under way is
 * cut instead.
 */
export function sendHttpFailure(
  res: ServerResponse,
  failure: HttpFailure,
  context: { log: Logger; what: string; retryAfterSeconds: number; error: unknown; allow?: string },
): void {
  const { log, what, error } = context;
  if (failure.status === 500) log.error({ err: error }, `${what} request failed`);
  else if (failure.status === 503) {
    const turn = unavailableLogTurn(log, failure.code, performance.now());
    if (turn.log)
      log.warn(
        { err: error, code: failure.code, ...(turn.suppressed > 0 ? { suppressed: turn.suppressed } : {}) },
        `${what} request refused: unavailable`,
      );
  } else
    log.debug(
      { code: failure.code, status: failure.status, detail: errorDetail(error) },
      `${what} request refused`,
    );
  if (res.headersSent) {
    res.destroy();
    return;
  }
  writeHttpFailure(res, failure, context.retryAfterSeconds, context.allow);
}

/** Writes the answer of a failure (no logging). */
export function writeHttpFailure(
  res: ServerResponse,
  failure: HttpFailure,
  retryAfterSeconds: number,
  allow = 'POST',
): void {
  if (failure.status === 401) res.setHeader('WWW-Authenticate', wwwAuthenticate(failure.code));
  if (failure.status === 503) res.setHeader('Retry-After', String(retryAfterSeconds));
  if (failure.status === 405) res.setHeader('Allow', allow);
  res.setHeader('Cache-Control', 'no-store');
  res.statusCode = failure.status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify({ error: { code: failure.code, message: failure.message } }));
}

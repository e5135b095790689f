/**
 * How an HTTP boundary answers an error (the controller's observation endpoint, the ingest
 * function): an AppError with a status says so itself; body-parser's errors (http-errors,
 * told apart by `type`) map to 400/413/415; anything else is a 500 that names nothing. The
 * message is always one printable line: input is quoted only through `excerpt`.
 */
import { excerpt } from '../core/errors.js';
import { AppError, describeError } from './errors.js';

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

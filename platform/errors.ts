/**
 * Errors of the runtime. Every error is an Error subclass with a stable `code`, an optional
 * HTTP `status` (an error knows how a server answers it, as hono's HTTPException) and a
 * `cause`. `toHttpResponse` is the one place that maps an error to a response; it never
 * puts a stack trace or an unexpected error's text in a body.
 *
 * Kubernetes API failures are recognised from whatever client-node 2.x throws: an
 * `ApiException` (numeric `code`, `body` the API's Status, as a JSON string or an object),
 * a watch failure (an Error with `statusCode`), or a Status object itself (the object of a
 * watch `ERROR` event). `K8sApiError.from` turns any of them into one error type, and the
 * predicates (`isConflict`, …) answer for all of these shapes.
 */
import { nodeHttp } from './node-http.js';
import { NpuFaultError } from '../core/errors.js';

/** An error of ours: `code` for machines, one-line `message` for people, `status` for servers. */
export class AppError extends NpuFaultError {
  /** The HTTP status a server answers with (400–599), when the error is a client-facing one. */
  readonly status: number | undefined;
  constructor(code: string, message: string, options?: { status?: number; cause?: unknown }) {
    super(code, message, options?.cause === undefined ? undefined : { cause: options.cause });
    if (options?.status !== undefined) assertErrorStatus(options.status);
    this.status = options?.status;
  }
}

/** An error a server answers with `status` and this message (`new HttpError(404)`). */
export class HttpError extends AppError {
  declare readonly status: number;
  constructor(status: number, message?: string, options?: { cause?: unknown }) {
    assertErrorStatus(status);
    const text = nodeHttp.STATUS_CODES[status] ?? `HTTP ${status}`;
    super(snakeCase(text), message ?? text, { status, cause: options?.cause });
  }
}

/** A failure that retrying cannot fix (controller-runtime's TerminalError): log it, count it, move on. */
export class TerminalError extends AppError {
  constructor(message: string, options?: { code?: string; cause?: unknown }) {
    super(options?.code ?? 'terminal', message, { cause: options?.cause });
  }
}

/** True when `error`, or an error in its `cause` chain, is a TerminalError. */
export function isTerminal(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof TerminalError) return true;
  }
  return false;
}

/** What the API says went wrong: its HTTP status, Status `reason` and `message`. */
interface ApiFailure {
  status: number;
  reason: string | undefined;
  message: string | undefined;
}

/**
 * A failed Kubernetes API call. `apiStatus` is the API's HTTP status and `reason` its Status
 * reason (`Conflict`, `AlreadyExists`, `NotFound`, `Expired`, …). It has no `status` of its
 * own: an upstream failure is not the client's fault, so a server answers it with 500.
 */
export class K8sApiError extends AppError {
  /** The HTTP status the API answered with. */
  readonly apiStatus: number;
  /** The Status reason, or the usual reason for `apiStatus` when the body had none. */
  readonly reason: string;

  constructor(apiStatus: number, reason?: string, message?: string, options?: { cause?: unknown }) {
    const why = reason ?? REASONS[apiStatus] ?? 'Unknown';
    const detail = message ? `: ${firstLine(message)}` : '';
    super(`k8s_${snakeCase(why)}`, `Kubernetes API ${apiStatus} ${why}${detail}`, options);
    this.apiStatus = apiStatus;
    this.reason = why;
  }

  /**
   * The K8sApiError for anything client-node throws or a watch reports, or undefined when
   * `error` did not come from an API answer (a refused connection, a bug): the caller rethrows
   * it then. `throw K8sApiError.from(e) ?? e`.
   */
  static from(error: unknown): K8sApiError | undefined {
    if (error instanceof K8sApiError) return error;
    const failure = apiFailureOf(error);
    if (!failure) return undefined;
    return new K8sApiError(failure.status, failure.reason, failure.message, { cause: error });
  }
}

/** The API's HTTP status carried by `error` (any shape K8sApiError.from accepts), else undefined. */
export function k8sStatusOf(error: unknown): number | undefined {
  if (error instanceof K8sApiError) return error.apiStatus;
  return apiFailureOf(error)?.status;
}

/** 409: a write lost a resourceVersion race (Conflict) or the object exists (AlreadyExists). */
export const isConflict = (error: unknown): boolean => k8sStatusOf(error) === 409;
/** 409 with reason AlreadyExists: a create found the object already there. */
export const isAlreadyExists = (error: unknown): boolean =>
  isConflict(error) && K8sApiError.from(error)?.reason === 'AlreadyExists';
/** 404: the object (or its namespace) does not exist. */
export const isNotFound = (error: unknown): boolean => k8sStatusOf(error) === 404;
/** 410: a watch's resourceVersion is too old (Expired); list again, then watch. */
export const isGone = (error: unknown): boolean => k8sStatusOf(error) === 410;
/** 429: throttled by API priority and fairness, or an eviction blocked by a PodDisruptionBudget. */
export const isTooManyRequests = (error: unknown): boolean => k8sStatusOf(error) === 429;
/** 403: RBAC does not grant the call (or admission refused it). */
export const isForbidden = (error: unknown): boolean => k8sStatusOf(error) === 403;

/** What a server sends for an error: `{ status, body: { error } }`, a one-line message. */
export interface HttpErrorResponse {
  status: number;
  body: { error: string };
}

/**
 * The response for `error`: an error with a client-facing `status` (HttpError, or an AppError
 * given one) answers with that status and its message; anything else is 500 with a generic
 * message, so internals (stacks, upstream texts, paths) never reach a client. Log the error.
 */
export function toHttpResponse(error: unknown): HttpErrorResponse {
  if (error instanceof AppError && error.status !== undefined) {
    return { status: error.status, body: { error: firstLine(error.message) } };
  }
  return { status: 500, body: { error: 'internal error' } };
}

/** One line describing any thrown value (for logs and probe reasons). */
export function describeError(error: unknown): string {
  if (error instanceof Error) return firstLine(error.message) || error.name;
  return firstLine(String(error));
}

/** The usual Status reason of each status the API answers with (k8s.io/apimachinery). */
const REASONS: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

function apiFailureOf(error: unknown): ApiFailure | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const shape = error as { code?: unknown; statusCode?: unknown; body?: unknown; kind?: unknown };
  if (shape.kind === 'Status' && isHttpStatus(shape.code)) return fromStatus(shape.code, error);
  if (!(error instanceof Error)) return undefined;
  // ApiException: a numeric code (system errors such as ECONNREFUSED carry a string code).
  if (isHttpStatus(shape.code)) return fromStatus(shape.code, parseBody(shape.body));
  // Watch: `new Error(statusText)` with `statusCode` set.
  if (isHttpStatus(shape.statusCode))
    return { status: shape.statusCode, reason: undefined, message: undefined };
  return undefined;
}

/** Reads a Kubernetes Status (reason, message) from a body that may not be one. */
function fromStatus(status: number, body: unknown): ApiFailure {
  const fields = body && typeof body === 'object' ? (body as { reason?: unknown; message?: unknown }) : {};
  return {
    status,
    reason: typeof fields.reason === 'string' && fields.reason ? fields.reason : undefined,
    message: typeof fields.message === 'string' ? fields.message : undefined,
  };
}

/** client-node hands the body over as response text for most calls: parse it when it is JSON. */
function parseBody(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

function isHttpStatus(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 599;
}

function assertErrorStatus(status: number): void {
  if (!Number.isInteger(status) || status < 400 || status > 599) {
    throw new RangeError(`an error's HTTP status must be 400-599, got ${status}`);
  }
}

function firstLine(text: string): string {
  return (text.split('\n', 1)[0] ?? '').trim();
}

/** `Not Found` → `not_found`; `AlreadyExists` → `already_exists`. */
function snakeCase(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_|_$/g, '')
    .toLowerCase();
}

import { describe, expect, it } from '@jest/globals';
import { ApiException } from '@kubernetes/client-node';
import {
  AppError,
  HttpError,
  K8sApiError,
  TerminalError,
  describeError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isNotFound,
  isTerminal,
  isTooManyRequests,
  k8sStatusOf,
  toHttpResponse,
} from './errors.js';

/** A Kubernetes Status body as the apiserver sends it. */
function status(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}

/** What client-node's generated APIs throw: the body is the response text. */
function apiException(code: number, body: unknown): ApiException<unknown> {
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new ApiException(code, 'Unknown API Status Code!', text, { 'content-type': 'application/json' });
}

describe('AppError and HttpError', () => {
  it('carries code, status and cause', () => {
    const cause = new Error('disk full');
    const error = new AppError('store_failed', 'could not store', { status: 503, cause });
    expect(error).toBeInstanceOf(Error);
    expect([error.name, error.code, error.status, error.cause]).toEqual([
      'AppError',
      'store_failed',
      503,
      cause,
    ]);
  });

  it('names an HttpError after its status', () => {
    const error = new HttpError(404);
    expect([error.code, error.status, error.message, error.name]).toEqual([
      'not_found',
      404,
      'Not Found',
      'HttpError',
    ]);
    expect(new HttpError(413, 'snapshot too large').message).toBe('snapshot too large');
  });

  it.each([200, 302, 600, 404.5])('refuses %p as an error status', (code) => {
    expect(() => new HttpError(code)).toThrow(RangeError);
  });
});

describe('TerminalError', () => {
  it('is found directly and through a cause chain', () => {
    const terminal = new TerminalError('node object is malformed');
    expect(isTerminal(terminal)).toBe(true);
    expect(isTerminal(new AppError('publish_failed', 'x', { cause: terminal }))).toBe(true);
    expect(isTerminal(new Error('timeout'))).toBe(false);
    expect(isTerminal('not an error')).toBe(false);
  });
});

describe('K8sApiError.from', () => {
  it('reads status, reason and message from an ApiException with a JSON text body', () => {
    const raw = apiException(409, status(409, 'Conflict', 'Operation cannot be fulfilled on leases "x"'));
    const error = K8sApiError.from(raw);
    expect(error).toBeInstanceOf(K8sApiError);
    expect(error?.apiStatus).toBe(409);
    expect(error?.reason).toBe('Conflict');
    expect(error?.code).toBe('k8s_conflict');
    expect(error?.message).toBe('Kubernetes API 409 Conflict: Operation cannot be fulfilled on leases "x"');
    expect(error?.cause).toBe(raw);
    expect(error?.status).toBeUndefined();
  });

  it('reads an ApiException whose body is already an object (KubernetesObjectApi)', () => {
    const raw = new ApiException(409, 'x', status(409, 'AlreadyExists', 'configmaps "s" already exists'), {});
    expect(K8sApiError.from(raw)?.reason).toBe('AlreadyExists');
    expect(K8sApiError.from(raw)?.code).toBe('k8s_already_exists');
  });

  it('falls back to the usual reason when the body is not a Status (401 has no body)', () => {
    const error = K8sApiError.from(new ApiException(401, 'Unauthorized', undefined, {}));
    expect([error?.apiStatus, error?.reason, error?.message]).toEqual([
      401,
      'Unauthorized',
      'Kubernetes API 401 Unauthorized',
    ]);
    expect(K8sApiError.from(apiException(502, undefined))?.reason).toBe('Unknown');
  });

  it('reads a watch failure (an Error with statusCode) and a watch ERROR Status object', () => {
    const watchError = Object.assign(new Error('Gone'), { statusCode: 410 });
    expect(K8sApiError.from(watchError)?.reason).toBe('Expired');
    const event = status(410, 'Expired', 'too old resource version: 1 (42)');
    expect(K8sApiError.from(event)?.message).toBe(
      'Kubernetes API 410 Expired: too old resource version: 1 (42)',
    );
  });

  it('keeps only the first line of a multi-line API message', () => {
    const error = K8sApiError.from(apiException(422, status(422, 'Invalid', 'line one\nline two')));
    expect(error?.message).toBe('Kubernetes API 422 Invalid: line one');
  });

  it.each([
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })],
    ['a plain error', new Error('bug')],
    ['a non-error value', 'text'],
    ['a plain object with a numeric code', { code: 404 }],
    ['null', null],
  ])('returns undefined for %s', (_name, value) => {
    expect(K8sApiError.from(value)).toBeUndefined();
    expect(k8sStatusOf(value)).toBeUndefined();
  });

  it('returns a K8sApiError unchanged', () => {
    const error = new K8sApiError(404);
    expect(K8sApiError.from(error)).toBe(error);
  });
});

describe('status predicates', () => {
  const predicates = { isConflict, isNotFound, isGone, isTooManyRequests, isForbidden };
  const expected: Record<keyof typeof predicates, number> = {
    isConflict: 409,
    isNotFound: 404,
    isGone: 410,
    isTooManyRequests: 429,
    isForbidden: 403,
  };

  it.each(Object.keys(predicates) as (keyof typeof predicates)[])(
    '%s answers for a raw ApiException, a K8sApiError and a watch error, and only for its status',
    (name) => {
      const predicate = predicates[name];
      const code = expected[name];
      const raw = apiException(code, status(code, 'Whatever', 'm'));
      expect(predicate(raw)).toBe(true);
      expect(predicate(K8sApiError.from(raw))).toBe(true);
      expect(predicate(Object.assign(new Error('x'), { statusCode: code }))).toBe(true);
      for (const other of Object.values(expected).filter((c) => c !== code)) {
        expect(predicate(apiException(other, undefined))).toBe(false);
      }
      expect(predicate(new Error('x'))).toBe(false);
    },
  );

  it('tells AlreadyExists from a resourceVersion Conflict', () => {
    expect(isAlreadyExists(apiException(409, status(409, 'AlreadyExists', 'exists')))).toBe(true);
    expect(isAlreadyExists(apiException(409, status(409, 'Conflict', 'modified')))).toBe(false);
  });
});

describe('toHttpResponse', () => {
  it('answers an error with a status with that status and its first line', () => {
    expect(toHttpResponse(new HttpError(400, 'payload.npus[0].temp_c: expected number\nmore'))).toEqual({
      status: 400,
      body: { error: 'payload.npus[0].temp_c: expected number' },
    });
    expect(toHttpResponse(new AppError('busy', 'queue full', { status: 503 })).status).toBe(503);
  });

  it.each([
    ['a plain error', new Error('ENOENT: /etc/secret/path')],
    ['an AppError without a status', new AppError('x', 'internal detail')],
    ['a Kubernetes API failure', new K8sApiError(403, 'Forbidden', 'user "system:sa" cannot get')],
    ['a thrown string', 'oops'],
  ])('answers %s with a generic 500', (_name, error) => {
    expect(toHttpResponse(error)).toEqual({ status: 500, body: { error: 'internal error' } });
  });
});

describe('describeError', () => {
  it('gives one line for any thrown value', () => {
    expect(describeError(new Error('first\nsecond'))).toBe('first');
    expect(describeError(new TypeError(''))).toBe('TypeError');
    expect(describeError(42)).toBe('42');
  });
});

import { describe, expect, it } from '@jest/globals';
import { AppError, K8sApiError } from './errors.js';
import { REDACTED, createLogger, isSecretKey, type Logger } from './logger.js';

/** A logger writing into memory, and the JSON lines it wrote. */
function memoryLogger(
  level = 'info',
  component = 'test',
): { log: Logger; lines: () => Record<string, unknown>[] } {
  const written: string[] = [];
  const log = createLogger({
    level,
    component,
    destination: { write: (line: string) => void written.push(line) },
  });
  return { log, lines: () => written.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('createLogger', () => {
  it('writes one JSON line with a level name, ISO time, component, data and message', () => {
    const { log, lines } = memoryLogger();
    log.info({ node: 'atlas-1', devices: 8 }, 'agent started');
    const [line] = lines();
    expect(line).toMatchObject({
      level: 'info',
      component: 'test',
      node: 'atlas-1',
      devices: 8,
      msg: 'agent started',
    });
    expect(new Date(String(line?.time)).toISOString()).toBe(line?.time);
  });

  it('writes nothing below its level, and nothing at all when silent', () => {
    const { log, lines } = memoryLogger('warn');
    log.info('hidden');
    log.debug('hidden');
    log.warn('shown');
    expect(lines().map((l) => l.msg)).toEqual(['shown']);
    const quiet = memoryLogger('silent');
    quiet.log.fatal('nothing');
    expect(quiet.lines()).toEqual([]);
  });

  it.each(['verbose', 'INFO ', ''])(
    'refuses the unknown level %p in one line naming the choices',
    (level) => {
      expect(() => createLogger({ level })).toThrow(
        /^log level: expected one of trace, debug, info, warn, error, fatal, silent, got/,
      );
    },
  );

  it('adds child bindings to every line of the child only', () => {
    const { log, lines } = memoryLogger();
    const child = log.child({ node: 'atlas-2' });
    child.info('from child');
    log.info('from root');
    expect(lines().map((l) => l.node)).toEqual(['atlas-2', undefined]);
    expect(lines()[0]?.component).toBe('test');
  });
});

describe('redaction', () => {
  it('redacts secrets at any depth and any case, keeping everything else', () => {
    const { log, lines } = memoryLogger();
    const request = {
      headers: { Authorization: 'Bearer abc.def', 'content-type': 'application/json' },
      config: { kube: { bearerToken: 's3cr3t', server: 'https://10.0.0.1' }, password: 'hunter2' },
      users: [{ name: 'sa', token: 'tok' }],
      accessToken: 'x',
      tokenFile: '/var/run/secrets/token', // a path, not a secret
    };
    log.info(request, 'request');
    const line = JSON.stringify(lines()[0]);
    for (const secret of ['abc.def', 's3cr3t', 'hunter2', '"tok"', '"x"']) expect(line).not.toContain(secret);
    expect(lines()[0]).toMatchObject({
      headers: { Authorization: REDACTED, 'content-type': 'application/json' },
      config: { kube: { bearerToken: REDACTED, server: 'https://10.0.0.1' }, password: REDACTED },
      users: [{ name: 'sa', token: REDACTED }],
      accessToken: REDACTED,
      tokenFile: '/var/run/secrets/token',
    });
    expect(request.headers.Authorization).toBe('Bearer abc.def'); // the caller's object is untouched
  });

  it('redacts secrets in child bindings', () => {
    const { log, lines } = memoryLogger();
    log
      .child({ token: 'bound-secret' })
      .child({ node: 'n', auth: { password: 'p' } })
      .info('x');
    expect(lines()[0]).toMatchObject({ token: REDACTED, node: 'n', auth: { password: REDACTED } });
  });

  it('redacts the Authorization header of a request logged as such', () => {
    const { log, lines } = memoryLogger();
    const req = {
      method: 'POST',
      url: '/v1/snapshots',
      headers: { authorization: 'Bearer abc' },
      socket: {},
    };
    log.info(req, 'request');
    expect(lines()[0]).toMatchObject({ req: { method: 'POST', headers: { authorization: REDACTED } } });
  });

  it('keeps Dates as their ISO text', () => {
    const { log, lines } = memoryLogger();
    log.info({ at: new Date(Date.UTC(2026, 0, 2)) }, 'x');
    expect(lines()[0]?.at).toBe('2026-01-02T00:00:00.000Z');
  });

  it.each([
    ['Authorization', true],
    ['bearerToken', true],
    ['serviceAccountToken', true],
    ['PASSWORD', true],
    ['tokenFile', false],
    ['node', false],
  ])('isSecretKey(%p) is %p', (key, secret) => {
    expect(isSecretKey(key)).toBe(secret);
  });
});

describe('errors', () => {
  it('writes an unexpected error with its stack and its message as the line message', () => {
    const { log, lines } = memoryLogger();
    log.error(new TypeError('x is undefined'));
    const [line] = lines();
    expect(line?.msg).toBe('x is undefined');
    expect(line?.err).toMatchObject({ type: 'TypeError', message: 'x is undefined' });
    expect(String((line?.err as { stack?: string }).stack)).toContain('logger.test.ts');
  });

  it('writes our classified errors without a stack, with code, status, reason and cause', () => {
    const { log, lines } = memoryLogger();
    const apiError = new K8sApiError(409, 'Conflict', 'lease modified');
    log.warn(
      { err: new AppError('publish_failed', 'could not publish', { status: 503, cause: apiError }) },
      'retrying',
    );
    expect(lines()[0]?.err).toEqual({
      type: 'AppError',
      message: 'could not publish',
      code: 'publish_failed',
      status: 503,
      cause: {
        type: 'K8sApiError',
        message: 'Kubernetes API 409 Conflict: lease modified',
        code: 'k8s_conflict',
        apiStatus: 409,
        reason: 'Conflict',
      },
    });
  });

  it('serialises errors under any key, inside arrays too', () => {
    const { log, lines } = memoryLogger();
    log.error({ failures: [{ name: 'http', error: new AppError('bind', 'port in use') }] }, 'stopped');
    expect(lines()[0]?.failures).toEqual([
      { name: 'http', error: { type: 'AppError', message: 'port in use', code: 'bind' } },
    ]);
  });
});

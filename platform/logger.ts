/**
 * Structured JSON logging through pino: one line per event, `{"level":"info","time":"…",
 * "component":"controller",…,"msg":"…"}`. Messages are constant; data goes in the object
 * (`log.info({ node, device }, 'device failed')`). Child loggers add bindings
 * (`log.child({ node })`).
 *
 * Secrets never reach a line: values under keys such as `authorization`, `password`, `token`
 * or anything ending in `token` (`bearerToken`, `accessToken`) are replaced by `[REDACTED]`
 * at any depth, in log objects and child bindings alike.
 *
 * Errors (under any key, conventionally `err`) are written as `{ type, message, code, status,
 * reason, cause }`. The stack is kept only for unexpected errors: ours (NpuFaultError and its
 * subclasses, AppError included) are classified failures whose message says everything, and
 * their stacks would only bury the line (a retried 409 at warn level, say).
 */
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { z } from 'zod';
import { NpuFaultError } from '../core/errors.js';

/** A structured logger (pino's). */
export type Logger = PinoLogger;

/** The accepted levels, from most to least verbose; `silent` logs nothing. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** The schema of a level setting, for component config schemas (`level: logLevelSchema`). */
export const logLevelSchema = z.enum(LOG_LEVELS);

/** One of LOG_LEVELS. */
export type LogLevel = z.infer<typeof logLevelSchema>;

/** How to build a root logger. */
export interface LoggerOptions {
  /** Minimum level written (default `info`). Validated: an unknown level throws. */
  level?: string;
  /** The component every line names (`agent`, `controller`, …). */
  component?: string;
  /** Where lines go (default stdout, written synchronously); anything with `write(line)`, e.g. an in-memory sink in tests. */
  destination?: DestinationStream;
}

/** The text that replaces a secret. */
export const REDACTED = '[REDACTED]';

/** Builds the root logger of a component. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = logLevelSchema.safeParse(options.level ?? 'info');
  if (!level.success) {
    throw new RangeError(
      `log level: expected one of ${LOG_LEVELS.join(', ')}, got "${String(options.level)}"`,
    );
  }
  const config = {
    level: level.data,
    base: options.component === undefined ? {} : { component: options.component },
    timestamp: pino.stdTimeFunctions.isoTime,
    // `formatters.log` has already made errors plain; pino's own serializer would redo them.
    serializers: { err: (value: unknown) => (value instanceof Error ? serializeError(value, 0) : value) },
    formatters: {
      // Level names read better than pino's numbers in `kubectl logs` and log stores.
      level: (label: string) => ({ level: label }),
      bindings: (bindings: Record<string, unknown>) => sanitize(bindings, 0) as Record<string, unknown>,
      // Every log object passes here before it is written: secrets out, errors made plain.
      log: (object: Record<string, unknown>) => sanitize(object, 0) as Record<string, unknown>,
    },
  };
  // Synchronous stdout: the lines just before a crash or process.exit are the ones that
  // matter, and an asynchronous buffer can lose them; a component logs a few lines a second.
  const root = pino(config, options.destination ?? pino.destination({ dest: 1, sync: true }));
  // pino formats only the root's bindings; children's go through this wrapper (inherited by
  // every descendant, as pino children are prototype-chained to their parent).
  const pinoChild = root.child;
  root.child = function child(this: Logger, bindings, childOptions) {
    return pinoChild.call(this, sanitize(bindings, 0) as typeof bindings, childOptions);
  } as typeof root.child;
  return root;
}

/** Deepest nesting walked for secrets and errors; deeper values are written as `[…]`. */
const MAX_DEPTH = 8;
const SECRET_KEYS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'password',
  'apikey',
  'api-key',
  'x-api-key',
  'keydata',
  'client-key-data',
]);

/** True for a key whose value must not be logged (matched case-insensitively). */
export function isSecretKey(key: string): boolean {
  const lower = key.toLowerCase();
  return SECRET_KEYS.has(lower) || lower.endsWith('token');
}

/** A copy of `value` with secrets redacted and errors serialised (the original is untouched). */
function sanitize(value: unknown, depth: number): unknown {
  if (value instanceof Error) return serializeError(value, depth);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return '[…]';
  if (Array.isArray(value)) return value.map((item) => sanitize(item, depth + 1));
  // Values with their own JSON form (Date, Buffer, URL) and collections are written as they are.
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  if (value instanceof Map || value instanceof Set || ArrayBuffer.isView(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = isSecretKey(key) && item !== undefined ? REDACTED : sanitize(item, depth + 1);
  }
  return out;
}

/** An error as a plain object: type, message, code, status, reason, cause; stack when unexpected. */
function serializeError(error: Error, depth: number): Record<string, unknown> {
  const fields = error as Error & { code?: unknown; status?: unknown; reason?: unknown; apiStatus?: unknown };
  const out: Record<string, unknown> = { type: error.name, message: error.message };
  for (const key of ['code', 'status', 'apiStatus', 'reason'] as const) {
    if (fields[key] !== undefined) out[key] = fields[key];
  }
  if (!(error instanceof NpuFaultError) && error.stack) out.stack = error.stack;
  if (error.cause !== undefined && depth < MAX_DEPTH) out.cause = sanitize(error.cause, depth + 1);
  return out;
}

/**
 * Errors of pure code. Each carries where the input went wrong (a line or a field path) so
 * every boundary can print one line that names it, never a stack trace.
 */
import type { z } from 'zod';

/** Base of every npu-fault error: a stable machine-readable code plus a one-line message. */
export class NpuFaultError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Tool output or a text file could not be parsed; `line` is 1-based when known. */
export class ParseError extends NpuFaultError {
  readonly line: number | undefined;
  constructor(message: string, line?: number, options?: { cause?: unknown }) {
    super('parse_error', line === undefined ? message : `line ${line}: ${message}`, options);
    this.line = line;
  }
}

/** A structured value failed its schema; `path` names the field (e.g. `payload.npus[3].temp_c`). */
export class ValidationError extends NpuFaultError {
  readonly path: string;
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super('validation_error', path ? `${path}: ${message}` : message, options);
    this.path = path;
  }
}

/** Renders a zod issue path as `a.b[2].c`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}

/** Turns the first issue of a zod error into a ValidationError naming the field. */
export function fromZodError(error: z.ZodError, prefix = ''): ValidationError {
  const issue = error.issues[0];
  if (!issue) return new ValidationError(prefix, 'invalid value');
  const path = formatPath(issue.path);
  const full = prefix && path ? `${prefix}.${path}` : prefix || path;
  return new ValidationError(full, issue.message, { cause: error });
}

/** Parses `value` with `schema`, throwing a one-line ValidationError on failure. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, prefix = ''): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw fromZodError(result.error, prefix);
  return result.data;
}

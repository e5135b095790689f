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

/** How many characters of input an error message quotes at most (before the ellipsis). */
export const EXCERPT_LENGTH = 80;

/** The control characters JSON writes with a letter. */
const JSON_SHORT_ESCAPES: Readonly<Record<string, string>> = {
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

/**
 * Escapes one character the way JSON does, and also every character a terminal would not show
 * as itself: C0/C1 controls, DEL, line and paragraph separators, bidi and zero-width format
 * characters, BOM and lone surrogates. Everything else is returned as it is.
 */
function escapeChar(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  if (char === '\\') return '\\\\';
  if (char.length === 2) return char; // a whole surrogate pair: an astral character
  const short = JSON_SHORT_ESCAPES[char];
  if (short !== undefined) return short;
  const invisible =
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0xad ||
    (code >= 0x200b && code <= 0x200f) ||
    (code >= 0x2028 && code <= 0x202e) ||
    (code >= 0x2060 && code <= 0x206f) ||
    code === 0xfeff ||
    (code >= 0xd800 && code <= 0xdfff);
  return invisible ? `\\u${code.toString(16).padStart(4, '0')}` : char;
}

/**
 * A short, printable excerpt of input for an error message: at most `max` characters after
 * escaping (control and invisible characters escaped as JSON does, `\r` as `\\r`), followed by
 * `…` when the input was longer. An error must never carry an 80 KB line or a raw CR that
 * rewrites the terminal line it is printed on.
 */
export function excerpt(text: string, max = EXCERPT_LENGTH): string {
  let out = '';
  // Iterating by code point keeps a surrogate pair whole; a lone surrogate is one step.
  for (const char of text) {
    const escaped = escapeChar(char);
    if (out.length + escaped.length > max) return `${out}…`;
    out += escaped;
  }
  return out;
}

/** `excerpt(text)` in single quotes, the way parse errors quote what they found. */
export function quoted(text: string, max = EXCERPT_LENGTH): string {
  return `'${excerpt(text, max)}'`;
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

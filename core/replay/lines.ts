/**
 * Splits a byte stream into text lines without holding more than one line in memory, so a
 * trace of any size streams through `replay` (a whole multi-gigabyte file is never one
 * string: V8 refuses strings over about 512 MiB). Lines end with LF; a CR before it is
 * dropped; a last line without LF still counts. A line longer than `maxLineBytes` is an
 * error naming it, not an out-of-memory crash.
 */
import { NpuFaultError } from '../errors.js';

/** One line of input, 1-based. */
export interface Line {
  text: string;
  line: number;
}

/** Default upper bound of one line: far above any snapshot (the ingest limit is 1 MiB). */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;

function decode(parts: Uint8Array[], length: number): string {
  let bytes = parts.length === 1 ? (parts[0] as Uint8Array) : concat(parts, length);
  if (bytes.length > 0 && bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, bytes.length - 1);
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}

function concat(parts: Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Yields the lines of a stream of chunks (bytes, or strings taken as UTF-8). */
export async function* splitLines(
  chunks: AsyncIterable<Uint8Array | string>,
  maxLineBytes = MAX_LINE_BYTES,
): AsyncGenerator<Line> {
  const encoder = new TextEncoder();
  let parts: Uint8Array[] = [];
  let length = 0;
  let line = 0;
  for await (const chunk of chunks) {
    let bytes = typeof chunk === 'string' ? encoder.encode(chunk) : chunk;
    for (let end = bytes.indexOf(LF); end >= 0; end = bytes.indexOf(LF)) {
      parts.push(bytes.subarray(0, end));
      length += end;
      line++;
      if (length > maxLineBytes) throw tooLong(line, maxLineBytes);
      yield { text: decode(parts, length), line };
      parts = [];
      length = 0;
      bytes = bytes.subarray(end + 1);
    }
    if (bytes.length > 0) {
      // Copy: a stream may reuse its buffer for the next chunk.
      parts.push(bytes.slice());
      length += bytes.length;
      if (length > maxLineBytes) throw tooLong(line + 1, maxLineBytes);
    }
  }
  if (length > 0) yield { text: decode(parts, length), line: line + 1 };
}

/** A line over the limit; `line` is 1-based. */
export class LineTooLongError extends NpuFaultError {
  readonly line: number;
  constructor(line: number, maxBytes: number) {
    super('line_too_long', `longer than ${maxBytes} bytes`);
    this.line = line;
  }
}

function tooLong(line: number, max: number): LineTooLongError {
  return new LineTooLongError(line, max);
}

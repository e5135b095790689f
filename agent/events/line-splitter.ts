/**
 * Bytes in, lines out: the text a file or pipe delivers in arbitrary chunks, cut at line
 * ends, with multi-byte characters split across chunks kept whole.
 */
import { StringDecoder } from 'node:string_decoder';

/** Longest line held back waiting for its end; a longer one is handed on in pieces of this size. */
export const MAX_PENDING_LINE = 64 * 1024;

/** Cuts a byte stream into lines (without their `\n`). */
export class LineSplitter {
  #decoder = new StringDecoder('utf8');
  #partial = '';

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxPending = MAX_PENDING_LINE,
  ) {}

  /** Adds a chunk; calls onLine for each line it completes. */
  push(chunk: Buffer): void {
    const text = this.#partial + this.#decoder.write(chunk);
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
      this.onLine(text.slice(start, end));
      start = end + 1;
    }
    let rest = text.slice(start);
    // A writer that never ends its line must not grow memory without bound.
    while (rest.length > this.maxPending) {
      this.onLine(rest.slice(0, this.maxPending));
      rest = rest.slice(this.maxPending);
    }
    this.#partial = rest;
  }

  /** Forgets a partial line (the file was truncated or replaced under it). */
  reset(): void {
    this.#decoder = new StringDecoder('utf8');
    this.#partial = '';
  }
}

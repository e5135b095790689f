/**
 * The observation journal (`--record-observations <file>`): every accepted snapshot, in
 * arrival order, one JSON line each, replayable with `npu-fault replay`. A debugging aid that
 * must never hurt the controller: a write error (disk full, read-only file system) turns the
 * journal off with one log line; past `maxBytes`, or when the disk cannot keep up (more than
 * `maxBufferedBytes` waiting), lines are dropped and counted instead of filling memory.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import type { Logger } from '../platform/index.js';
import type { ObservationJournal } from './engine-host.js';

/** A journal on a file, with its limits. */
export interface FileJournal extends ObservationJournal {
  /** Lines not written (limits, errors). */
  readonly dropped: number;
  /** Flushes and closes the file. */
  close(): Promise<void>;
}

/** Opens (appends to) `path`. */
export function createFileJournal(
  path: string,
  log: Logger,
  options: { maxBytes?: number; maxBufferedBytes?: number } = {},
): FileJournal {
  const maxBytes = options.maxBytes ?? 1024 ** 3;
  const maxBuffered = options.maxBufferedBytes ?? 16 * 1024 ** 2;
  const stream: WriteStream = createWriteStream(path, { flags: 'a' });
  let broken = false;
  let written = 0;
  let dropped = 0;
  let warned = false;
  stream.on('error', (error) => {
    if (broken) return;
    broken = true;
    log.error({ path, err: error.message }, 'observation journal failed; it is off from now on');
  });
  const drop = (why: string): void => {
    dropped++;
    if (warned) return;
    warned = true;
    log.warn({ path, why }, 'observation journal dropping lines');
  };
  return {
    get dropped() {
      return dropped;
    },
    append(lines) {
      if (broken) return void (dropped += lines.length);
      let text = '';
      for (const line of lines) {
        const bytes = Buffer.byteLength(line) + 1;
        if (written + bytes > maxBytes) drop(`reached its limit of ${maxBytes} bytes`);
        else if (stream.writableLength > maxBuffered) drop('the disk does not keep up');
        else {
          written += bytes;
          text += `${line}\n`;
        }
      }
      if (text !== '') stream.write(text);
    },
    close() {
      return new Promise<void>((resolve) => {
        if (broken || stream.closed) return resolve();
        stream.end(() => resolve());
        stream.once('error', () => resolve());
      });
    },
  };
}

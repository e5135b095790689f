/**
 * `tail -F` for a plain file (`--kmsg-path` pointing at a log, and tests): reads what is
 * appended, woken by fs.watch (inotify: within a millisecond) and, where that stays silent
 * (some network and overlay filesystems), by a poll on the injected clock. A file truncated
 * in place is read again from its start; when the path names another file (rotated, or
 * deleted), the reader returns so that the caller opens the new one.
 */
import { watch, type FSWatcher } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { Clock } from '../../platform/index.js';
import { Wakeup } from './wakeup.js';

/** Bytes read at a time. */
const CHUNK = 64 * 1024;

/** What tailFile reports to. */
export interface TailContext {
  signal: AbortSignal;
  clock: Clock;
  /** Time between checks when fs.watch reports nothing. */
  pollMs: number;
  /** Read the file from its start (else from its end at open). */
  fromStart: boolean;
  /** The file is open and being read. */
  opened(): void;
  onChunk(chunk: Buffer): void;
  /** The file was truncated: what was read of a partial line is void. */
  onTruncated(): void;
}

/**
 * Follows `path` until the signal aborts (resolves 'aborted') or the path stops naming the
 * file it opened (resolves 'replaced', after reading that file to its end). Rejects on I/O
 * errors.
 */
export async function tailFile(path: string, ctx: TailContext): Promise<'aborted' | 'replaced'> {
  const handle = await open(path, 'r');
  const wakeup = new Wakeup();
  let watcher: FSWatcher | null = null;
  let cancelPoll = (): void => undefined;
  const onAbort = (): void => wakeup.ring();
  try {
    // Watch before measuring the file, so that nothing appended in between goes unnoticed.
    // Any event may be the file's replacement (a rename over the path reaches the old file as
    // an attribute change), so each pass also checks what the path names.
    watcher = watch(path, () => wakeup.ring());
    watcher.on('error', () => wakeup.ring());
    const poll = (): void => {
      wakeup.ring();
      cancelPoll = ctx.clock.schedule(ctx.pollMs, poll);
    };
    cancelPoll = ctx.clock.schedule(ctx.pollMs, poll);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    const opened = await handle.stat();
    let position = ctx.fromStart ? 0 : opened.size;
    const buffer = Buffer.alloc(CHUNK);
    ctx.opened();
    while (!ctx.signal.aborted) {
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, CHUNK, position);
        if (bytesRead === 0) break;
        position += bytesRead;
        ctx.onChunk(buffer.subarray(0, bytesRead));
      }
      if ((await handle.stat()).size < position) {
        position = 0;
        ctx.onTruncated();
        continue;
      }
      const now = await stat(path).catch(() => null);
      if (now === null || now.ino !== opened.ino || now.dev !== opened.dev) return 'replaced';
      await wakeup.wait();
    }
    return 'aborted';
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    cancelPoll();
    watcher?.close();
    await handle.close();
  }
}

/**
 * The mounted ConfigMap (the mirror in the pod's namespace, CONTRACT §5.5) as a transport.
 *
 * The kubelet's atomic writer never changes `fault.json` in place: it writes a new
 * timestamped directory (`..2026_12_01_10_00_00.123`), points a `..data_tmp` symlink at it,
 * renames that over `..data` and removes the old directory; `fault.json` is a symlink to
 * `..data/fault.json`. Watching the file would follow the old inode forever, so the
 * DIRECTORY is watched, and any event in it re-reads `fault.json` (through the links) after
 * a short debounce. Unchanged content is ignored; a missing or unreadable file is reported
 * and the last good document kept. A slow re-read (`pollMs`) backs the watch up: inotify can
 * drop events, and a directory that does not exist yet cannot be watched.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FAULT_DATA_KEY, VERSION_DATA_KEY } from '../contracts/index.js';
import { parseDocument } from './document.js';
import type { Transport, TransportSink } from './follower.js';
import { FollowError, type ConsumerClock } from './types.js';

/** Where the mounted ConfigMap is. */
export interface FileTransportOptions {
  /** The volume's mount directory (default `/config`). */
  dir?: string;
  /** The data key of the document (default `fault.json`). */
  key?: string;
  /** Quiet time after an event before re-reading, ms (default 20). */
  debounceMs?: number;
  /** Re-read this often anyway, ms (default 10 000). */
  pollMs?: number;
}

export const FILE_DEFAULTS = { dir: '/config', key: FAULT_DATA_KEY, debounceMs: 20, pollMs: 10_000 } as const;

/** Follows a mounted ConfigMap directory. */
export function fileTransport(options: FileTransportOptions, clock: ConsumerClock): Transport {
  const dir = options.dir ?? FILE_DEFAULTS.dir;
  const key = options.key ?? FILE_DEFAULTS.key;
  const debounceMs = options.debounceMs ?? FILE_DEFAULTS.debounceMs;
  const pollMs = options.pollMs ?? FILE_DEFAULTS.pollMs;
  const counts = { events: 0, reads: 0, documents: 0, errors: 0 };
  let sink: TransportSink | undefined;
  let watcher: FSWatcher | undefined;
  let cancelDebounce: (() => void) | undefined;
  let cancelPoll: (() => void) | undefined;
  let lastText: string | undefined;
  let lastError: string | undefined;
  let stopped = false;
  let reading: Promise<void> = Promise.resolve();
  let again = false;

  const report = (error: FollowError): void => {
    counts.errors += 1;
    // The same failure on every poll is reported once, until something else happens.
    if (error.message === lastError) return;
    lastError = error.message;
    sink?.error(error);
  };

  const readOnce = async (): Promise<void> => {
    counts.reads += 1;
    let text: string;
    let version: string | undefined;
    try {
      text = await readFile(join(dir, key), 'utf8');
      version = await readFile(join(dir, VERSION_DATA_KEY), 'utf8').catch(() => undefined);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      report(
        new FollowError(
          code === 'ENOENT' ? 'missing' : 'connection',
          `${join(dir, key)}: ${code ?? String(error)}`,
          {
            cause: error,
          },
        ),
      );
      return;
    }
    if (stopped || text === lastText) return;
    const parsed = parseDocument(text, version?.trim());
    if (parsed instanceof FollowError) return report(parsed);
    lastText = text;
    lastError = undefined;
    counts.documents += 1;
    sink?.document(parsed);
  };

  /** One read at a time; an event during a read asks for one more. */
  const read = (): void => {
    if (stopped) return;
    if (again) return;
    again = true;
    reading = reading.then(async () => {
      again = false;
      if (!stopped) await readOnce();
    });
  };

  const ensureWatcher = (): void => {
    if (watcher || stopped) return;
    try {
      watcher = watch(dir, { persistent: false }, () => {
        counts.events += 1;
        cancelDebounce?.();
        cancelDebounce = clock.schedule(debounceMs, read);
      });
      watcher.on('error', (error) => {
        report(new FollowError('connection', `watching ${dir}: ${error.message}`, { cause: error }));
        watcher?.close();
        watcher = undefined;
      });
    } catch (error) {
      report(
        new FollowError(
          'missing',
          `watching ${dir}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
        ),
      );
    }
  };

  const poll = (): void => {
    cancelPoll = clock.schedule(pollMs, () => {
      if (stopped) return;
      ensureWatcher();
      read();
      poll();
    });
  };

  return {
    kind: 'file',
    start(target) {
      sink = target;
      ensureWatcher();
      read();
      poll();
    },
    async stop() {
      stopped = true;
      cancelDebounce?.();
      cancelPoll?.();
      watcher?.close();
      watcher = undefined;
      await reading;
    },
    stats: () => ({ ...counts }),
  };
}

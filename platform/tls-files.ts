/**
 * A server certificate and key read from files (a Secret mounted as a volume, which
 * cert-manager or an operator renews in place), for a listener that serves TLS. The files are
 * read at start, where a missing or unreadable one fails the start in one line naming it, and
 * then again every `reloadIntervalMs` (60 s): a changed pair replaces the server's secure
 * context for new connections; a pair that does not load (half written, wrong key) keeps the old
 * one and is logged, so a renewal never takes the listener down.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { Clock } from './clock.js';

/** Where the PEM files are. */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** How often the files are read again (default 60 s). */
  reloadIntervalMs?: number;
}

/** A certificate and its key, as PEM. */
export interface TlsPair {
  cert: Buffer;
  key: Buffer;
}

/** Reads and checks the pair (that the key belongs to the certificate); one-line errors naming the file. */
export function readTlsPair(files: TlsFiles): TlsPair {
  const read = (path: string, what: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new Error(`TLS ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  };
  const pair = { cert: read(files.certFile, 'certificate'), key: read(files.keyFile, 'key') };
  try {
    createSecureContext(pair);
  } catch (error) {
    const reason = (error as Error).message.split('\n', 1)[0];
    throw new Error(`TLS certificate ${files.certFile} and key ${files.keyFile} do not load: ${reason}`);
  }
  return pair;
}

/**
 * Reads the pair again every interval and calls `apply` when it changed; `failed` is told of a
 * pair that does not load. Returns the cancel.
 */
export function watchTlsPair(
  files: TlsFiles,
  current: TlsPair,
  clock: Clock,
  apply: (pair: TlsPair) => void,
  failed: (error: Error) => void,
): () => void {
  const interval = files.reloadIntervalMs ?? 60_000;
  let last = current;
  let cancel = (): void => undefined;
  const tick = (): void => {
    try {
      const next = readTlsPair(files);
      if (!next.cert.equals(last.cert) || !next.key.equals(last.key)) {
        last = next;
        apply(next);
      }
    } catch (error) {
      failed(error as Error);
    }
    cancel = clock.schedule(interval, tick);
  };
  cancel = clock.schedule(interval, tick);
  return () => cancel();
}

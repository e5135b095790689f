/**
 * Looks at one path: the device stat() says holds it (to find its mount) and statfs()'s
 * space and inodes. The calls are injectable (FilesystemProbe) so tests give fakes.
 *
 * A stat or statfs on a hung network file system (an NFS model cache whose server is gone)
 * never returns, and holds one of libuv's threads while it waits; with them all held, every
 * file read and DNS lookup of the agent waits too, its pushes included. So a path whose last
 * look has not answered is not looked at again until it does (one thread at most per path),
 * no new look starts while MAX_WAITING looks wait (the others are reported `hung` meanwhile:
 * the agent keeps sending), and a look that takes longer than the timeout is reported `hung`,
 * not waited for.
 */
import { stat, statfs } from 'node:fs/promises';
import { ABORTED, errorCode, untilAborted } from '../../../platform/index.js';

/** statfs(2)'s counts: blocks of `bsize` bytes, inodes. */
export interface FsUsage {
  readonly bsize: number;
  readonly blocks: number;
  /** Free blocks, the root-reserved ones included. */
  readonly bfree: number;
  /** Free blocks for unprivileged users. */
  readonly bavail: number;
  readonly files: number;
  readonly ffree: number;
}

/** The two calls a look makes. Both reject with the errno error. */
export interface FilesystemProbe {
  /** The device holding `path`, as the mount table spells it (`major:minor`). */
  device(path: string): Promise<string>;
  usage(path: string): Promise<FsUsage>;
}

/** A Linux dev_t as `major:minor` (glibc's encoding: 12 bits of major and 20 of minor, split). */
export function deviceNumber(dev: bigint): string {
  const major = ((dev & 0xfff00n) >> 8n) | ((dev & 0xfffff00000000000n) >> 32n);
  const minor = (dev & 0xffn) | ((dev & 0xffffff00000n) >> 12n);
  return `${major}:${minor}`;
}

/** The real calls on node:fs. */
export const nodeFilesystemProbe: FilesystemProbe = {
  device: async (path) => deviceNumber((await stat(path, { bigint: true })).dev),
  async usage(path) {
    const s = await statfs(path);
    return {
      bsize: s.bsize,
      blocks: s.blocks,
      bfree: s.bfree,
      bavail: s.bavail,
      files: s.files,
      ffree: s.ffree,
    };
  },
};

/** What a look found. */
export type PathLook =
  | { readonly status: 'ok'; readonly device: string; readonly usage: FsUsage }
  /** The path does not exist (ENOENT, ENOTDIR): configured but absent, as is common. */
  | { readonly status: 'missing' }
  | { readonly status: 'error'; readonly error: string }
  /** The look has not answered: `timedOut` when this one ran out of time, else an earlier one still waits. */
  | { readonly status: 'hung'; readonly timedOut: boolean };

/** Looks left waiting at once, at most: of libuv's threads (8 in the shipped DaemonSet), the rest stay free. */
export const MAX_WAITING_LOOKS = 2;

/** Looks at paths, one look in flight per path; see the file comment. */
export class PathInspector {
  readonly #probe: FilesystemProbe;
  readonly #timeoutMs: number;
  readonly #inFlight = new Set<string>();
  /** Looks past their timeout that have not answered yet: each holds a libuv thread. */
  readonly #stuck = new Set<string>();

  constructor(probe: FilesystemProbe, timeoutMs: number) {
    this.#probe = probe;
    this.#timeoutMs = timeoutMs;
  }

  /** Paths whose look has not answered yet. */
  get waiting(): number {
    return this.#inFlight.size;
  }

  async look(path: string, signal: AbortSignal): Promise<PathLook> {
    if (this.#inFlight.has(path) || this.#stuck.size >= MAX_WAITING_LOOKS)
      return { status: 'hung', timedOut: false };
    this.#inFlight.add(path);
    const look = (async () => ({
      device: await this.#probe.device(path),
      usage: await this.#probe.usage(path),
    }))();
    const done = (): void => {
      this.#inFlight.delete(path);
      this.#stuck.delete(path);
    };
    look.then(done, done);
    try {
      const outcome = await untilAborted(
        look,
        AbortSignal.any([signal, AbortSignal.timeout(this.#timeoutMs)]),
      );
      if (outcome === ABORTED) {
        if (!signal.aborted && this.#inFlight.has(path)) this.#stuck.add(path);
        return { status: 'hung', timedOut: !signal.aborted };
      }
      return { status: 'ok', ...outcome };
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'missing' };
      return { status: 'error', error: code ?? (error as Error).message ?? String(error) };
    }
  }
}

/**
 * Test support for the filesystems check: mountinfo lines and a scripted FilesystemProbe.
 */
import type { FilesystemProbe, FsUsage } from './inspect.js';

/** One mountinfo line (proc(5)'s layout). */
export function mountInfoLine(entry: {
  id: number;
  device: string;
  mountPoint: string;
  options?: string;
  fsType?: string;
  source?: string;
  superOptions?: string;
  root?: string;
}): string {
  const escape = (path: string) =>
    path.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
  return [
    entry.id,
    1,
    entry.device,
    escape(entry.root ?? '/'),
    escape(entry.mountPoint),
    entry.options ?? 'rw,relatime',
    'shared:1',
    '-',
    entry.fsType ?? 'ext4',
    escape(entry.source ?? '/dev/sda1'),
    entry.superOptions ?? 'rw,errors=remount-ro',
  ].join(' ');
}

/** statfs counts of a 100 GiB file system (4 KiB blocks) with `usedPercent` of it used and no reserve. */
export function usageOf(usedPercent: number, inodesUsedPercent = 10): FsUsage {
  const blocks = 26_214_400;
  const free = Math.round((blocks * (100 - usedPercent)) / 100);
  const files = 6_553_600;
  return {
    bsize: 4096,
    blocks,
    bfree: free,
    bavail: free,
    files,
    ffree: Math.round((files * (100 - inodesUsedPercent)) / 100),
  };
}

/** What the fake probe answers for one path: its device and usage, an errno, or nothing until released. */
export type FakePathAnswer = { device: string; usage: FsUsage } | { errno: string } | 'hang';

/** A scripted FilesystemProbe: answers per path from `answers` (absent: ENOENT). */
export interface FakeFilesystemProbe extends FilesystemProbe {
  /** The paths looked at (each device() call), in order. */
  readonly calls: string[];
  /** Settles every call left hanging with what `answers` says now. */
  release(): void;
}

/** Builds a FakeFilesystemProbe over `answers` (the test may change the map between rounds). */
export function fakeFilesystemProbe(answers: Map<string, FakePathAnswer>): FakeFilesystemProbe {
  const calls: string[] = [];
  let hanging: Array<() => void> = [];
  const settle = <T>(path: string, pick: (a: { device: string; usage: FsUsage }) => T): Promise<T> => {
    const now = (): Promise<T> => {
      const a = answers.get(path) ?? { errno: 'ENOENT' };
      if (a === 'hang')
        return new Promise<T>((resolve, reject) => hanging.push(() => void now().then(resolve, reject)));
      if ('errno' in a)
        return Promise.reject(Object.assign(new Error(`${a.errno}: fake`), { code: a.errno }));
      return Promise.resolve(pick(a));
    };
    return now();
  };
  return {
    calls,
    device(path) {
      calls.push(path);
      return settle(path, (a) => a.device);
    },
    usage: (path) => settle(path, (a) => a.usage),
    release() {
      const waiting = hanging;
      hanging = [];
      for (const go of waiting) go();
    },
  };
}

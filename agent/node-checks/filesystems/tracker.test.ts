import { describe, expect, it } from '@jest/globals';
import type { PathLook } from './inspect.js';
import { parseMountInfo, type MountEntry } from './mountinfo.js';
import { mountInfoLine, usageOf } from './testing.js';
import { FilesystemTracker, usedPercent, type PathObservation } from './tracker.js';

function table(...lines: Parameters<typeof mountInfoLine>[0][]): MountEntry[] {
  return [...parseMountInfo(lines.map(mountInfoLine).join('\n')).entries];
}

const rootRw = { id: 1, device: '8:1', mountPoint: '/', source: '/dev/sda1' };
const rootRo = { ...rootRw, superOptions: 'ro,errors=remount-ro' };
const kubelet = {
  id: 2,
  device: '259:1',
  mountPoint: '/var/lib/kubelet',
  source: '/dev/nvme0n1p1',
  fsType: 'xfs',
};

function seen(path: string, look: PathLook, mustBeWritable = false): PathObservation {
  return { path, agentPath: `/proc/1/root${path}`, mustBeWritable, look };
}
const ok = (device: string, used = 50, inodes = 10): PathLook => ({
  status: 'ok',
  device,
  usage: usageOf(used, inodes),
});

function tracker(minFreeBytes = 0): FilesystemTracker {
  return new FilesystemTracker({ fullPercent: 95, minFreeBytes });
}

describe('FilesystemTracker: read-only', () => {
  it('raises a file system remounted read-only after being seen writable, until it is writable again', () => {
    const t = tracker();
    expect(t.update(table(rootRw), [seen('/', ok('8:1'))]).problems).toEqual([]);
    const ro = t.update(table(rootRo), [seen('/', ok('8:1'))]);
    expect(ro.problems).toEqual([
      { reason: 'filesystem-readonly', message: '/ (/dev/sda1 on /): remounted read-only' },
    ]);
    expect(ro.events).toEqual([{ what: 'readonly', subject: '/ (/dev/sda1 on /)' }]);
    expect(ro.readOnly).toBe(1);
    const rw = t.update(table(rootRw), [seen('/', ok('8:1'))]);
    expect(rw.problems).toEqual([]);
    expect(rw.events).toEqual([{ what: 'writable', subject: '/ (/dev/sda1 on /)' }]);
  });

  it('leaves a file system read-only from the first read alone, unless it must be writable', () => {
    const t = tracker();
    expect(t.update(table(rootRo), [seen('/', ok('8:1'))]).problems).toEqual([]);
    const must = tracker().update(table(rootRo), [seen('/', ok('8:1'), true)]);
    expect(must.problems).toEqual([
      { reason: 'filesystem-readonly', message: '/ (/dev/sda1 on /): read-only, must be writable' },
    ]);
  });

  it('says when only the mount (not the file system) is read-only', () => {
    const t = tracker();
    t.update(table(kubelet), [seen('/var/lib/kubelet', ok('259:1'))]);
    const verdict = t.update(table({ ...kubelet, options: 'ro,relatime' }), [
      seen('/var/lib/kubelet', ok('259:1')),
    ]);
    expect(verdict.problems[0]?.message).toBe(
      '/var/lib/kubelet (/dev/nvme0n1p1 on /var/lib/kubelet): remounted read-only (this mount only)',
    );
  });

  it('keeps read-only as last known while the mount table cannot be read, or a look fails', () => {
    const t = tracker();
    t.update(table(rootRw), [seen('/', ok('8:1'))]);
    const ro = t.update(table(rootRo), [seen('/', ok('8:1'))]);
    expect(t.update(undefined, [seen('/', ok('8:1'))]).problems).toEqual(ro.problems);
    expect(t.update(table(rootRw), [seen('/', { status: 'error', error: 'EIO' })]).problems).toEqual(
      ro.problems,
    );
    expect(t.update(table(rootRw), [seen('/', { status: 'hung', timedOut: false })]).problems).toEqual(
      ro.problems,
    );
  });
});

describe('FilesystemTracker: full', () => {
  it('raises a writable file system at fullPercent of its space or inodes, with what is free', () => {
    const t = tracker();
    expect(t.update(table(rootRw), [seen('/', ok('8:1', 94))]).problems).toEqual([]);
    const full = t.update(table(rootRw), [seen('/', ok('8:1', 95))]);
    expect(full.problems).toEqual([
      { reason: 'filesystem-full', message: '/ (/dev/sda1 on /): 95% used, 5.0 GiB free' },
    ]);
    expect(full.events).toEqual([{ what: 'full', subject: '/ (/dev/sda1 on /)' }]);
    const inodes = t.update(table(rootRw), [seen('/', ok('8:1', 40, 99))]);
    expect(inodes.problems).toEqual([
      { reason: 'filesystem-full', message: '/ (/dev/sda1 on /): inodes 99% used, 60.0 GiB free' },
    ]);
  });

  it('raises one with less than minFreeBytes free, whatever its percentage', () => {
    const verdict = tracker(80 * 1024 ** 3).update(table(rootRw), [seen('/', ok('8:1', 30))]);
    expect(verdict.problems).toEqual([
      { reason: 'filesystem-full', message: '/ (/dev/sda1 on /): 30% used, 70.0 GiB free' },
    ]);
  });

  it("counts root's reserve as used, as df does", () => {
    expect(usedPercent(90, 5)).toBe(95);
    expect(usedPercent(0, 0)).toBeUndefined();
    const reserved = { bsize: 4096, blocks: 1000, bfree: 100, bavail: 40, files: 0, ffree: 0 };
    const verdict = tracker().update(table(rootRw), [
      seen('/', { status: 'ok', device: '8:1', usage: reserved }),
    ]);
    expect(verdict.problems[0]?.message).toBe('/ (/dev/sda1 on /): 96% used, 160.0 KiB free');
  });

  it('never calls a read-only file system full', () => {
    const verdict = tracker().update(table({ ...rootRw, fsType: 'squashfs', options: 'ro' }), [
      seen('/', ok('8:1', 100)),
    ]);
    expect(verdict.problems).toEqual([]);
  });
});

describe('FilesystemTracker: paths', () => {
  it('makes one entry of the paths on one file system', () => {
    const verdict = tracker().update(table(rootRw, kubelet), [
      seen('/', ok('8:1', 99)),
      seen('/var/lib/containerd', ok('8:1', 99)),
      seen('/var/lib/kubelet', ok('259:1', 97)),
    ]);
    expect(verdict.problems).toEqual([
      {
        reason: 'filesystem-full',
        message:
          '/, /var/lib/containerd (/dev/sda1 on /): 99% used, 1.0 GiB free; /var/lib/kubelet (/dev/nvme0n1p1 on /var/lib/kubelet): 97% used, 3.0 GiB free',
      },
    ]);
    expect(verdict.full).toBe(2);
  });

  it('keeps paths of different devices apart even when the mount table places them under one mount', () => {
    // Neither 0:60 nor 0:61 is in the table: both fall back to the mount point above them, /.
    const verdict = tracker().update(table(rootRw), [
      seen('/mnt/a', ok('0:60', 99)),
      seen('/mnt/b', ok('0:61', 97)),
    ]);
    expect(verdict.full).toBe(2);
    expect(verdict.problems[0]?.message).toBe(
      '/mnt/a (/dev/sda1 on /): 99% used, 1.0 GiB free; /mnt/b (/dev/sda1 on /): 97% used, 3.0 GiB free',
    );
  });

  it('says once that a path is missing, raises nothing for it, and says when it is found', () => {
    const t = tracker();
    const missing = t.update(table(rootRw), [seen('/mnt/models', { status: 'missing' }, true)]);
    expect(missing).toMatchObject({ problems: [], events: [{ what: 'missing', subject: '/mnt/models' }] });
    expect(t.update(table(rootRw), [seen('/mnt/models', { status: 'missing' }, true)]).events).toEqual([]);
    const found = t.update(table(rootRw), [seen('/mnt/models', ok('8:1'))]);
    expect(found.events).toEqual([{ what: 'found', subject: '/mnt/models' }]);
  });

  it('names a file system by its paths alone when the mount table has no entry for it', () => {
    const verdict = tracker().update([], [seen('/', ok('8:1', 99))]);
    expect(verdict.problems).toEqual([{ reason: 'filesystem-full', message: '/: 99% used, 1.0 GiB free' }]);
  });
});

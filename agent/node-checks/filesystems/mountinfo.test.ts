import { describe, expect, it } from '@jest/globals';
import {
  findMount,
  isReadOnly,
  parseMountInfo,
  parseMountInfoLine,
  unescapeMountPath,
  type MountEntry,
} from './mountinfo.js';
import { mountInfoLine } from './testing.js';

describe('parseMountInfoLine', () => {
  it("reads proc(5)'s example line", () => {
    expect(
      parseMountInfoLine(
        '36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue',
      ),
    ).toEqual({
      id: 36,
      device: '98:0',
      root: '/mnt1',
      mountPoint: '/mnt/parent',
      options: ['rw', 'noatime'],
      fsType: 'ext3',
      source: '/dev/root',
      superOptions: ['rw', 'errors=continue'],
    });
  });

  it('reads lines with no optional field or several, and unescapes paths', () => {
    const none = parseMountInfoLine('27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard');
    expect(none).toMatchObject({ mountPoint: '/', fsType: 'ext4', source: '/dev/vda' });
    const several = parseMountInfoLine(
      '612 27 0:55 / /mnt/model\\040cache rw shared:300 master:12 propagate_from:2 - nfs4 srv:/models rw,vers=4.2',
    );
    expect(several).toMatchObject({ mountPoint: '/mnt/model cache', fsType: 'nfs4', source: 'srv:/models' });
    expect(unescapeMountPath('/a\\011b\\134c\\012')).toBe('/a\tb\\c\n');
  });

  it('refuses lines that are not mountinfo lines, saying why', () => {
    expect(() => parseMountInfoLine('/dev/sda1 / ext4 rw 0 0')).toThrow(/not a mountinfo line/);
    expect(() => parseMountInfoLine('x 1 8:1 / / rw - ext4 /dev/sda1 rw')).toThrow(/mount id/);
    expect(() => parseMountInfoLine('1 1 sda / / rw - ext4 /dev/sda1 rw')).toThrow(/major:minor/);
    expect(() => parseMountInfoLine('1 1 8:1 / relative rw - ext4 /dev/sda1 rw')).toThrow(/not absolute/);
  });

  it('counts the lines it cannot read and keeps the others', () => {
    const table = parseMountInfo(
      [
        mountInfoLine({ id: 1, device: '8:1', mountPoint: '/' }),
        'garbage',
        '',
        mountInfoLine({ id: 2, device: '8:2', mountPoint: '/var' }),
      ].join('\n'),
    );
    expect(table.entries.map((e) => e.mountPoint)).toEqual(['/', '/var']);
    expect(table.garbage).toBe(1);
  });
});

describe('isReadOnly', () => {
  const entry = (options: string, superOptions: string): MountEntry =>
    parseMountInfoLine(mountInfoLine({ id: 1, device: '8:1', mountPoint: '/', options, superOptions }));
  it("is the mount's ro or the super block's (ext4 after errors=remount-ro sets only the latter)", () => {
    expect(isReadOnly(entry('rw,relatime', 'rw,errors=remount-ro'))).toBe(false);
    expect(isReadOnly(entry('ro,relatime', 'rw'))).toBe(true);
    expect(isReadOnly(entry('rw,relatime', 'ro,errors=remount-ro'))).toBe(true);
    expect(isReadOnly(entry('rw,errors=remount-ro', 'rw'))).toBe(false);
  });
});

describe('findMount', () => {
  const table = parseMountInfo(
    [
      mountInfoLine({ id: 10, device: '8:1', mountPoint: '/' }),
      mountInfoLine({ id: 11, device: '259:2', mountPoint: '/data', source: '/dev/nvme0n1p2' }),
      mountInfoLine({
        id: 12,
        device: '259:2',
        mountPoint: '/var/lib/kubelet',
        root: '/kubelet',
        source: '/dev/nvme0n1p2',
      }),
      mountInfoLine({ id: 13, device: '0:50', mountPoint: '/proc', fsType: 'proc', source: 'proc' }),
      mountInfoLine({ id: 14, device: '8:1', mountPoint: '/var/library', source: '/dev/sda1' }),
      mountInfoLine({
        id: 15,
        device: '259:2',
        mountPoint: '/data',
        options: 'ro',
        source: '/dev/nvme0n1p2',
      }),
    ].join('\n'),
  ).entries;
  const find = (hostPath: string, device: string, agentPath = `/proc/1/root${hostPath}`) =>
    findMount(table, { hostPath, agentPath, device })?.id;

  it("takes the deepest mount point of the path's device above it", () => {
    expect(find('/var/lib/kubelet', '259:2')).toBe(12);
    expect(find('/var/lib', '8:1')).toBe(10); // /var/library does not hold /var/lib
  });

  it('takes the later of two mounts on one mount point (the one on top)', () => {
    expect(find('/data/models', '259:2')).toBe(15);
  });

  it("answers a path reached through a symbolic link (no mount point of its device above it) with the device's whole mount", () => {
    // /var/lib/containerd -> /data/containerd on the host: stat says 259:2, no 259:2 mount point is above the link.
    const linked = findMount(
      table.filter((e) => e.id !== 11 && e.id !== 15),
      { hostPath: '/var/lib/containerd', agentPath: '/proc/1/root/var/lib/containerd', device: '259:2' },
    );
    expect(linked?.id).toBe(12);
    expect(findMount(table, { hostPath: '/srv/x', agentPath: '/srv/x', device: '259:2' })?.id).toBe(15);
  });

  it("matches mount points as the agent reaches the path, for a pod's own table", () => {
    const pod = parseMountInfo(
      [
        mountInfoLine({ id: 1, device: '0:40', mountPoint: '/', fsType: 'overlay', source: 'overlay' }),
        mountInfoLine({ id: 2, device: '8:1', mountPoint: '/host', options: 'ro' }),
        mountInfoLine({ id: 3, device: '259:2', mountPoint: '/host/var/lib/kubelet', root: '/kubelet' }),
      ].join('\n'),
    ).entries;
    expect(
      findMount(pod, {
        hostPath: '/var/lib/kubelet/pods',
        agentPath: '/host/var/lib/kubelet/pods',
        device: '259:2',
      })?.id,
    ).toBe(3);
    expect(findMount(pod, { hostPath: '/', agentPath: '/host', device: '8:1' })?.id).toBe(2);
  });

  it('falls back to the deepest mount point above the host path when no mount has the device (btrfs subvolumes)', () => {
    expect(find('/var/lib/kubelet/pods', '0:77')).toBe(12);
    expect(findMount([], { hostPath: '/', agentPath: '/', device: '8:1' })).toBeUndefined();
  });
});

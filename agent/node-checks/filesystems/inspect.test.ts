import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../probe/testing.js';
import { MAX_WAITING_LOOKS, PathInspector, deviceNumber, nodeFilesystemProbe } from './inspect.js';
import { findMount, parseMountInfo } from './mountinfo.js';
import { fakeFilesystemProbe, usageOf, type FakePathAnswer } from './testing.js';

const signal = new AbortController().signal;

describe('deviceNumber', () => {
  /** glibc's makedev. */
  const makedev = (major: bigint, minor: bigint): bigint =>
    ((major & 0xfffn) << 8n) | ((major & ~0xfffn) << 32n) | (minor & 0xffn) | ((minor & ~0xffn) << 12n);

  it("splits glibc's dev_t encoding into major:minor", () => {
    expect(deviceNumber(0x801n)).toBe('8:1'); // sda1
    expect(deviceNumber(makedev(259n, 3n))).toBe('259:3'); // nvme0n1p3
    expect(deviceNumber(makedev(0n, 300n))).toBe('0:300'); // a minor past 255
    expect(deviceNumber(makedev(0x1234n, 0x56789n))).toBe(`${0x1234}:${0x56789}`); // both past their low bits
  });
});

describe('nodeFilesystemProbe on this machine', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('fs-probe-');
  });
  afterEach(() => dir.remove());

  it("gives the device this process's mount table lists for the path, and statfs's counts", async () => {
    const device = await nodeFilesystemProbe.device(dir.path);
    const mounts = parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8')).entries;
    const mount = findMount(mounts, { hostPath: dir.path, agentPath: dir.path, device });
    expect(mount?.device).toBe(device);
    const usage = await nodeFilesystemProbe.usage(dir.path);
    expect(usage.blocks).toBeGreaterThan(0);
    expect(usage.bavail).toBeLessThanOrEqual(usage.bfree);
  });

  it('rejects with the errno for a path that does not exist', async () => {
    await expect(nodeFilesystemProbe.device(join(dir.path, 'nope'))).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });
});

describe('PathInspector', () => {
  it('looks at a path: device and usage', async () => {
    const probe = fakeFilesystemProbe(new Map([['/a', { device: '8:1', usage: usageOf(50) }]]));
    await expect(new PathInspector(probe, 1000).look('/a', signal)).resolves.toEqual({
      status: 'ok',
      device: '8:1',
      usage: usageOf(50),
    });
  });

  it('says missing for ENOENT and ENOTDIR, and names other errors', async () => {
    const answers = new Map<string, FakePathAnswer>([
      ['/file/x', { errno: 'ENOTDIR' }],
      ['/secret', { errno: 'EACCES' }],
    ]);
    const inspector = new PathInspector(fakeFilesystemProbe(answers), 1000);
    await expect(inspector.look('/absent', signal)).resolves.toEqual({ status: 'missing' });
    await expect(inspector.look('/file/x', signal)).resolves.toEqual({ status: 'missing' });
    await expect(inspector.look('/secret', signal)).resolves.toEqual({ status: 'error', error: 'EACCES' });
  });

  it('gives up on a look past the timeout, and does not look again until it answers', async () => {
    const answers = new Map<string, FakePathAnswer>([['/nfs', 'hang']]);
    const probe = fakeFilesystemProbe(answers);
    const inspector = new PathInspector(probe, 50);
    await expect(inspector.look('/nfs', signal)).resolves.toEqual({ status: 'hung', timedOut: true });
    expect(inspector.waiting).toBe(1);
    await expect(inspector.look('/nfs', signal)).resolves.toEqual({ status: 'hung', timedOut: false });
    expect(probe.calls).toEqual(['/nfs']);
    answers.set('/nfs', { device: '0:55', usage: usageOf(10) });
    probe.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(inspector.waiting).toBe(0);
    await expect(inspector.look('/nfs', signal)).resolves.toMatchObject({ status: 'ok', device: '0:55' });
    expect(probe.calls).toEqual(['/nfs', '/nfs']);
  });

  it('starts no new look while MAX_WAITING_LOOKS wait, so hung mounts cannot take every thread', async () => {
    const answers = new Map<string, FakePathAnswer>([
      ['/nfs-a', 'hang'],
      ['/nfs-b', 'hang'],
    ]);
    const probe = fakeFilesystemProbe(answers);
    const inspector = new PathInspector(probe, 20);
    expect(MAX_WAITING_LOOKS).toBe(2);
    await inspector.look('/nfs-a', signal);
    await inspector.look('/nfs-b', signal);
    await expect(inspector.look('/', signal)).resolves.toEqual({ status: 'hung', timedOut: false });
    expect(probe.calls).toEqual(['/nfs-a', '/nfs-b']);
    answers.set('/nfs-a', { device: '0:55', usage: usageOf(10) });
    answers.set('/nfs-b', { device: '0:56', usage: usageOf(10) });
    probe.release();
    await new Promise((resolve) => setImmediate(resolve));
    await expect(inspector.look('/', signal)).resolves.toMatchObject({ status: 'missing' });
  });

  it('stops waiting when the caller aborts, without calling it a timeout', async () => {
    const inspector = new PathInspector(fakeFilesystemProbe(new Map([['/nfs', 'hang']])), 60_000);
    const stop = new AbortController();
    const look = inspector.look('/nfs', stop.signal);
    stop.abort();
    await expect(look).resolves.toEqual({ status: 'hung', timedOut: false });
  });

  it('reads a real file system through the real probe', async () => {
    const dir = tempDir('fs-inspect-');
    try {
      writeFileSync(join(dir.path, 'f'), 'x');
      await expect(
        new PathInspector(nodeFilesystemProbe, 5000).look(join(dir.path, 'f', 'below'), signal),
      ).resolves.toEqual({
        status: 'missing',
      });
    } finally {
      dir.remove();
    }
  });
});

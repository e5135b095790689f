import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRegistry, type Registry } from '../../../platform/index.js';
import { metricValue } from '../testing.js';
import { memoryLogger, tempDir } from '../../probe/testing.js';
import {
  createFilesystemsCheck,
  filesystemsCheckConfigSchema,
  type FilesystemsCheckConfig,
} from './index.js';
import { fakeFilesystemProbe, mountInfoLine, usageOf, type FakePathAnswer } from './testing.js';

const T0 = Date.UTC(2026, 0, 1);
const signal = new AbortController().signal;

describe('filesystemsCheckConfigSchema', () => {
  it("defaults to the host's root, containerd and kubelet through /proc/1/root, and the host's mount table", () => {
    expect(filesystemsCheckConfigSchema.parse({})).toEqual({
      enabled: true,
      intervalMs: 30000,
      hostRoot: '/proc/1/root',
      mountTable: '/proc/1/mountinfo',
      paths: ['/', '/var/lib/containerd', '/var/lib/kubelet'],
      modelCachePaths: [],
      writablePaths: ['/var/lib/kubelet', '/var/lib/containerd'],
      fullPercent: 95,
      minFreeBytes: 0,
      statTimeoutMs: 5000,
    });
  });

  it('refuses relative paths, `..` and out-of-range thresholds, naming the field', () => {
    const result = filesystemsCheckConfigSchema.safeParse({
      paths: ['var/lib'],
      modelCachePaths: ['/mnt/../etc'],
      fullPercent: 0,
    });
    expect(result.error?.issues.map((i) => i.path.join('.'))).toEqual([
      'paths.0',
      'modelCachePaths.0',
      'fullPercent',
    ]);
  });
});

describe('createFilesystemsCheck', () => {
  let dir: ReturnType<typeof tempDir>;
  let registry: Registry;
  let logged: ReturnType<typeof memoryLogger>;
  let mountTable: string;
  let answers: Map<string, FakePathAnswer>;
  let probe: ReturnType<typeof fakeFilesystemProbe>;

  const writeTable = (rootSuper = 'rw,errors=remount-ro'): void =>
    writeFileSync(
      mountTable,
      [
        mountInfoLine({
          id: 21,
          device: '8:1',
          mountPoint: '/',
          source: '/dev/sda1',
          superOptions: rootSuper,
        }),
        mountInfoLine({
          id: 22,
          device: '259:1',
          mountPoint: '/var/lib/kubelet',
          source: '/dev/nvme0n1p1',
          fsType: 'xfs',
        }),
        mountInfoLine({
          id: 23,
          device: '0:60',
          mountPoint: '/mnt/nfs',
          source: 'srv:/models',
          fsType: 'nfs4',
        }),
        '',
      ].join('\n'),
    );

  beforeEach(() => {
    dir = tempDir('fs-check-');
    registry = createRegistry('agent');
    logged = memoryLogger();
    mountTable = join(dir.path, 'mountinfo');
    writeTable();
    answers = new Map<string, FakePathAnswer>([
      ['/host/', { device: '8:1', usage: usageOf(40) }],
      ['/host/var/lib/containerd', { device: '8:1', usage: usageOf(40) }],
      ['/host/var/lib/kubelet', { device: '259:1', usage: usageOf(20) }],
    ]);
    probe = fakeFilesystemProbe(answers);
  });
  afterEach(() => dir.remove());

  const build = (overrides: Partial<FilesystemsCheckConfig> = {}) =>
    createFilesystemsCheck(
      filesystemsCheckConfigSchema.parse({ hostRoot: '/host', mountTable, statTimeoutMs: 100, ...overrides }),
      { log: logged.log, registry, probe },
    );

  it('looks at each path through hostRoot and raises a root file system remounted read-only after errors', async () => {
    const check = build();
    expect(check.name).toBe('filesystems');
    expect(await check.run(T0, signal)).toEqual([]);
    expect(probe.calls.sort()).toEqual(['/host/', '/host/var/lib/containerd', '/host/var/lib/kubelet']);
    writeTable('ro,errors=remount-ro');
    expect(await check.run(T0 + 30_000, signal)).toEqual([
      {
        reason: 'filesystem-readonly',
        message: '/, /var/lib/containerd (/dev/sda1 on /): remounted read-only',
      },
    ]);
    expect(await metricValue(registry, 'filesystems_readonly')).toBe(1);
  });

  it('raises a full file system with its free space', async () => {
    answers.set('/host/var/lib/kubelet', { device: '259:1', usage: usageOf(98) });
    const check = build();
    expect(await check.run(T0, signal)).toEqual([
      {
        reason: 'filesystem-full',
        message: '/var/lib/kubelet (/dev/nvme0n1p1 on /var/lib/kubelet): 98% used, 2.0 GiB free',
      },
    ]);
    expect(await metricValue(registry, 'filesystems_full')).toBe(1);
  });

  it('skips a missing model cache with one log line and a gauge, raising nothing', async () => {
    const check = build({ modelCachePaths: ['/mnt/models'] });
    for (let i = 0; i < 3; i++) expect(await check.run(T0 + i * 30_000, signal)).toEqual([]);
    expect(await metricValue(registry, 'filesystem_paths_missing')).toBe(1);
    expect(logged.lines.filter((l) => l.msg === 'watched path absent on the host: not checked')).toEqual([
      expect.objectContaining({ subject: '/mnt/models' }),
    ]);
  });

  it('skips a path that hangs until it answers, counting the timeout', async () => {
    answers.set('/host/mnt/nfs', 'hang');
    const check = build({ modelCachePaths: ['/mnt/nfs'] });
    expect(await check.run(T0, signal)).toEqual([]);
    expect(await check.run(T0 + 30_000, signal)).toEqual([]);
    expect(await metricValue(registry, 'filesystem_stat_timeouts_total')).toBe(1);
    expect(await metricValue(registry, 'filesystem_paths_waiting')).toBe(1);
    expect(probe.calls.filter((p) => p === '/host/mnt/nfs')).toHaveLength(1);
    expect(
      logged.lines.filter((l) => String(l.msg).startsWith('a watched path does not answer')),
    ).toHaveLength(1);
    answers.set('/host/mnt/nfs', { device: '0:60', usage: usageOf(99) });
    probe.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(await check.run(T0 + 60_000, signal)).toEqual([
      { reason: 'filesystem-full', message: '/mnt/nfs (srv:/models on /mnt/nfs): 99% used, 1.0 GiB free' },
    ]);
    expect(await metricValue(registry, 'filesystem_paths_waiting')).toBe(0);
  });

  it('keeps read-only states while the mount table cannot be read, counting it and logging once', async () => {
    const check = build();
    await check.run(T0, signal);
    writeTable('ro');
    const ro = await check.run(T0 + 30_000, signal);
    writeFileSync(mountTable, 'not a mount table\n');
    expect(await check.run(T0 + 60_000, signal)).toEqual(ro);
    expect(await check.run(T0 + 90_000, signal)).toEqual(ro);
    expect(await metricValue(registry, 'filesystem_read_errors_total', { source: 'mounts' })).toBe(2);
    expect(await metricValue(registry, 'filesystem_read_errors_total', { source: 'garbage' })).toBe(2);
    expect(logged.lines.filter((l) => String(l.msg).startsWith('cannot read the mount table'))).toHaveLength(
      1,
    );
  });

  it('counts a path it cannot look at, and logs it once', async () => {
    answers.set('/host/var/lib/kubelet', { errno: 'EACCES' });
    const check = build();
    await check.run(T0, signal);
    await check.run(T0 + 30_000, signal);
    expect(await metricValue(registry, 'filesystem_read_errors_total', { source: 'stat' })).toBe(2);
    expect(
      logged.lines.filter((l) => l.msg === 'cannot look at a watched path; its last state stands'),
    ).toEqual([expect.objectContaining({ path: '/host/var/lib/kubelet', error: 'EACCES' })]);
  });

  it('reads nothing and raises nothing when disabled', async () => {
    answers.set('/host/', { device: '8:1', usage: usageOf(100) });
    expect(await build({ enabled: false }).run(T0, signal)).toEqual([]);
    expect(probe.calls).toEqual([]);
  });

  it("works on this machine's own file systems with the real probe and mount table", async () => {
    const real = createFilesystemsCheck(
      filesystemsCheckConfigSchema.parse({
        hostRoot: '/',
        mountTable: '/proc/self/mountinfo',
        paths: [dir.path],
        writablePaths: [],
        fullPercent: 1,
      }),
      { log: logged.log, registry },
    );
    const [problem] = await real.run(T0, signal);
    expect(problem?.reason).toBe('filesystem-full');
    expect(problem?.message).toMatch(
      new RegExp(`^${dir.path} \\(.+ on /.*\\): \\d+% used, (inodes \\d+% used, )?[\\d.]+ [KMGT]?i?B free$`),
    );
  });
});

import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isOrphaned, killControlPlaneSync, stopControlPlane } from './control-plane.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A state directory whose state.json names `pids` as its processes and `binDir` as their home. */
async function stateNaming(pids: Record<string, number>, ownerPid: number, binDir: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'npu-fault-stale-'));
  const etcdDataDir = join(dir, 'etcd-data');
  await mkdir(etcdDataDir);
  const state = { stateDir: dir, binDir, etcdDataDir, pids, ports: {}, ownerPid };
  await writeFile(join(dir, 'state.json'), JSON.stringify(state));
  return dir;
}

/** A state directory whose state.json names `pid` as its etcd (as a stale file would). */
function staleState(pid: number, ownerPid: number): Promise<string> {
  return stateNaming({ etcd: pid }, ownerPid, '/nonexistent/npu-fault/bin');
}

const binDirs: string[] = [];
afterEach(async () => {
  await Promise.all(binDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A bin dir with `sleep` in it, so a process started from it counts as one of the plane's. */
async function binDirWithSleep(): Promise<string> {
  const binDir = await mkdtemp(join(tmpdir(), 'npu-fault-bin-'));
  binDirs.push(binDir);
  await symlink('/usr/bin/sleep', join(binDir, 'sleep'));
  return binDir;
}

function sleepFrom(binDir: string): ChildProcess {
  return spawn(join(binDir, 'sleep'), ['30'], { stdio: 'ignore' });
}

describe('stopping a control plane from a stale state file', () => {
  it('never signals a pid that now belongs to another program, and still removes the state', async () => {
    const bystander = spawn('sleep', ['30'], { stdio: 'ignore' });
    const pid = bystander.pid as number;
    try {
      const dir = await staleState(pid, pid);
      await stopControlPlane(dir);
      expect(alive(pid)).toBe(true);
      expect(existsSync(dir)).toBe(false);

      const again = await staleState(pid, pid);
      killControlPlaneSync(again);
      expect(alive(pid)).toBe(true);
      expect(existsSync(again)).toBe(false);
    } finally {
      bystander.kill('SIGKILL');
    }
  });

  it('calls a plane orphaned only when the process that started it is gone', async () => {
    const mine = await staleState(999_999_999, process.pid);
    expect(await isOrphaned(mine)).toBe(false);
    const orphan = await staleState(999_999_999, 999_999_998);
    expect(await isOrphaned(orphan)).toBe(true);
    await stopControlPlane(mine);
    await stopControlPlane(orphan);
  });
});

describe('stopping a control plane whose processes run', () => {
  it('terminates every recorded process started from its bin dir and removes its state and etcd data', async () => {
    const binDir = await binDirWithSleep();
    const children = [sleepFrom(binDir), sleepFrom(binDir)];
    const exits = children.map((child) => once(child, 'exit'));
    const dir = await stateNaming(
      { etcd: children[0]?.pid ?? 0, kwok: children[1]?.pid ?? 0 },
      process.pid,
      binDir,
    );

    await stopControlPlane(dir);

    // A graceful stop: SIGTERM, not the SIGKILL that follows only a process that ignores it.
    expect((await Promise.all(exits)).map(([, signal]) => signal)).toEqual(['SIGTERM', 'SIGTERM']);
    expect(existsSync(join(dir, 'etcd-data'))).toBe(false);
    expect(existsSync(dir)).toBe(false);
  });

  it('SIGKILLs them synchronously from an exit handler', async () => {
    const binDir = await binDirWithSleep();
    const child = sleepFrom(binDir);
    const exit = once(child, 'exit');
    const dir = await stateNaming({ etcd: child.pid ?? 0 }, process.pid, binDir);

    killControlPlaneSync(dir);

    expect(existsSync(dir)).toBe(false);
    expect((await exit)[1]).toBe('SIGKILL');
  });
});

import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
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

/** A state directory whose state.json names `pid` as its etcd (as a stale file would). */
async function staleState(pid: number, ownerPid: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'npu-fault-stale-'));
  const state = {
    stateDir: dir,
    binDir: '/nonexistent/npu-fault/bin',
    etcdDataDir: join(dir, 'etcd-data'),
    pids: { etcd: pid },
    ports: {},
    ownerPid,
  };
  await writeFile(join(dir, 'state.json'), JSON.stringify(state));
  return dir;
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

/**
 * hack/control-plane.ts cleans up after itself: a start that fails half-way leaves no
 * process and no state behind (a leaked etcd would hold tmpfs memory until the machine dies).
 */
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane } from '../hack/control-plane.js';

function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

describe('control plane start-up', () => {
  it('stops what it started and removes its state when a step fails', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'npu-fault-failing-plane-'));
    const lines: string[] = [];
    // A 1 ms readiness budget: etcd is spawned, then the wait for it fails at once.
    await expect(startControlPlane({ stateDir, timeoutMs: 1, log: (l) => lines.push(l) })).rejects.toThrow(
      /etcd did not become ready/,
    );
    const etcdData = /\(data (\S+)\)/.exec(lines.join('\n'))?.[1];
    expect(etcdData).toBeDefined();
    expect(existsSync(stateDir)).toBe(false);
    expect(existsSync(etcdData as string)).toBe(false);
    expect(processesMentioning(etcdData as string)).toEqual([]);
  });
});

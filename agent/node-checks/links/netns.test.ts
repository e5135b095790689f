/**
 * The links check on a real kernel: a veth pair in a network namespace this test creates (and
 * removes, also when it fails), read through `/proc/<pid>/root/sys` of a process living in that
 * namespace, as the DaemonSet reads the host's through `/proc/1/root/sys`. No traffic is sent:
 * only links go up and down. Needs root and `ip`; skipped otherwise, saying why.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRegistry } from '../../../platform/index.js';
import { fakeExecTool, memoryLogger, waitFor } from '../../probe/testing.js';
import { createLinksCheck, linksCheckConfigSchema } from './index.js';

function why(): string | null {
  if (process.getuid?.() !== 0) return 'needs root to create a network namespace';
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'needs the ip command';
  }
  return null;
}

const skipped = why();
if (skipped !== null) console.warn(`links/netns.test.ts skipped: ${skipped}`);
const describeWithNetns = skipped === null ? describe : describe.skip;

describeWithNetns('the links check on a veth pair in a namespace of its own', () => {
  const ns = `npf-links-${process.pid}`;
  const ip = (...args: string[]): void => void execFileSync('ip', ['-n', ns, ...args], { stdio: 'ignore' });
  let holder: ChildProcess;
  let sysfsRoot: string;

  beforeAll(async () => {
    execFileSync('ip', ['netns', 'add', ns], { stdio: 'ignore' });
    ip('link', 'add', 'va', 'type', 'veth', 'peer', 'name', 'vb');
    ip('link', 'set', 'va', 'up');
    ip('link', 'set', 'vb', 'up');
    // `ip netns exec` mounts a sysfs of the namespace in a mount namespace of its own; its
    // process's root shows it to this one.
    holder = spawn('ip', ['netns', 'exec', ns, 'sleep', '300'], { stdio: 'ignore' });
    sysfsRoot = `/proc/${holder.pid}/root/sys`;
    await waitFor(() => existsSync(`${sysfsRoot}/class/net/va/operstate`), "the namespace's sysfs", 10_000);
    await waitFor(
      () =>
        existsSync(`${sysfsRoot}/class/net/va/carrier`) &&
        readFileSync(`${sysfsRoot}/class/net/va/carrier`, 'utf8').trim() === '1',
      'va carrier up',
      10_000,
    );
  });

  afterAll(() => {
    holder?.kill('SIGKILL');
    try {
      execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
    } catch {
      // Not created: nothing to remove.
    }
  });

  it('raises a configured interface whose peer goes down, then one deleted as gone', async () => {
    const registry = createRegistry('agent');
    const check = createLinksCheck(
      linksCheckConfigSchema.parse({ sysfsRoot, interfaces: ['va'], hccnEnabled: false }),
      { log: memoryLogger().log, registry, exec: fakeExecTool(() => '') },
    );
    const t0 = Date.UTC(2026, 0, 1);
    expect(await check.run(t0, new AbortController().signal)).toEqual([]);

    ip('link', 'set', 'vb', 'down');
    await waitFor(
      () => readFileSync(`${sysfsRoot}/class/net/va/operstate`, 'utf8').trim() !== 'up',
      'va operstate down',
      10_000,
    );
    expect(await check.run(t0 + 5000, new AbortController().signal)).toEqual([
      { reason: 'nic-link-down', message: 'va down (operstate lowerlayerdown, carrier 0)' },
    ]);
    const flaps = await registry.getSingleMetric('npu_fault_agent_node_link_flaps_total')?.get();
    expect(flaps?.values.find((v) => v.labels.kind === 'nic')?.value).toBe(1);

    ip('link', 'del', 'va');
    expect(await check.run(t0 + 10_000, new AbortController().signal)).toEqual([
      { reason: 'nic-link-down', message: 'va gone' },
    ]);
  });
});

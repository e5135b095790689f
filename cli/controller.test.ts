import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from './main.js';
import { memoryIO } from './testing.js';

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = memoryIO();
  const code = await main(['controller', ...args], io);
  return { code, out: io.out, err: io.err };
}

describe('npu-fault controller: its command line', () => {
  it('--help lists every setting with its variable and default', async () => {
    const { code, out } = await run(['--help']);
    expect(code).toBe(0);
    expect(out).toContain('--lease-duration-seconds');
    expect(out).toContain('NPU_FAULT_LEASE_DURATION_SECONDS');
    expect(out).toContain('--publish-tick-min-ms');
    expect(out).toContain('--auth-allowed-users');
    expect(out).toContain('(default 15)');
  });

  it('refuses a bad value in one line naming the flag, exit 2', async () => {
    const { code, err } = await run(['--lease-duration-seconds=soon']);
    expect(code).toBe(2);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/^npu-fault controller: --lease-duration-seconds: /);
  });

  it('checks settings against each other (renew deadline below the lease)', async () => {
    const { code, err } = await run(['--lease-duration-seconds=5', '--lease-renew-deadline-seconds=6']);
    expect(code).toBe(2);
    expect(err).toContain('--lease-renew-deadline-seconds: must be less than durationSeconds (5)');
  });

  it('refuses an unknown option and a bad listen address', async () => {
    expect((await run(['--leese=1'])).code).toBe(2);
    const { code, err } = await run(['--listen=localhost']);
    expect(code).toBe(2);
    expect(err).toContain('--listen: expected host:port');
  });

  it('refuses an invalid rules file in one line naming the file, exit 1, before touching a cluster', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'npu-fault-cli-'));
    const rules = join(dir, 'rules.yaml');
    writeFileSync(rules, 'high_temp:\n  threshold_c: hot\n');
    const { code, err } = await run([`--rules=${rules}`, '--kubeconfig=/nonexistent']);
    expect(code).toBe(1);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toContain(`${rules}: `);
    expect(err).toContain('threshold_c');
  });

  it('says which kubeconfig it could not read, exit 1', async () => {
    const { code, err } = await run(['--kubeconfig=/nonexistent/kubeconfig']);
    expect(code).toBe(1);
    expect(err).toMatch(/^npu-fault controller: kubeconfig: /);
    expect(err.trim().split('\n')).toHaveLength(1);
  });
});

import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./build-control-plane.sh', import.meta.url));

describe('build-control-plane.sh', () => {
  it('says exactly that Go is missing, and what to install, when there is no go on PATH', () => {
    const cache = mkdtempSync(join(tmpdir(), 'npu-fault-nogo-'));
    const result = spawnSync('bash', [script], {
      env: { PATH: '/usr/bin:/bin', HOME: cache, NPU_FAULT_CACHE: cache },
      encoding: 'utf8',
    });
    rmSync(cache, { recursive: true, force: true });
    expect(result.status).toBe(3);
    expect(result.stderr).toMatch(/Go is not installed/);
    expect(result.stderr).toMatch(/Go >= 1\.24/);
    expect(result.stderr).toMatch(/NPU_FAULT_USE_EXISTING_CLUSTER=true/);
    expect(result.stdout).toBe('');
  });
});

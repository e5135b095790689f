import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { planeVersions } from './control-plane.js';

const script = fileURLToPath(new URL('./build-control-plane.sh', import.meta.url));
const operationsDoc = fileURLToPath(new URL('../docs/operations.md', import.meta.url));

/** The script's table, as it writes it: one row per tested release, oldest first. */
function supportedRows(): { kubernetes: string; etcd: string; kwok: string; go: string }[] {
  const text = readFileSync(script, 'utf8');
  const table = /^SUPPORTED=\(\n([\s\S]*?)^\)/m.exec(text)?.[1] ?? '';
  return [...table.matchAll(/^\s*"(\S+) (\S+) (\S+) (\S+)"/gm)].map(([, kubernetes, etcd, kwok, go]) => ({
    kubernetes: kubernetes!,
    etcd: etcd!,
    kwok: kwok!,
    go: go!,
  }));
}

describe('build-control-plane.sh', () => {
  let cache: string;
  beforeAll(() => {
    cache = mkdtempSync(join(tmpdir(), 'npu-fault-cp-versions-'));
  });
  afterAll(() => rmSync(cache, { recursive: true, force: true }));

  const run = (env: Record<string, string>, args: string[] = []) =>
    spawnSync('bash', [script, ...args], {
      env: { PATH: '/usr/bin:/bin', HOME: cache, NPU_FAULT_CACHE: cache, ...env },
      encoding: 'utf8',
    });

  it('says exactly that Go is missing, and which Go to install, when there is no go on PATH', () => {
    const result = run({});
    expect(result.status).toBe(3);
    expect(result.stderr).toMatch(/Go is not installed/);
    const newest = supportedRows().at(-1)!;
    expect(result.stderr).toContain(`Kubernetes ${newest.kubernetes}`);
    expect(result.stderr).toContain(`Go >= ${newest.go}`);
    expect(result.stderr).toMatch(/NPU_FAULT_USE_EXISTING_CLUSTER=true/);
    expect(result.stdout).toBe('');
  });

  it('has a table of at least two releases, oldest first, each with its etcd, kwok and Go', () => {
    const rows = supportedRows();
    expect(rows.length).toBeGreaterThanOrEqual(2);
    const minor = (v: string) => Number(/^v1\.(\d+)\.\d+$/.exec(v)?.[1]);
    for (const row of rows) {
      expect(row.kubernetes).toMatch(/^v1\.\d+\.\d+$/);
      expect(row.etcd).toMatch(/^v3\.\d+\.\d+$/);
      expect(row.kwok).toMatch(/^v0\.\d+\.\d+$/);
      expect(row.go).toMatch(/^1\.\d+$/);
    }
    const minors = rows.map((r) => minor(r.kubernetes));
    expect(minors).toEqual([...minors].sort((a, b) => a - b));
  });

  it('selects the newest row by default, and oldest, a release or its minor by NPU_FAULT_K8S_VERSION', async () => {
    const rows = supportedRows();
    const oldest = rows[0]!;
    const newest = rows.at(-1)!;
    const select = (setting?: string) =>
      planeVersions({ ...process.env, NPU_FAULT_CACHE: cache, NPU_FAULT_K8S_VERSION: setting });
    expect(await select(undefined)).toMatchObject(newest);
    expect(await select('newest')).toMatchObject(newest);
    expect(await select('oldest')).toMatchObject(oldest);
    expect(await select(oldest.kubernetes)).toMatchObject(oldest);
    const oldestMinor = oldest.kubernetes.replace(/^v(1\.\d+)\.\d+$/, '$1'); // "1.34"
    expect(await select(oldestMinor)).toMatchObject(oldest);
    // The cache is keyed by all three versions: switching never reuses another plane's binaries.
    expect((await select('oldest')).binDir).toBe(
      join(cache, 'k8s', `${oldest.kubernetes}-etcd${oldest.etcd}-kwok${oldest.kwok}`, 'bin'),
    );
  });

  it('refuses a release outside the table, listing the table, unless etcd and kwok are named too', () => {
    for (const setting of ['bogus', '1', 'v1.2.3']) {
      const result = run({ NPU_FAULT_K8S_VERSION: setting }, ['--versions']);
      expect(result.status).toBe(2);
      expect(result.stdout).toBe('');
      for (const row of supportedRows()) expect(result.stderr).toContain(row.kubernetes);
    }
    const tried = run({ NPU_FAULT_K8S_VERSION: 'v1.2.3', ETCD_VERSION: 'v3.6.16', KWOK_VERSION: 'v0.8.0' }, [
      '--versions',
    ]);
    expect(tried.status).toBe(0);
    expect(tried.stdout).toMatch(/^kubernetes=v1\.2\.3\netcd=v3\.6\.16\nkwok=v0\.8\.0\n/);
  });

  it('refuses a Go older than the selected row needs, before building anything', () => {
    const newest = supportedRows().at(-1)!;
    const fakeBin = mkdtempSync(join(tmpdir(), 'npu-fault-old-go-'));
    try {
      // A `go` that reports a release one minor older than the newest row needs.
      const tooOld = `go1.${Number(newest.go.split('.')[1]) - 1}.0`;
      writeFileSync(join(fakeBin, 'go'), `#!/bin/sh\necho ${tooOld}\n`);
      chmodSync(join(fakeBin, 'go'), 0o755);
      const result = run({ PATH: `${fakeBin}:/usr/bin:/bin`, NPU_FAULT_K8S_VERSION: 'newest' });
      expect(result.status).toBe(3);
      expect(result.stderr).toContain(`${tooOld} is too old`);
      expect(result.stderr).toContain(`needs Go >= ${newest.go}`);
      expect(result.stderr).toContain('NPU_FAULT_K8S_VERSION=oldest');
    } finally {
      rmSync(fakeBin, { recursive: true, force: true });
    }
  });

  it('docs/operations.md names every release of the table with its etcd and kwok', () => {
    const doc = readFileSync(operationsDoc, 'utf8');
    for (const row of supportedRows()) {
      const line = doc.split('\n').find((l) => l.includes(row.kubernetes));
      expect(line).toBeDefined();
      expect(line).toContain(row.etcd);
      expect(line).toContain(row.kwok);
    }
  });
});

/**
 * The pipeline benchmark's smoke (CI runs only this one; the sweep is `npm run bench --
 * pipeline`): `npu-fault bench pipeline --existing-cluster` on the integration project's
 * control plane with 20 synthetic agents under pod-bound tokens, two real probe agents, the
 * shipped controller pair and function, and a few watchers. It must exit 0 (every fault
 * seen, none invented, the replay matching what was published), write its JSON, report and
 * charts, and leave no namespace or Node behind.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PATHS, type BenchResult } from '../bench/pipeline/result.js';
import { BENCH_LABEL } from '../bench/pipeline/run.js';
import { adminKubeConfig } from './setup/cluster.js';
import { runCli } from './setup/run-cli.js';

describe('npu-fault bench pipeline (20-node smoke)', () => {
  const admin = adminKubeConfig();
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const out = mkdtempSync(join(tmpdir(), 'npu-fault-bench-smoke-'));

  afterAll(async () => {
    rmSync(out, { recursive: true, force: true });
    // Only if the bench failed to clean up.
    for (const node of (await core.listNode({ labelSelector: BENCH_LABEL })).items)
      await core.deleteNode({ name: node.metadata!.name! });
  });

  it('measures every path, misses no fault, invents none and matches the replay', async () => {
    const { code, stdout, stderr } = await runCli([
      'bench',
      'pipeline',
      '--existing-cluster',
      '--tsx',
      '--nodes=20',
      '--seconds=20',
      '--warmup=5',
      '--watchers=2,5',
      '--probe-interval-ms=2000',
      `--out=${out}`,
    ]);
    expect({ code, tail: code === 0 ? '' : stderr.slice(-3000) }).toEqual({ code: 0, tail: '' });
    expect(stdout).toMatch(/^report: .+\.md$/m);
    const files = readdirSync(out);
    const json = files.find((f) => f.endsWith('.json'));
    expect(files.filter((f) => f.endsWith('.svg')).length).toBeGreaterThan(3);
    expect(files.some((f) => f.endsWith('.md'))).toBe(true);
    const result = JSON.parse(readFileSync(join(out, json!), 'utf8')) as BenchResult;
    expect(result.runs).toHaveLength(1);
    const [runResult] = result.runs;
    expect(runResult!.nodes).toBe(20);
    expect(runResult!.faults).toMatchObject({ missed: 0, falseFailed: 0 });
    expect(runResult!.faults.injected).toBeGreaterThan(5);
    expect(runResult!.lossless).toMatchObject({ lost: 0, duplicated: 0 });
    expect(runResult!.lossless.published).toBeGreaterThan(0);
    // Each path measured on this run, the probes' (SSE, kernel-log event) included.
    for (const path of PATHS)
      expect({ path, count: runResult!.latency[path].count > 0 }).toEqual({ path, count: true });
    expect(runResult!.watchers.map((w) => w.watchers)).toEqual([2, 5]);
    expect(runResult!.watchers.every((w) => w.egressBytesPerSecond > 0)).toBe(true);
    expect(runResult!.components.map((c) => c.name)).toEqual(
      expect.arrayContaining(['controller-1', 'controller-2', 'function']),
    );
    // Nothing left behind.
    expect((await core.listNode({ labelSelector: BENCH_LABEL })).items).toEqual([]);
    const namespaces = await core.listNamespace({ labelSelector: BENCH_LABEL });
    expect(namespaces.items.filter((ns) => ns.status?.phase !== 'Terminating')).toEqual([]);
  });
});

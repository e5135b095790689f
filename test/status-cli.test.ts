/**
 * `npu-fault status` on the real control plane, as a platform engineer holding exactly the
 * shipped operator roles (k8s/operator/rbac.yaml, bound to a ServiceAccount standing in for
 * the group), through a kubeconfig file of that identity's token. The test (admin) writes
 * the status ConfigMap, standing in for the controller.
 *
 * - table, json and --node read the ConfigMap and show it worst first;
 * - a missing ConfigMap is one line, exit 1;
 * - `--watch` from the real `bin/npu-fault.js` process (stdout a pipe) prints the document,
 *   then a new rendering when the ConfigMap changes (a watch by name, which the role grants),
 *   and exits 0 on SIGTERM;
 * - the kubectl plugin entry (`bin/kubectl-npu_fault`) runs the same command.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { main } from '../cli/main.js';
import { memoryIO } from '../cli/testing.js';
import type { PublishedDocument } from '../contracts/index.js';
import { createTestNamespace, type TestNamespace } from './setup/cluster.js';
import { writeKubeConfig } from './setup/controller-process.js';
import { operatorAccess, type ControllerAccess } from './setup/controller-rbac.js';

const BIN = fileURLToPath(new URL('../bin/npu-fault.js', import.meta.url));
const PLUGIN = fileURLToPath(new URL('../bin/kubectl-npu_fault', import.meta.url));
const NAME = 'npu-fault-status-v3';

let ns: TestNamespace;
let access: ControllerAccess;
let core: k8s.CoreV1Api;
let operator: string;

function documentAt(timestamp: string, failedNode: string | undefined): PublishedDocument {
  const nodes: PublishedDocument['nodes'] = {
    'node-10': {
      node: 'node-10',
      observed_at: timestamp,
      agent: 'ok',
      summary: { total: 8, healthy: 7, degraded: 1, failed: 0, unknown: 0 },
      npus: [
        {
          id: 'npu1',
          key: '0000:C2:00.0',
          resource_id: 'Ascend910-1',
          kind: 'npu',
          model: '910B2',
          status: 'degraded',
          since: timestamp,
          reason: 'high-temp',
          reasons: ['high-temp'],
          signals: [],
          temperature_c: 89.5,
          power_w: 176.2,
          ecc_errors: 0,
          pcie_link_status: 'up',
        },
      ],
    },
  };
  if (failedNode)
    nodes[failedNode] = {
      node: failedNode,
      observed_at: timestamp,
      agent: 'ok',
      summary: { total: 8, healthy: 7, degraded: 0, failed: 1, unknown: 0 },
      npus: [
        {
          id: 'npu5',
          key: '0000:02:00.0',
          resource_id: 'Ascend910-5',
          kind: 'npu',
          model: '910B2',
          status: 'failed',
          since: timestamp,
          reason: 'pcie-link-down',
          reasons: ['pcie-link-down'],
          signals: [],
          temperature_c: 53.5,
          power_w: 172.6,
          ecc_errors: 4,
          pcie_link_status: 'down',
        },
      ],
    };
  return {
    version: '3.0',
    timestamp,
    publisher: { identity: 'npu-fault-controller-7d9f-abc', term: 4 },
    node_count: 12,
    cluster_summary: { total: 96, healthy: 94, degraded: 1, failed: failedNode ? 1 : 0, unknown: 0 },
    unobserved: [],
    nodes,
  };
}

async function publish(document: PublishedDocument): Promise<void> {
  const data = { version: '3.0', 'fault.json': JSON.stringify(document) };
  try {
    await core.replaceNamespacedConfigMap({
      name: NAME,
      namespace: ns.name,
      body: { metadata: { name: NAME, namespace: ns.name }, data },
    });
  } catch {
    await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: NAME }, data } });
  }
}

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = memoryIO();
  const code = await main(args, io);
  return { code, out: io.out, err: io.err };
}

beforeAll(async () => {
  ns = await createTestNamespace('status-cli');
  core = ns.admin.makeApiClient(k8s.CoreV1Api);
  access = await operatorAccess(ns);
  operator = writeKubeConfig(access.kubeConfig);
});

afterAll(async () => {
  await access?.dispose();
  await ns?.dispose();
});

describe('npu-fault status', () => {
  it('a missing ConfigMap is one line, exit 1', async () => {
    expect(await cli(['status', '--namespace', ns.name, '--kubeconfig', operator])).toEqual({
      code: 1,
      out: '',
      err: `npu-fault status: no status published in ${ns.name}/${NAME}: is the controller running?\n`,
    });
  });

  it('table: summary line, worst first', async () => {
    await publish(documentAt(new Date().toISOString(), 'node-2'));
    const { code, out, err } = await cli(['status', '--namespace', ns.name, '--kubeconfig', operator]);
    expect([code, err]).toEqual([0, '']);
    expect(out).toMatch(
      /^publisher npu-fault-controller-7d9f-abc \(term 4\), written \d+\.\d s ago; 2 of 12 nodes need attention\n/,
    );
    const rows = out.split('\n').filter((line) => /^node-\d+\s+npu\d+/.test(line));
    expect(rows.map((line) => line.split(/\s+/).slice(0, 3).join(' '))).toEqual([
      'node-2 npu5 failed',
      'node-10 npu1 degraded',
    ]);
  });

  it('json: the document; --node: its entry, or healthy when not listed', async () => {
    const document = documentAt(new Date().toISOString(), 'node-2');
    await publish(document);
    const json = await cli(['status', '--namespace', ns.name, '-o', 'json', '--kubeconfig', operator]);
    expect([json.code, json.err]).toEqual([0, '']);
    expect(JSON.parse(json.out)).toEqual(document);
    const one = await cli([
      'status',
      '--namespace',
      ns.name,
      '--output=json',
      '--node',
      'node-2',
      `--kubeconfig=${operator}`,
    ]);
    expect(JSON.parse(one.out)).toEqual(document.nodes['node-2']);
    const absent = await cli([
      'status',
      '--namespace',
      ns.name,
      '--node',
      'node-7',
      '--kubeconfig',
      operator,
    ]);
    expect(absent.code).toBe(0);
    expect(absent.out).toContain('node node-7: healthy (not listed');
  });

  it('a stale document is shown with a warning; --fail-stale exits 1', async () => {
    await publish(documentAt(new Date(Date.now() - 60_000).toISOString(), undefined));
    const stale = await cli(['status', '--namespace', ns.name, '--kubeconfig', operator]);
    expect(stale.code).toBe(0);
    expect(stale.out).toContain('(STALE)');
    expect(stale.err).toMatch(/^npu-fault status: warning: the status is stale: written \d+ s ago/);
    const strict = await cli(['status', '--namespace', ns.name, '--fail-stale', '--kubeconfig', operator]);
    expect(strict.code).toBe(1);
  });

  it('--watch (the real process, on a pipe) prints each change, exits 0 on SIGTERM', async () => {
    await publish(documentAt(new Date().toISOString(), undefined));
    const child = spawn(
      process.execPath,
      [BIN, 'status', '--watch', '--stale-after', '10m', '--namespace', ns.name, '--kubeconfig', operator],
      {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    const waiters: (() => void)[] = [];
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      for (const wake of waiters.splice(0)) wake();
    });
    child.stderr.on('data', (chunk: Buffer) => void (err += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const outputMatches = async (pattern: RegExp): Promise<void> => {
      while (!pattern.test(out)) {
        const wrote = new Promise<'wrote'>((resolve) => waiters.push(() => resolve('wrote')));
        let timer: NodeJS.Timeout | undefined;
        // A bound on the wait, so a failure shows what the process printed.
        const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), 30_000)));
        const outcome = await Promise.race([wrote, exited.then(() => 'exited' as const), late]);
        clearTimeout(timer);
        if (outcome === 'late')
          throw new Error(`no ${String(pattern)} in 30 s; stdout: ${out} stderr: ${err}`);
        if (outcome === 'exited') throw new Error(`the watch exited early; stdout: ${out} stderr: ${err}`);
      }
    };
    try {
      await outputMatches(/1 of 12 nodes needs attention/);
      expect(out).not.toContain('node-2');
      await publish(documentAt(new Date().toISOString(), 'node-2'));
      await outputMatches(/2 of 12 nodes need attention[\s\S]*node-2\s+npu5\s+failed/);
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<string>(
        (resolve) => (timer = setTimeout(() => resolve('still running'), 30_000)),
      );
      expect(await Promise.race([exited, late])).toBe(0);
      clearTimeout(timer);
      expect(out).not.toContain('\x1b[');
      expect(err).toBe('');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('the operator role grants get and watch on the status ConfigMap only; without it, one 403 line', async () => {
    const authz = access.kubeConfig.makeApiClient(k8s.AuthorizationV1Api);
    const can = async (verb: string, name?: string): Promise<boolean> =>
      (
        await authz.createSelfSubjectAccessReview({
          body: { spec: { resourceAttributes: { verb, resource: 'configmaps', namespace: ns.name, name } } },
        })
      ).status?.allowed === true;
    expect([await can('get', NAME), await can('watch', NAME)]).toEqual([true, true]);
    expect([await can('watch'), await can('list'), await can('watch', 'npu-fault-rules')]).toEqual([
      false,
      false,
      false,
    ]);
    const nobody = writeKubeConfig(await ns.serviceAccountKubeConfig('nobody'));
    const refused = await cli(['status', '--namespace', ns.name, '--kubeconfig', nobody]);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      new RegExp(
        `^npu-fault status: forbidden: system:serviceaccount:${ns.name}:nobody may not get configmaps "${NAME}" ` +
          `\\(in namespace ${ns.name}\\); it needs 'get' on configmaps, which the npu-fault-operator role grants`,
      ),
    );
  });

  it('the kubectl plugin runs the same command', async () => {
    await publish(documentAt(new Date().toISOString(), 'node-2'));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [PLUGIN, 'status', '--namespace', ns.name, '--node', 'node-2', '-o', 'json', '--kubeconfig', operator],
      { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' } },
    );
    expect((JSON.parse(stdout) as { node: string }).node).toBe('node-2');
  });
});

/**
 * `npu-fault demo --pipeline --existing-cluster --scenario short` as a user runs it, on the
 * integration project's control plane: seven simulated agents under pod-bound tokens, a real
 * function and two real controllers (one SIGKILLed mid-scenario). The demo must end with
 * every fault seen in the ConfigMap, by the API watch and (but for the silent agent's own
 * stream) on the nodes' SSE streams, exit 0, and leave no namespace or Node behind.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { adminKubeConfig } from './setup/cluster.js';
import { runCli, type CliRun } from './setup/run-cli.js';

/** Runs the demo to its end; resolves with its exit code and output. */
const runDemo = (args: string[]): Promise<CliRun> => runCli(['demo', ...args], { NO_COLOR: '1' });

/** One report row: its columns after the fault's name and expectation. */
function reportRow(stdout: string, fault: string): string[] {
  const line = stdout.split('\n').find((l) => l.trimStart().startsWith(fault));
  if (!line) throw new Error(`no report row '${fault}' in:\n${stdout.slice(-3000)}`);
  return line.trim().split(/\s{2,}/);
}

describe('npu-fault demo --pipeline', () => {
  const admin = adminKubeConfig();
  const core = admin.makeApiClient(k8s.CoreV1Api);
  let result: Awaited<ReturnType<typeof runDemo>>;

  afterAll(async () => {
    // Only if the demo failed to clean up: its objects carry the demo label.
    const namespaces = await core.listNamespace({ labelSelector: 'npu-fault.io/demo' });
    for (const ns of namespaces.items) await core.deleteNamespace({ name: ns.metadata!.name! });
  });

  it('runs the short scenario through the real pipeline and reports every fault', async () => {
    result = await runDemo(['--pipeline', '--existing-cluster', '--scenario', 'short']);
    const { stdout, stderr } = result;
    expect({ code: result.code, stderr: stderr.slice(-2000) }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/Scenario check: all 64 devices ended as expected; every fault was seen\./);
    expect(stdout).toMatch(/takeover: replica-\d published \+\d+\.\ds after replica-\d was killed/);

    const seconds = (cell: string | undefined): number => Number(/^\+(\d+\.\d)s$/.exec(cell ?? '')?.[1]);
    for (const fault of [
      'heat atlas900-node-003/npu5',
      'ECC storm gpu-node-002/gpu3',
      'link down atlas300-node-001/npu2',
      'leader replica-',
      'vanished atlas900-node-002/npu3',
      'uncorrectable gpu-node-002/gpu3',
      // Around the cards: a node problem, and a serving node answering wrong.
      'NIC down atlas900-node-001',
      'NIC back atlas900-node-001',
      'wrong answers gpu-node-003',
      'right answers gpu-node-003',
    ]) {
      const columns = reportRow(stdout, fault);
      // FAULT, EXPECTED, INJECTED, CONFIGMAP, API WATCH, SSE: every consumer saw it.
      const [, , injected, configMap, watch, sse] = columns;
      for (const cell of [injected, configMap, watch, sse])
        expect({ fault, cell }).toEqual({ fault, cell: expect.stringMatching(/^\+\d+\.\ds$/) });
      // Faults that fail a device at once reach the watcher within seconds, not tens.
      if (/link down|vanished|uncorrectable|NIC down/.test(fault)) expect(seconds(watch)).toBeLessThan(15);
    }
    // The silent agent's own stream cannot report its silence; the ConfigMap and the watch do.
    for (const [fault, expected] of [
      ['agent silent gpu-node-001', 'unknown (agent-unreachable)'],
      ['agent back gpu-node-001', 'healthy'],
    ]) {
      expect(reportRow(stdout, fault!).slice(1)).toEqual([
        expected,
        expect.stringMatching(/^\+\d+\.\ds$/),
        expect.stringMatching(/^\+\d+\.\ds$/),
        expect.stringMatching(/^\+\d+\.\ds$/),
        'n/a',
      ]);
    }
  }, 300_000);

  it('leaves no namespace or Node of its own behind', async () => {
    expect(result).toBeDefined();
    const nodes = await core.listNode({ labelSelector: 'npu-fault.io/demo' });
    expect(nodes.items.map((n) => n.metadata?.name)).toEqual([]);
    const namespaces = await core.listNamespace({ labelSelector: 'npu-fault.io/demo' });
    // A namespace being deleted is gone as far as the demo is concerned.
    expect(namespaces.items.filter((n) => n.status?.phase !== 'Terminating')).toEqual([]);
  });
});

import { describe, expect, it } from '@jest/globals';
import { FakeClock, createLogger, createRegistry } from '../../platform/index.js';
import type { NodeCheck, NodeProblem } from './check.js';
import { createNodeCheckRunner, mergeProblems, oneLine, roundDeadlineMs } from './runner.js';

const log = createLogger({ level: 'silent', component: 'test' });

/** A check answering each run with the next scripted result (the last one repeats). */
function scripted(
  name: string,
  intervalMs: number,
  results: Array<NodeProblem[] | Error>,
): NodeCheck & { runs: number } {
  const check = {
    name,
    intervalMs,
    runs: 0,
    run: async () => {
      const result = results[Math.min(check.runs, results.length - 1)] as NodeProblem[] | Error;
      check.runs++;
      if (result instanceof Error) throw result;
      return result;
    },
  };
  return check;
}

describe('node check runner', () => {
  it('runs each check on its own period and reports a change of reasons at once', async () => {
    const clock = new FakeClock();
    const registry = createRegistry('agent');
    const network = scripted('network', 5000, [
      [],
      [{ reason: 'network-unreachable', message: 'gw: 3 misses' }],
      [],
    ]);
    const kernel = scripted('kernel', 1000, [[{ reason: 'kernel-hung-task', message: 'task a:1' }]]);
    let changes = 0;
    const runner = createNodeCheckRunner([network, kernel], {
      clock,
      log,
      registry,
      onChange: () => changes++,
    });
    const stop = new AbortController();
    const running = runner.start(stop.signal);
    await clock.advance(0);
    expect(runner.problems()).toEqual([{ reason: 'kernel-hung-task', message: 'task a:1' }]);
    expect(changes).toBe(1);
    await clock.advance(5000);
    expect(network.runs).toBe(2);
    expect(kernel.runs).toBe(6);
    expect(runner.problems().map((p) => p.reason)).toEqual(['network-unreachable', 'kernel-hung-task']);
    expect(changes).toBe(2); // the same reasons run after run change nothing
    await clock.advance(5000);
    expect(runner.problems().map((p) => p.reason)).toEqual(['kernel-hung-task']);
    expect(changes).toBe(3);
    expect(await registry.getSingleMetricAsString('npu_fault_agent_node_problem')).toContain(
      'npu_fault_agent_node_problem{reason="kernel-hung-task"} 1',
    );
    stop.abort();
    await running;
  });

  it('keeps a failing check’s last problems and the others running', async () => {
    const clock = new FakeClock();
    const registry = createRegistry('agent');
    const broken = scripted('links', 1000, [
      [{ reason: 'nic-link-down', message: 'eth2' }],
      new Error('bug'),
    ]);
    const fine = scripted('edac', 1000, [[], [{ reason: 'host-memory-ecc', message: 'mc0' }]]);
    const runner = createNodeCheckRunner([broken, fine], { clock, log, registry });
    const stop = new AbortController();
    const running = runner.start(stop.signal);
    await clock.advance(3000);
    expect(runner.problems().map((p) => p.reason)).toEqual(['nic-link-down', 'host-memory-ecc']);
    expect(await registry.getSingleMetricAsString('npu_fault_agent_node_check_runs_total')).toContain(
      'npu_fault_agent_node_check_runs_total{check="links",result="error"} 3',
    );
    stop.abort();
    await running;
  });

  it('counts a round stuck past its deadline, keeps its problems, and starts no second round meanwhile', async () => {
    const clock = new FakeClock();
    const registry = createRegistry('agent');
    let release: (problems: NodeProblem[]) => void = () => undefined;
    let runs = 0;
    const stuck: NodeCheck = {
      name: 'filesystems',
      intervalMs: 1000,
      run: () => {
        runs++;
        if (runs === 1) return Promise.resolve([{ reason: 'filesystem-full', message: '/ 97%' }]);
        return new Promise((resolve) => (release = resolve));
      },
    };
    const runner = createNodeCheckRunner([stuck], { clock, log, registry });
    const stop = new AbortController();
    const running = runner.start(stop.signal);
    await clock.advance(1000 + roundDeadlineMs(1000) + 5000);
    expect(runs).toBe(2);
    expect(runner.problems().map((p) => p.reason)).toEqual(['filesystem-full']);
    const text = await registry.getSingleMetricAsString('npu_fault_agent_node_check_runs_total');
    expect(text).toContain('npu_fault_agent_node_check_runs_total{check="filesystems",result="timeout"} 1');
    release([]);
    await clock.advance(1000);
    expect(runner.problems()).toEqual([]);
    expect(runs).toBe(3);
    stop.abort();
    await running;
  });

  it('merges one reason from two checks into one entry, in contract order, messages joined', () => {
    expect(
      mergeProblems([
        [{ reason: 'filesystem-readonly', message: '/ is ro' }],
        [
          { reason: 'filesystem-readonly', message: 'EXT4-fs (sda1): Remounting filesystem read-only' },
          { reason: 'network-unreachable', message: '' },
        ],
      ]),
    ).toEqual([
      { reason: 'network-unreachable', message: '' },
      { reason: 'filesystem-readonly', message: '/ is ro; EXT4-fs (sda1): Remounting filesystem read-only' },
    ]);
  });

  it('makes a message one printable line of at most 256 characters, whatever a tenant put in it', () => {
    expect(oneLine('task \u001b[31mevil\u0007\nname:1 \ud800 blocked')).toBe(
      'task  [31mevil name:1 \ufffd blocked',
    );
    const long = oneLine('x'.repeat(300));
    expect(Array.from(long)).toHaveLength(256);
    expect(long.endsWith('…')).toBe(true);
    expect(oneLine('😀'.repeat(300)).startsWith('😀')).toBe(true);
    expect(Array.from(oneLine('😀'.repeat(300)))).toHaveLength(256);
  });
});

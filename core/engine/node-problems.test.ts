/**
 * The agent's node problems (CONTRACT §1.8, §3.7) through the engine: each a node reason of
 * the rules' severity, raised while the node's newest snapshot carries it.
 */
import { describe, expect, it } from '@jest/globals';
import { publishedDocumentSchema, rulesSchema, type Rules } from '../../contracts/index.js';
import { createEngine, type Transition } from './index.js';
import { at, npuSnapshot } from './testing.js';

type Problems = Array<{ reason: string; message?: string }>;

function driver(rules?: Rules) {
  const engine = createEngine(rules);
  let seq = 0;
  const send = (t: number, problems: Problems | undefined, cached = false): Transition[] =>
    engine.observe(
      npuSnapshot({ seq: ++seq, t, cached, ...(problems ? { nodeProblems: problems } : {}) }, [
        { npu: 0 },
        { npu: 1 },
      ]),
      at(t),
    ).transitions;
  const doc = (t: number) =>
    publishedDocumentSchema.parse(engine.document(at(t), { identity: 't', term: 0 }));
  return { engine, send, doc };
}

const moves = (out: Transition[]): string[] => out.map((x) => `${x.npu}>${x.to}:${x.reason}`);

describe('node problems', () => {
  it('publishes a critical one as an overlay: the node unknown, its reason on the node entry', () => {
    const d = driver();
    d.send(0, undefined);
    expect(moves(d.send(1, [{ reason: 'network-unreachable', message: 'gateway: 3 misses' }]))).toEqual([
      'npu0>unknown:network-unreachable',
      'npu1>unknown:network-unreachable',
    ]);
    const entry = d.doc(1).nodes['node-a'];
    expect(entry?.reasons).toEqual(['network-unreachable']);
    expect(entry?.summary).toMatchObject({ unknown: 2, healthy: 0 });
    // A snapshot without it lifts it.
    expect(moves(d.send(2, []))).toEqual(['npu0>healthy:null', 'npu1>healthy:null']);
    expect(d.doc(2).nodes['node-a']).toBeUndefined();
  });

  it('publishes a warning one as a signal on every device, changing no status', () => {
    const d = driver();
    d.send(0, undefined);
    expect(d.send(1, [{ reason: 'oom-kill-storm' }])).toEqual([]);
    const entry = d.doc(1).nodes['node-a'];
    expect(entry?.reasons).toEqual(['oom-kill-storm']);
    expect(entry?.npus.map((x) => [x.id, x.status, x.reason, x.signals])).toEqual([
      ['npu0', 'healthy', null, ['oom-kill-storm']],
      ['npu1', 'healthy', null, ['oom-kill-storm']],
    ]);
  });

  it('counts them in a cached snapshot: they are the agent’s own, fresh in each', () => {
    const d = driver();
    d.send(0, undefined);
    expect(moves(d.send(1, [{ reason: 'nvlink-down' }], true))).toEqual([
      'npu0>unknown:nvlink-down',
      'npu1>unknown:nvlink-down',
    ]);
    expect(moves(d.send(2, [], true))).toEqual(['npu0>healthy:null', 'npu1>healthy:null']);
  });

  it('ignores a reason it does not know (a newer agent’s) and keeps the readings', () => {
    const d = driver();
    expect(moves(d.send(0, [{ reason: 'quantum-decoherence', message: 'from the future' }]))).toEqual([
      'npu0>healthy:null',
      'npu1>healthy:null',
    ]);
    expect(d.doc(0).nodes['node-a']).toBeUndefined();
  });

  it('takes each severity from the rules, and a reload that changes one republishes at once', () => {
    const d = driver(rulesSchema.parse({ node_problems: { 'filesystem-full': 'critical' } }));
    d.send(0, undefined);
    expect(moves(d.send(1, [{ reason: 'filesystem-full', message: '/ 97% used' }]))).toEqual([
      'npu0>unknown:filesystem-full',
      'npu1>unknown:filesystem-full',
    ]);
    d.engine.setRules(rulesSchema.parse({}));
    expect(moves(d.engine.tick(at(2)))).toEqual(['npu0>healthy:null', 'npu1>healthy:null']);
    expect(d.doc(2).nodes['node-a']?.npus.map((x) => x.signals)).toEqual([
      ['filesystem-full'],
      ['filesystem-full'],
    ]);
  });

  it('explains each node reason with its rule and what the agent saw', () => {
    const d = driver();
    d.send(0, [
      { reason: 'rdma-port-down', message: 'mlx5_0 port 1: DOWN' },
      { reason: 'kernel-hung-task', message: 'task python3:41 blocked for 122 s' },
    ]);
    const e = d.engine.explain('node-a', undefined, at(0));
    expect(e.tracked && e.overlays).toEqual(['rdma-port-down', 'kernel-hung-task']);
    expect(e.tracked && e.node_reasons).toEqual([
      {
        reason: 'rdma-port-down',
        rule: expect.stringContaining('critical'),
        message: 'mlx5_0 port 1: DOWN',
      },
      {
        reason: 'kernel-hung-task',
        rule: expect.stringContaining('warning'),
        message: 'task python3:41 blocked for 122 s',
      },
    ]);
  });

  it('lists every node reason on the entry, the engine’s own and the Node’s conditions too, in order', () => {
    const d = driver();
    d.send(0, [{ reason: 'filesystem-error' }]);
    d.engine.setNodeConditions('node-a', { KernelDeadlock: 'True' }, at(1));
    d.engine.setNodeReady('node-a', false, at(1));
    expect(d.engine.nodeEntry('node-a')?.reasons).toEqual([
      'node-not-ready',
      'filesystem-error',
      'kernel-deadlock',
    ]);
  });
});

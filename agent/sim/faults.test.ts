import { describe, expect, it } from '@jest/globals';
import { npuSnapshot } from '../../core/engine/testing.js';
import { buildNode } from '../../core/sim/index.js';
import {
  FaultBoard,
  SimFaultError,
  simDeviceHolders,
  simFaultRequestSchema,
  simNodeCheck,
} from './faults.js';

const START = Date.parse('2026-12-01T00:00:00Z');
const npuNode = buildNode('atlas-1', '910B', 1);
const gpuNode = buildNode('gpu-1', 'nvidia', 1);

describe('FaultBoard', () => {
  it('turns API faults into timeline faults on seconds after the start', () => {
    const board = new FaultBoard(npuNode, START);
    board.add({ kind: 'hot', device: 'npu3', celsius: 95 }, START + 2500);
    board.add({ kind: 'offline', device: 'npu5', seconds: 4 }, START + 10_000);
    board.add({ kind: 'uncorrectable', device: 'npu1' }, START + 3000);
    board.add({ kind: 'silence' }, START + 1000);
    expect(board.timeline()).toEqual([
      { kind: 'heat', device: 'npu3', node: 'atlas-1', from: 2, celsius: 95 },
      { kind: 'link-down', device: 'npu5', node: 'atlas-1', from: 10, to: 14, power: 'lost' },
      // One-shot: the second after the injection (the live node may have sampled second 3).
      { kind: 'ecc-uncorrectable', device: 'npu1', node: 'atlas-1', from: 4, count: 1 },
    ]);
  });

  it('knows which agent-level faults are in effect, and ends them', () => {
    const board = new FaultBoard(npuNode, START);
    const hang = board.add({ kind: 'tool-hang', seconds: 5 }, START);
    const silence = board.add({ kind: 'silence' }, START);
    expect(board.active('tool-hang', START + 4999)).toBe(true);
    expect(board.active('tool-hang', START + 5000)).toBe(false);
    expect(board.active('silence', START + 60_000)).toBe(true);
    expect(board.end(silence.id, START + 61_000)).toBe(true);
    expect(board.active('silence', START + 61_000)).toBe(false);
    expect(board.end(silence.id, START + 62_000)).toBe(false);
    expect(board.end(hang.id, START + 62_000)).toBe(false);
    expect(board.list().map((f) => f.id)).toEqual([hang.id, silence.id]);
  });

  it('reports node-problem faults as a node check would, while in effect', async () => {
    const board = new FaultBoard(npuNode, START);
    const nic = board.add({ kind: 'node-problem', reason: 'nic-link-down', seconds: 10 }, START);
    board.add({ kind: 'node-problem', reason: 'oom-kill-storm' }, START + 1000);
    const check = simNodeCheck(board);
    expect((await check.run(START + 1000, new AbortController().signal)).map((p) => p.reason)).toEqual([
      'nic-link-down',
      'oom-kill-storm',
    ]);
    expect(board.nodeProblems(START + 10_000).map((p) => p.reason)).toEqual(['oom-kill-storm']);
    expect(board.nodeProblems(START)[0]?.message).toBe(`injected by the simulator (fault ${nic.id})`);
    expect(board.timeline()).toEqual([]);
    expect(() => board.add({ kind: 'node-problem' }, START)).toThrow('reason: required for node-problem');
    expect(() => board.add({ kind: 'silence', reason: 'nvlink-down' }, START)).toThrow(/^reason: /);
    expect(() => board.add({ kind: 'node-problem', reason: 'nvlink-down', device: 'npu0' }, START)).toThrow(
      /^device: /,
    );
  });

  it('a fault ended in its first second still lasts one sample', () => {
    const board = new FaultBoard(npuNode, START);
    const f = board.add({ kind: 'link-down', device: 'npu0' }, START + 1200);
    board.end(f.id, START + 1300);
    expect(board.timeline()).toEqual([
      { kind: 'link-down', device: 'npu0', node: 'atlas-1', from: 1, to: 2, power: 'kept' },
    ]);
  });

  it('refuses faults naming no device of the node, or a device for a node fault', () => {
    const board = new FaultBoard(npuNode, START);
    expect(() => board.add({ kind: 'hot', device: 'gpu0' }, START)).toThrow(SimFaultError);
    expect(() => board.add({ kind: 'hot', device: 'gpu0' }, START)).toThrow(/^device: atlas-1 has no gpu0/);
    expect(() => board.add({ kind: 'hot' }, START)).toThrow(/^device: required for hot/);
    expect(() => board.add({ kind: 'silence', device: 'npu0' }, START)).toThrow(/^device: silence acts/);
    expect(() => board.add({ kind: 'xid', device: 'npu0' }, START)).toThrow(/^kind: xid needs a GPU node/);
    expect(new FaultBoard(gpuNode, START).add({ kind: 'xid', device: 'gpu2' }, START).kind).toBe('xid');
    expect(board.list()).toEqual([]);
  });

  it('reports holder faults as the kubelet would, by resource id, while in effect', () => {
    const board = new FaultBoard(npuNode, START);
    const payload = { family: '910B', npus: [] } as { family: string };
    expect(simDeviceHolders(board, payload, START)).toBeUndefined();
    board.add({ kind: 'holder', device: 'npu3', pod: 'team-a/train-0', seconds: 10 }, START);
    board.add({ kind: 'holder', device: 'npu3', pod: 'team-a/infer-0' }, START);
    expect([...(board.holders(START) ?? [])]).toEqual([['npu3', ['team-a/infer-0', 'team-a/train-0']]]);
    expect([...(board.holders(START + 10_000) ?? [])]).toEqual([['npu3', ['team-a/infer-0']]]);
    const snapshot = npuSnapshot({ seq: 1, t: 0 }, [{ npu: 2 }, { npu: 3 }]);
    expect(simDeviceHolders(board, snapshot.payload, START + 10_000)).toEqual([
      { resource_id: 'Ascend910-3', pods: [{ namespace: 'team-a', name: 'infer-0', container: 'main' }] },
    ]);
    expect(() => board.add({ kind: 'holder', device: 'npu3' }, START)).toThrow('pod: required for holder');
    expect(() => board.add({ kind: 'hot', device: 'npu3', pod: 'a/b' }, START)).toThrow(
      'pod: only holder takes a pod',
    );
    expect(() => board.add({ kind: 'holder', pod: 'a/b' }, START)).toThrow('device: required for holder');
    expect(simFaultRequestSchema.safeParse({ kind: 'holder', device: 'npu3', pod: 'A/b' }).success).toBe(
      false,
    );
    expect(simFaultRequestSchema.safeParse({ kind: 'holder', device: 'npu3', pod: 'a/b/c' }).success).toBe(
      false,
    );
  });
});

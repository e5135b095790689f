import { describe, expect, it } from '@jest/globals';
import { snapshotSchema, type Payload } from '../../contracts/index.js';
import { NpuFaultError } from '../errors.js';
import type { Fault } from './faults.js';
import { buildNode, type SimKind } from './fleet.js';
import { DEFAULT_START, generateTrace } from './generate.js';
import { createLiveNode } from './live.js';

const START = DEFAULT_START;
/** Epoch ms inside second `s` (half a second in, as an agent with some phase would read). */
const inSecond = (s: number): number => START + s * 1000 + 500;

function gpus(payload: Payload | null) {
  if (payload?.family !== 'nvidia') throw new Error('not an nvidia payload');
  return payload.gpus;
}

describe('createLiveNode', () => {
  it.each<SimKind>(['910B', 'A3', '310P', 'nvidia'])(
    'reads a %s node second by second exactly as generateTrace does, faults and all',
    (kind) => {
      const node = buildNode('live-node-1', kind, 5);
      const device = kind === '310P' ? 'npu2' : kind === 'nvidia' ? 'gpu1' : 'npu1';
      const faults: Fault[] = [
        { kind: 'heat', node: node.name, device, from: 3 },
        { kind: 'ecc-storm', node: node.name, device, from: 5, to: 20 },
        { kind: 'vanish', node: node.name, device: node.devices[0]!.id, from: 8, to: 11 },
        { kind: 'silence', node: node.name, from: 12, to: 14 },
        { kind: 'cached', node: node.name, from: 16, to: 18 },
        ...(kind === 'nvidia' ? [{ kind: 'xid', node: node.name, device, xid: 79, from: 22 } as const] : []),
      ];
      const trace = generateTrace({ nodes: [node], seconds: 30, faults, seed: 5 });
      const live = createLiveNode(node, { seed: 5, start: START });
      const read = Array.from({ length: 30 }, (_, s) => live.sample(inSecond(s), faults));
      const bySecond = new Map(
        trace.snapshots.map((x) => [live.secondAt(Date.parse(x.collected_at)), x.payload]),
      );
      expect(read).toEqual(Array.from({ length: 30 }, (_, s) => bySecond.get(s) ?? null));
      expect(read.filter((p) => p === null)).toHaveLength(2);
    },
  );

  it('steps the seconds a reader skipped, so a gap does not change what follows', () => {
    const node = buildNode('gpu-live', 'nvidia', 1);
    const faults: Fault[] = [{ kind: 'ecc-storm', node: node.name, device: 'gpu0', from: 2 }];
    const everySecond = createLiveNode(node, { start: START });
    const sparse = createLiveNode(node, { start: START });
    const dense = Array.from({ length: 20 }, (_, s) => everySecond.sample(inSecond(s), faults));
    expect(sparse.sample(inSecond(19), faults)).toEqual(dense[19]);
    expect(gpus(dense[19] ?? null)[0]!.ecc_corrected_volatile).toBeGreaterThan(
      gpus(dense[2] ?? null)[0]!.ecc_corrected_volatile!,
    );
  });

  it('re-reads the current second from where it began: a fault injected mid-second shows, counters grow once', () => {
    const node = buildNode('gpu-live', 'nvidia', 1);
    const live = createLiveNode(node, { start: START });
    for (let s = 0; s < 5; s++) live.sample(inSecond(s), []);
    const before = gpus(live.sample(inSecond(5), []))[1]!;
    const uncorrectable: Fault = { kind: 'ecc-uncorrectable', node: node.name, device: 'gpu1', from: 5 };
    const after = gpus(live.sample(inSecond(5) + 300, [uncorrectable]))[1]!;
    const again = gpus(live.sample(inSecond(5) + 400, [uncorrectable]))[1]!;
    expect(after.ecc_uncorrected_volatile).toBe(before.ecc_uncorrected_volatile! + 1);
    expect(again).toEqual(after);
    // The same as a node that had the fault all along.
    const planned = createLiveNode(node, { start: START });
    for (let s = 0; s < 5; s++) planned.sample(inSecond(s), []);
    expect(gpus(planned.sample(inSecond(5), [uncorrectable]))[1]).toEqual(after);
  });

  it('keeps an XID at the time it happened, and reads an earlier time as the current second', () => {
    const node = buildNode('gpu-live', 'nvidia', 1);
    const xid: Fault = { kind: 'xid', node: node.name, device: 'gpu0', xid: 79, from: 3, to: 6 };
    const live = createLiveNode(node, { start: START });
    const events = Array.from({ length: 6 }, (_, s) => gpus(live.sample(inSecond(s), [xid]))[0]!.xid_events);
    expect(events[3]).toHaveLength(1);
    expect(events[4]).toEqual(events[3]);
    expect(events[2]).toEqual([]);
    // A copy of the fault (a fault board hands out new objects) is the same event.
    expect(gpus(live.sample(inSecond(5) + 100, [{ ...xid }]))[0]!.xid_events).toEqual(events[3]);
    // Second 2 again reads second 5, where the XID still holds, at the time it happened.
    expect(gpus(live.sample(inSecond(2), [xid]))[0]!.xid_events).toEqual(events[3]);
  });

  it('gives payloads that make valid snapshots', () => {
    const node = buildNode('atlas300-live', '310P', 2);
    const live = createLiveNode(node, { seed: 'x', start: START });
    const payload = live.sample(inSecond(0));
    const snapshot = {
      schema: 'hdc.health/v1',
      node: node.name,
      seq: 1,
      collected_at: new Date(inSecond(0)).toISOString(),
      collector: 'sim',
      payload,
    };
    expect(snapshotSchema.safeParse(snapshot).success).toBe(true);
  });

  it('refuses a fault for another node or device, and a start that is not a time', () => {
    const node = buildNode('gpu-live', 'nvidia', 1);
    const live = createLiveNode(node, { start: START });
    expect(() => live.sample(START, [{ kind: 'silence', node: 'other', from: 0 }])).toThrow(
      /fault silence: it is for node other, not gpu-live/,
    );
    expect(() => live.sample(START, [{ kind: 'heat', node: node.name, device: 'npu0', from: 0 }])).toThrow(
      NpuFaultError,
    );
    expect(() => createLiveNode(node, { start: Number.NaN })).toThrow(/start: not a time/);
  });
});

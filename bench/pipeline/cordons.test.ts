import { describe, expect, it } from '@jest/globals';
import { cordonLatencies, isCordoned, CORDON_TAINT } from './cordons.js';
import type { InjectedFault } from './fleet.js';

const fault = (node: string, injectedAt: number): InjectedFault => ({
  node,
  device: 'npu0',
  injectedAt,
  restoreAt: injectedAt + 10_000,
});

describe('cordonLatencies', () => {
  it('times the first fault on each node to its cordon, and ignores later faults and earlier cordons', () => {
    const faults = [fault('a', 1000), fault('a', 1500), fault('b', 2000), fault('c', 3000), fault('d', 4000)];
    const cordoned = new Map([
      ['a', 1800],
      ['b', 1900], // cordoned before its fault: not caused by it
      ['c', 3400],
    ]);
    expect(cordonLatencies(faults, cordoned).sort((x, y) => x - y)).toEqual([400, 800]);
  });

  it('times from another start when asked, leaving out faults without one', () => {
    const faults = [fault('a', 1000), fault('c', 3000)];
    const cordoned = new Map([
      ['a', 1800],
      ['c', 3400],
    ]);
    const seen = new Map([[faults[0]!, 1700]]);
    expect(cordonLatencies(faults, cordoned, (f) => seen.get(f))).toEqual([100]);
  });
});

describe('isCordoned', () => {
  it('needs both the unschedulable flag and the taint', () => {
    const taint = { key: CORDON_TAINT, effect: 'NoSchedule' };
    expect(isCordoned({ spec: { unschedulable: true, taints: [taint] } })).toBe(true);
    expect(isCordoned({ spec: { unschedulable: true } })).toBe(false);
    expect(isCordoned({ spec: { taints: [taint] } })).toBe(false);
  });
});

import { describe, expect, it } from '@jest/globals';
import type { SnapshotInput } from '../../contracts/index.js';
import { gpuSnapshot } from '../../contracts/testing.js';
import { MAX_XID_EVENTS, carryOneShotEvents, oneShotEventCount } from './carry.js';

type Xid = { xid: number; at?: string | null };
type GpuSpec = { index: number; bus_id?: string | null; uuid?: string | null; xids?: Xid[] };

function snapshot(seq: number, gpus: GpuSpec[]): SnapshotInput {
  return {
    ...gpuSnapshot({ seq }),
    payload: {
      family: 'nvidia',
      gpus: gpus.map((g) => ({
        index: g.index,
        bus_id: g.bus_id === undefined ? `0000:1${g.index}:00.0` : g.bus_id,
        uuid: g.uuid === undefined ? `GPU-${g.index}` : g.uuid,
        xid_events: g.xids ?? [],
      })),
    },
  };
}

function xids(s: SnapshotInput): Xid[][] {
  return s.payload.family === 'nvidia' ? s.payload.gpus.map((g) => g.xid_events ?? []) : [];
}

const A: Xid = { xid: 79, at: '2026-01-01T00:00:01.000Z' };
const B: Xid = { xid: 48, at: '2026-01-01T00:00:02.000Z' };
const C: Xid = { xid: 13, at: null };

describe('carryOneShotEvents', () => {
  it('adds the dropped XIDs before the later ones, de-duplicated by xid and time', () => {
    const dropped = snapshot(1, [{ index: 0, xids: [A, C] }, { index: 1 }]);
    const into = snapshot(2, [{ index: 0, xids: [A, B] }, { index: 1 }]);
    const { snapshot: merged, unplaced } = carryOneShotEvents(dropped, into);
    expect(xids(merged)).toEqual([[A, C, B], []]);
    expect(unplaced).toBe(0);
    expect(xids(into)).toEqual([[A, B], []]); // not modified
  });

  it('tells the same XID number at another time apart', () => {
    const later = { ...A, at: '2026-01-01T00:00:09.000Z' };
    const { snapshot: merged } = carryOneShotEvents(
      snapshot(1, [{ index: 0, xids: [A] }]),
      snapshot(2, [{ index: 0, xids: [later] }]),
    );
    expect(xids(merged)).toEqual([[A, later]]);
  });

  it.each([
    [
      'bus id (case aside), when the index changed',
      { index: 0, bus_id: '0000:AB:00.0' },
      { index: 1, bus_id: '0000:ab:00.0' },
    ],
    [
      'UUID when there is no bus id',
      { index: 0, bus_id: null, uuid: 'GPU-x' },
      { index: 3, bus_id: null, uuid: 'GPU-x' },
    ],
    [
      'index when neither is known',
      { index: 2, bus_id: null, uuid: null },
      { index: 2, bus_id: null, uuid: null },
    ],
  ])('matches the GPU by %s', (_name, from: GpuSpec, to: GpuSpec) => {
    const { snapshot: merged, unplaced } = carryOneShotEvents(
      snapshot(1, [{ ...from, xids: [A] }]),
      snapshot(2, [{ index: 9, bus_id: '0000:99:00.0', uuid: 'other' }, to]),
    );
    expect(xids(merged)).toEqual([[], [A]]);
    expect(unplaced).toBe(0);
  });

  it('counts the events of a GPU the later snapshot does not list as unplaced', () => {
    const { snapshot: merged, unplaced } = carryOneShotEvents(
      snapshot(1, [
        { index: 0, xids: [A, B] },
        { index: 1, xids: [C] },
      ]),
      snapshot(2, [{ index: 1 }]),
    );
    expect(xids(merged)).toEqual([[C]]);
    expect(unplaced).toBe(2);
  });

  it('keeps the newest MAX_XID_EVENTS', () => {
    const many = Array.from({ length: MAX_XID_EVENTS }, (_, i) => ({ xid: i, at: null }));
    const { snapshot: merged } = carryOneShotEvents(
      snapshot(1, [{ index: 0, xids: [B] }]),
      snapshot(2, [{ index: 0, xids: many }]),
    );
    expect(xids(merged)[0]).toEqual(many);
  });

  it('returns the later snapshot itself when there is nothing to carry', () => {
    const into = snapshot(2, [{ index: 0 }]);
    expect(carryOneShotEvents(snapshot(1, [{ index: 0 }]), into).snapshot).toBe(into);
  });

  it('counts events with nowhere to go when the later snapshot is not of GPUs', () => {
    const npu: SnapshotInput = { ...gpuSnapshot({ seq: 2 }), payload: { family: '910B', npus: [] } };
    expect(carryOneShotEvents(snapshot(1, [{ index: 0, xids: [A] }]), npu)).toEqual({
      snapshot: npu,
      unplaced: 1,
    });
    expect(oneShotEventCount(npu)).toBe(0);
  });
});

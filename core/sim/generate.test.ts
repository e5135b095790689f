import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { snapshotSchema, type Snapshot } from '../../contracts/index.js';
import { NpuFaultError } from '../errors.js';
import type { Fault } from './faults.js';
import { mixedFleet, roundRobinFleet } from './fleet.js';
import { DEFAULT_START, deliver, generateTrace } from './generate.js';

const fleet = mixedFleet(3);
const of = (snapshots: Snapshot[], node: string): Snapshot[] => snapshots.filter((s) => s.node === node);
const second = (s: Snapshot, start = DEFAULT_START): number =>
  Math.floor((Date.parse(s.collected_at) - start) / 1000);

function npus(s: Snapshot) {
  if (s.payload.family !== '910B') throw new Error('not 910B');
  return s.payload.npus;
}
function cards(s: Snapshot) {
  if (s.payload.family !== '310P') throw new Error('not 310P');
  return s.payload.cards;
}
function gpus(s: Snapshot) {
  if (s.payload.family !== 'nvidia') throw new Error('not nvidia');
  return s.payload.gpus;
}

describe('mixed fleet', () => {
  it('has 16 nodes of four kinds and 136 devices with unique display ids per node', () => {
    expect(fleet).toHaveLength(16);
    expect(fleet.map((n) => n.kind).join(',')).toBe(
      [
        '910B',
        '910B',
        '910B',
        '910B',
        '910B',
        'A3',
        '310P',
        '310P',
        '310P',
        '310P',
        '310P',
        ...Array(5).fill('nvidia'),
      ].join(','),
    );
    expect(fleet.reduce((n, x) => n + x.devices.length, 0)).toBe(136);
    for (const node of fleet) expect(new Set(node.devices.map((d) => d.id)).size).toBe(node.devices.length);
    const a3 = fleet[5]!;
    expect(a3.name).toBe('atlas900-node-006');
    expect(a3.devices.slice(0, 3).map((d) => d.id)).toEqual(['npu0', 'npu0-1', 'npu1']);
  });

  it('gives each GPU its own uuid and each 910B chip its own bus id', () => {
    const uuids = fleet.flatMap((n) => n.devices.map((d) => d.uuid)).filter((u) => u !== null);
    expect(uuids).toHaveLength(40);
    expect(new Set(uuids).size).toBe(40);
    for (const node of fleet.filter((n) => n.family === '910B'))
      expect(new Set(node.devices.map((d) => d.busId)).size).toBe(node.devices.length);
  });
});

describe('generateTrace', () => {
  const trace = generateTrace({ nodes: fleet, seconds: 30, seed: 3 });

  it('produces one snapshot per node per second, in collected_at order', () => {
    expect(trace.snapshots).toHaveLength(16 * 30);
    const times = trace.snapshots.map((s) => Date.parse(s.collected_at));
    for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThanOrEqual(times[i - 1]!);
    for (const node of fleet)
      expect(of(trace.snapshots, node.name).map((s) => second(s))).toEqual(
        Array.from({ length: 30 }, (_, i) => i),
      );
  });

  it('produces snapshots the contract schema accepts unchanged (every default already filled)', () => {
    for (const s of trace.snapshots) {
      const parsed = snapshotSchema.parse(JSON.parse(JSON.stringify(s)));
      expect(isDeepStrictEqual(parsed, s)).toBe(true);
    }
  });

  it('keeps one boot per node with seq growing by one', () => {
    for (const node of fleet) {
      const list = of(trace.snapshots, node.name);
      expect(new Set(list.map((s) => s.boot_id)).size).toBe(1);
      list.forEach((s, i) => expect(s.seq).toBe(list[0]!.seq + i));
    }
    expect(new Set(fleet.map((n) => of(trace.snapshots, n.name)[0]!.boot_id)).size).toBe(16);
  });

  it('is a pure function of its options', () => {
    expect(generateTrace({ nodes: fleet, seconds: 30, seed: 3 })).toEqual(trace);
    const other = generateTrace({ nodes: fleet, seconds: 30, seed: 4 });
    expect(other.snapshots.map((s) => s.collected_at)).not.toEqual(
      trace.snapshots.map((s) => s.collected_at),
    );
  });

  it('starts at the given time', () => {
    const t = generateTrace({ nodes: 1, seconds: 1, start: '2030-01-01T00:00:00Z' });
    expect(t.snapshots[0]!.collected_at.startsWith('2030-01-01T00:00:00.')).toBe(true);
  });

  it('keeps healthy devices realistic: under 80 °C, power and memory plausible, card power on 310P', () => {
    for (const s of trace.snapshots) {
      if (s.payload.family === '910B') {
        for (const n of s.payload.npus) {
          expect(n.temp_c!).toBeLessThan(80);
          expect(n.temp_c!).toBeGreaterThan(30);
          if (n.chip === 0) expect(n.power_w!).toBeGreaterThan(60);
          else expect(n.power_w).toBeNull();
          expect(n.hbm.used_mb!).toBeLessThanOrEqual(n.hbm.total_mb!);
        }
      } else if (s.payload.family === '310P') {
        expect(s.payload.cards).toHaveLength(4);
        for (const c of s.payload.cards) {
          expect(c.chips).toHaveLength(2);
          expect(c.mcu_power_w!).toBeGreaterThan(20);
          for (const chip of c.chips) expect(chip.power_w).toBeNull();
        }
      } else {
        for (const g of s.payload.gpus) expect(g.temperature_gpu!).toBeLessThan(75);
      }
    }
  });

  it('accepts a node count and builds a round-robin fleet of eight devices per node', () => {
    const t = generateTrace({ nodes: 3, seconds: 2 });
    expect(t.fleet.map((n) => n.family)).toEqual(['910B', '310P', 'nvidia']);
    expect(t.snapshots).toHaveLength(6);
  });

  it('rejects a fault on a node or device the fleet lacks, naming it', () => {
    const bad =
      (fault: Fault): (() => unknown) =>
      () =>
        generateTrace({ nodes: fleet, seconds: 1, faults: [fault] });
    expect(bad({ kind: 'silence', node: 'nope', from: 0 })).toThrow(/no node nope/);
    expect(bad({ kind: 'heat', node: 'gpu-node-001', device: 'npu0', from: 0 })).toThrow(NpuFaultError);
    expect(bad({ kind: 'xid', node: 'atlas900-node-001', device: 'npu0', from: 0, xid: 79 })).toThrow(
      /not a GPU node/,
    );
    expect(bad({ kind: 'silence', node: 'gpu-node-001', from: -1 })).toThrow(/from/);
  });

  it('holds for any small fleet, length and seed (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer(),
        (nodes, seconds, seed) => {
          const t = generateTrace({ nodes, seconds, seed });
          if (t.snapshots.length !== nodes * seconds) return false;
          let last = 0;
          for (const s of t.snapshots) {
            const ms = Date.parse(s.collected_at);
            if (ms < last || !snapshotSchema.safeParse(s).success) return false;
            last = ms;
            const count =
              s.payload.family === '910B'
                ? s.payload.npus.length
                : s.payload.family === 'nvidia'
                  ? s.payload.gpus.length
                  : s.payload.cards.flatMap((c) => c.chips).length;
            if (count !== 8) return false;
          }
          return true;
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('faults', () => {
  const node910 = 'atlas900-node-001';
  const node310 = 'atlas300-node-001';
  const nodeGpu = 'gpu-node-001';
  const run = (faults: Fault[], seconds = 40): Snapshot[] =>
    generateTrace({ nodes: fleet, seconds, faults, seed: 3 }).snapshots;

  it('heat: once ramped, every sample of the device is over 85 °C; its neighbours stay cool', () => {
    const list = of(run([{ kind: 'heat', node: node910, device: 'npu2', from: 5, rampSeconds: 4 }]), node910);
    for (const s of list.slice(8)) expect(npus(s)[2]!.temp_c!).toBeGreaterThan(85);
    for (const s of list.slice(0, 5)) expect(npus(s)[2]!.temp_c!).toBeLessThan(80);
    for (const s of list) expect(npus(s)[3]!.temp_c!).toBeLessThan(80);
  });

  it('spike: exactly the two samples of the window are hot', () => {
    const list = of(run([{ kind: 'spike', node: node910, device: 'npu0', from: 10 }]), node910);
    const hot = list.filter((s) => npus(s)[0]!.temp_c! > 85).map((s) => second(s));
    expect(hot).toEqual([10, 11]);
  });

  it('ecc-storm: the corrected counter grows at least every fourth sample and stops with the storm', () => {
    const list = of(run([{ kind: 'ecc-storm', node: nodeGpu, device: 'gpu1', from: 5, to: 25 }]), nodeGpu);
    const ce = list.map((s) => gpus(s)[1]!.ecc_corrected_volatile!);
    for (let s = 5; s + 3 < 25; s++) expect(ce[s + 3]!).toBeGreaterThan(ce[s - 1]!);
    expect(ce[39]).toBe(ce[25]);
    expect(list.every((s) => gpus(s)[1]!.ecc_uncorrected_volatile === 0)).toBe(true);
  });

  it('ecc-uncorrectable: one step of the uncorrectable counter, kept afterwards', () => {
    const list = of(
      run([{ kind: 'ecc-uncorrectable', node: node310, device: 'npu5', from: 12, count: 2 }]),
      node310,
    );
    const dbe = list.map((s) => cards(s)[2]!.chips[1]!.ddr.ecc_dbe);
    expect(dbe.slice(0, 12).every((x) => x === 0)).toBe(true);
    expect(dbe.slice(12).every((x) => x === 2)).toBe(true);
  });

  it('link-down on 310P takes the whole card down, keeping card power; power lost reads null', () => {
    const kept = of(run([{ kind: 'link-down', node: node310, device: 'npu3', from: 20 }]), node310);
    expect(kept.map((s) => cards(s)[1]!.pcie_link)).toEqual([...Array(20).fill(1), ...Array(20).fill(0)]);
    expect(kept.every((s) => cards(s)[0]!.pcie_link === 1 && cards(s)[1]!.mcu_power_w !== null)).toBe(true);
    const lost = of(
      run([{ kind: 'link-down', node: node910, device: 'npu4', from: 20, power: 'lost' }]),
      node910,
    );
    expect(npus(lost[25]!)[4]).toMatchObject({ power_w: null, pcie: { link: 'down' } });
    expect(npus(lost[19]!)[4]!.pcie.link).toBe('up');
  });

  it('link-down on a GPU reads as off the bus: every metric null, identity kept', () => {
    const list = of(run([{ kind: 'link-down', node: nodeGpu, device: 'gpu6', from: 3 }]), nodeGpu);
    expect(gpus(list[5]!)[6]).toMatchObject({
      temperature_gpu: null,
      power_draw_w: null,
      ecc_corrected_volatile: null,
      pcie_link_gen: null,
      present: true,
    });
    expect(gpus(list[5]!)[6]!.uuid).toBe(gpus(list[0]!)[6]!.uuid);
  });

  it('vanish omitted leaves the device out (a 310P card with no chip left goes whole); absent sends present:false', () => {
    const omitted = of(
      run([
        { kind: 'vanish', node: node310, device: 'npu6', from: 10 },
        { kind: 'vanish', node: node310, device: 'npu7', from: 10 },
        { kind: 'vanish', node: node910, device: 'npu7', from: 10, to: 20 },
      ]),
      node310,
    );
    expect(omitted.map((s) => cards(s).length)).toEqual([...Array(10).fill(4), ...Array(30).fill(3)]);
    const n910 = of(run([{ kind: 'vanish', node: node910, device: 'npu7', from: 10, to: 20 }]), node910);
    expect(n910.map((s) => npus(s).length)).toEqual([
      ...Array(10).fill(8),
      ...Array(10).fill(7),
      ...Array(20).fill(8),
    ]);
    const absent = of(
      run([{ kind: 'vanish', node: nodeGpu, device: 'gpu2', from: 10, mode: 'absent' }]),
      nodeGpu,
    );
    expect(gpus(absent[15]!)[2]).toMatchObject({
      present: false,
      temperature_gpu: null,
      ecc_uncorrected_volatile: null,
    });
  });

  it('health, fault-code and xid show up in the tool fields while active', () => {
    const snaps = run([
      { kind: 'health', node: node910, device: 'npu1', from: 5, to: 7, health: 'Critical' },
      { kind: 'fault-code', node: node310, device: 'npu0', from: 5, to: 6, code: '80e01801' },
      { kind: 'xid', node: nodeGpu, device: 'gpu0', from: 5, to: 7, xid: 79 },
    ]);
    expect(
      of(snaps, node910)
        .map((s) => npus(s)[1]!.health)
        .slice(4, 8),
    ).toEqual(['OK', 'Critical', 'Critical', 'OK']);
    expect(cards(of(snaps, node310)[5]!)[0]!.chips[0]!.error_codes).toEqual(['80E01801']);
    const xids = of(snaps, nodeGpu).map((s) => gpus(s)[0]!.xid_events);
    expect(xids[4]).toEqual([]);
    expect(xids[5]).toEqual([{ xid: 79, at: of(snaps, nodeGpu)[5]!.collected_at }]);
    expect(xids[6]).toEqual(xids[5]);
    expect(xids[7]).toEqual([]);
  });

  it('silence: no snapshot in the window, seq continues after it', () => {
    const list = of(run([{ kind: 'silence', node: nodeGpu, from: 10, to: 20 }]), nodeGpu);
    expect(list.map((s) => second(s))).toEqual([
      ...Array.from({ length: 10 }, (_, i) => i),
      ...Array.from({ length: 20 }, (_, i) => i + 20),
    ]);
    expect(list[10]!.seq).toBe(list[9]!.seq + 1);
  });

  it('restart: a gap, then a new boot_id with seq from 1; counters survive unless the driver reloads', () => {
    const faults: Fault[] = [
      { kind: 'ecc-uncorrectable', node: nodeGpu, device: 'gpu0', from: 2 },
      { kind: 'restart', node: nodeGpu, from: 10 },
      { kind: 'restart', node: node910, from: 10, to: 13 },
    ];
    const snaps = run(faults);
    const gpu = of(snaps, nodeGpu);
    expect(gpu.map((s) => second(s)).slice(8, 11)).toEqual([8, 9, 12]);
    expect(gpu[10]!.boot_id).not.toBe(gpu[9]!.boot_id);
    expect(gpu.slice(10).map((s) => s.seq)).toEqual(Array.from({ length: 28 }, (_, i) => i + 1));
    expect(gpus(gpu[10]!)[0]!.ecc_uncorrected_volatile).toBe(1);
    expect(
      of(snaps, node910)
        .map((s) => second(s))
        .slice(9, 11),
    ).toEqual([9, 13]);
    const reset = of(
      run([faults[0]!, { kind: 'restart', node: nodeGpu, from: 10, resetCounters: true }]),
      nodeGpu,
    );
    expect(gpus(reset[9]!)[0]!.ecc_uncorrected_volatile).toBe(1);
    expect(gpus(reset[10]!)[0]!.ecc_uncorrected_volatile).toBe(0);
  });

  it('cached: the last good payload is resent with cached:true and a growing seq', () => {
    const list = of(run([{ kind: 'cached', node: node910, from: 10, to: 15 }]), node910);
    expect(list.map((s) => s.cached).slice(9, 16)).toEqual([false, true, true, true, true, true, false]);
    for (const s of list.slice(10, 15)) expect(s.payload).toEqual(list[9]!.payload);
    expect(list[10]!.seq).toBe(list[9]!.seq + 1);
    expect(list[15]!.payload).not.toEqual(list[9]!.payload);
  });
});

describe('deliver', () => {
  it('delays every snapshot within bounds and returns them in arrival order', () => {
    const { snapshots } = generateTrace({ nodes: roundRobinFleet(6), seconds: 10 });
    const out = deliver(snapshots, { seed: 2, minDelayMs: 10, maxDelayMs: 300 });
    expect(out).toHaveLength(snapshots.length);
    expect(new Set(out.map((d) => d.snapshot)).size).toBe(snapshots.length);
    for (let i = 0; i < out.length; i++) {
      const delay = out[i]!.receivedAt - Date.parse(out[i]!.snapshot.collected_at);
      expect(delay).toBeGreaterThanOrEqual(10);
      expect(delay).toBeLessThanOrEqual(300);
      if (i > 0) expect(out[i]!.receivedAt).toBeGreaterThanOrEqual(out[i - 1]!.receivedAt);
    }
  });
});

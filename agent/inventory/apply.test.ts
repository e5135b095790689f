import { describe, expect, it } from '@jest/globals';
import { payloadSchema, snapshotSchema, type Payload } from '../../contracts/index.js';
import { normalise } from '../../core/normalise.js';
import { parseNpuSmiTable } from '../../core/parsers/index.js';
import { NPU_SMI_310P_TABLE, NPU_SMI_910B_TABLE } from '../../core/parsers/testing.js';
import { twoGpuPayload } from '../probe/testing.js';
import { applyInventory } from './apply.js';
import type { Inventory } from './scan.js';

const inventory = (overrides: Partial<Inventory>): Inventory => ({
  huawei: [],
  nvidia: [],
  deviceNodes: [],
  ...overrides,
});

/** What the engine would see of the payload's devices: key, presence, link. */
function observed(payload: Payload): Array<{ key: string; present: boolean; link: string | null }> {
  const snapshot = snapshotSchema.parse({
    schema: 'hdc.health/v1',
    node: 'n1',
    seq: 1,
    collected_at: '2026-01-01T00:00:00Z',
    collector: 'test',
    payload,
  });
  return normalise(snapshot).map((d) => ({ key: d.key, present: d.present, link: d.pcie_link_status }));
}

function asFamily<F extends Payload['family']>(payload: Payload, family: F): Payload & { family: F } {
  if (payload.family !== family) throw new Error(`expected the ${family} family, got ${payload.family}`);
  return payload as Payload & { family: F };
}

describe('applyInventory: NVIDIA', () => {
  const reported = twoGpuPayload(); // 0000:10:00.0 and 0000:11:00.0
  const installed = inventory({ nvidia: ['0000:10:00.0', '0000:11:00.0', '0000:3B:00.0'] });

  it('adds an installed GPU the tool left out, by bus id, as present:false with unknown readings', () => {
    const out = asFamily(applyInventory(reported, installed), 'nvidia');
    expect(out.gpus).toHaveLength(3);
    expect(out.gpus[2]).toMatchObject({
      index: 2,
      bus_id: '0000:3B:00.0',
      uuid: null,
      present: false,
      temperature_gpu: null,
    });
    expect(payloadSchema.safeParse(out).success).toBe(true);
    expect(observed(out).at(-1)).toEqual({ key: '0000:3B:00.0', present: false, link: null });
  });

  it('matches bus ids in any spelling (8-digit domain, lower case)', () => {
    const lower = structuredClone(reported);
    asFamily(lower, 'nvidia').gpus[1]!.bus_id = '00000000:11:00.0';
    const out = asFamily(
      applyInventory(lower, inventory({ nvidia: ['0000:10:00.0', '0000:11:00.0'] })),
      'nvidia',
    );
    expect(out.gpus).toHaveLength(2);
  });

  it('returns the payload itself when nothing is missing, and leaves the input unchanged otherwise', () => {
    expect(applyInventory(reported, inventory({ nvidia: ['0000:10:00.0'] }))).toBe(reported);
    const before = JSON.stringify(reported);
    applyInventory(reported, installed);
    expect(JSON.stringify(reported)).toBe(before);
  });

  it('gives the added GPU the identity it had in the previous payload (so its key is the same device)', () => {
    const previous = structuredClone(reported);
    const prevGpus = asFamily(previous, 'nvidia').gpus;
    prevGpus.push({ ...structuredClone(prevGpus[0]!), index: 2, uuid: 'GPU-lost', bus_id: '0000:3B:00.0' });
    const out = asFamily(applyInventory(reported, installed, previous), 'nvidia');
    expect(out.gpus[2]).toMatchObject({
      index: 2,
      uuid: 'GPU-lost',
      name: 'NVIDIA H100 80GB HBM3',
      present: false,
    });
    expect(observed(out).at(-1)?.key).toBe('GPU-lost');
  });

  it('never gives an added GPU an index a reported one has', () => {
    const out = asFamily(
      applyInventory(reported, inventory({ nvidia: ['0000:01:00.0', '0000:10:00.0', '0000:11:00.0'] })),
      'nvidia',
    );
    expect(out.gpus.map((g) => g.index).sort()).toEqual([0, 1, 2]);
    expect(out.gpus.find((g) => g.bus_id === '0000:01:00.0')?.present).toBe(false);
  });

  it('ignores the Huawei list on an NVIDIA payload', () => {
    expect(applyInventory(reported, inventory({ huawei: ['0000:C1:00.0'], deviceNodes: ['davinci0'] }))).toBe(
      reported,
    );
  });
});

describe('applyInventory: 910B family', () => {
  const table = parseNpuSmiTable(NPU_SMI_910B_TABLE); // NPU 0 at C1, NPU 1 at C2

  it('adds a missing NPU by bus id when the payload carries bus ids', () => {
    const out = asFamily(
      applyInventory(table, inventory({ huawei: ['0000:C1:00.0', '0000:C2:00.0', '0000:C3:00.0'] })),
      '910B',
    );
    expect(out.npus).toHaveLength(3);
    expect(out.npus[2]).toMatchObject({
      npu: 2,
      chip: 0,
      pcie: { bus_id: '0000:C3:00.0', link: null },
      present: false,
    });
    expect(payloadSchema.safeParse(out).success).toBe(true);
    expect(observed(out).at(-1)).toEqual({ key: '0000:C3:00.0', present: false, link: null });
  });

  it('keeps the NPU and chip numbers and name the device had before', () => {
    const previous = structuredClone(table);
    const npus = asFamily(previous, '910B').npus;
    npus.push({
      ...structuredClone(npus[0]!),
      npu: 7,
      name: '910B3',
      pcie: { bus_id: '0000:C3:00.0', link: 'up' },
    });
    const out = asFamily(applyInventory(table, inventory({ huawei: ['0000:C3:00.0'] }), previous), '910B');
    expect(out.npus.at(-1)).toMatchObject({ npu: 7, chip: 0, name: '910B3', present: false, temp_c: null });
  });

  it('without bus ids, adds a missing NPU by /dev/davinci<N> taken as NPU id N', () => {
    const noBus = structuredClone(table);
    for (const npu of asFamily(noBus, '910B').npus) npu.pcie.bus_id = null;
    const out = asFamily(
      applyInventory(
        noBus,
        inventory({ huawei: ['0000:C1:00.0'], deviceNodes: ['davinci0', 'davinci1', 'davinci3', 'nvidia0'] }),
      ),
      '910B',
    );
    expect(out.npus.map((n) => [n.npu, n.present])).toEqual([
      [0, true],
      [1, true],
      [3, false],
    ]);
    expect(observed(out).at(-1)).toEqual({ key: 'npu3', present: false, link: null });
  });

  it('does not guess from device nodes on a node with several chips per NPU (A3)', () => {
    const a3 = structuredClone(table);
    const npus = asFamily(a3, '910B').npus;
    for (const npu of npus) npu.pcie.bus_id = null;
    npus[1]!.npu = 0;
    npus[1]!.chip = 1;
    expect(applyInventory(a3, inventory({ deviceNodes: ['davinci0', 'davinci1', 'davinci2'] }))).toBe(a3);
  });
});

describe('applyInventory: 310P family', () => {
  const table = parseNpuSmiTable(NPU_SMI_310P_TABLE); // card 2944 at 0C, chips 0 and 1

  it('adds a missing card by its bus id, with one chip off the bus', () => {
    const out = asFamily(
      applyInventory(table, inventory({ huawei: ['0000:0C:00.0', '0000:0D:00.0'] })),
      '310P',
    );
    expect(out.cards).toHaveLength(2);
    expect(out.cards[1]).toMatchObject({ bus_id: '0000:0D:00.0', chips: [{ chip: 0, present: false }] });
    expect(payloadSchema.safeParse(out).success).toBe(true);
    expect(observed(out).at(-1)).toEqual({ key: '0000:0D:00.0/0', present: false, link: null });
  });

  it('restores the card number and every chip the card had before', () => {
    const previous = structuredClone(table);
    const cards = asFamily(previous, '310P').cards;
    cards.push({ ...structuredClone(cards[0]!), card: 3072, bus_id: '0000:0D:00.0' });
    const out = asFamily(applyInventory(table, inventory({ huawei: ['0000:0D:00.0'] }), previous), '310P');
    expect(out.cards[1]).toMatchObject({ card: 3072 });
    expect(out.cards[1]?.chips.map((c) => [c.chip, c.present])).toEqual([
      [0, false],
      [1, false],
    ]);
  });

  it('adds nothing when the cards carry no bus ids', () => {
    const noBus = structuredClone(table);
    for (const card of asFamily(noBus, '310P').cards) card.bus_id = null;
    expect(applyInventory(noBus, inventory({ huawei: ['0000:0D:00.0'], deviceNodes: ['davinci5'] }))).toBe(
      noBus,
    );
  });
});

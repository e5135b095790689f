import { describe, expect, it } from '@jest/globals';
import { snapshotSchema } from '../../contracts/index.js';
import { normalise } from '../normalise.js';
import { parseNpuSmiInfo, parseNpuSmiTable } from './npu-smi.js';
import { mergeNpuSmiDetails, UnknownDeviceError } from './npu-smi-merge.js';
import {
  NPU_SMI_310P_TABLE,
  NPU_SMI_910B_TABLE,
  NPU_SMI_T_ECC,
  NPU_SMI_T_HEALTH,
  NPU_SMI_T_POWER,
} from './testing.js';
import { describeWithRealFixtures, readRealFixture } from '../../test/fixtures.js';

const read = readRealFixture;
const envelope = (payload: unknown): unknown => ({
  schema: 'hdc.health/v1',
  node: 'n1',
  seq: 1,
  collected_at: '2026-11-29T08:00:00Z',
  collector: 'npu-smi',
  payload,
});

describe('mergeNpuSmiDetails (synthetic outputs)', () => {
  it('adds fault codes, health and HBM ECC to the NPU asked for, leaving the input as it was', () => {
    const table = parseNpuSmiTable(NPU_SMI_910B_TABLE);
    const before = JSON.stringify(table);
    const merged = mergeNpuSmiDetails(table, [
      { npu: 1, chip: 0, record: parseNpuSmiInfo(NPU_SMI_T_HEALTH) },
      { npu: 1, record: parseNpuSmiInfo(NPU_SMI_T_ECC) },
    ]);
    expect(JSON.stringify(table)).toBe(before);
    if (merged.family !== '910B') throw new Error('expected the 910B family');
    expect(merged.npus[1]).toMatchObject({
      health: 'Alarm',
      error_codes: ['A4025021', '8C03A000'],
      hbm: { ecc: { single_bit: 7, double_bit: 1 } },
    });
    expect(merged.npus[0]).toMatchObject({ error_codes: [], hbm: { ecc: { single_bit: null } } });
  });

  it('adds the MCU card power to a 310P card, split across its chips by normalise', () => {
    const merged = mergeNpuSmiDetails(parseNpuSmiTable(NPU_SMI_310P_TABLE), [
      { npu: 2944, record: parseNpuSmiInfo(NPU_SMI_T_POWER) },
    ]);
    if (merged.family !== '310P') throw new Error('expected the 310P family');
    expect(merged.cards[0]?.mcu_power_w).toBe(42.9);
    expect(normalise(snapshotSchema.parse(envelope(merged))).map((d) => d.power_w)).toEqual([21.45, 21.45]);
  });

  it('refuses a record for a device the table does not have', () => {
    const table = parseNpuSmiTable(NPU_SMI_910B_TABLE);
    expect(() =>
      mergeNpuSmiDetails(table, [{ npu: 9, chip: 0, record: parseNpuSmiInfo(NPU_SMI_T_HEALTH) }]),
    ).toThrow(new UnknownDeviceError(9, 0, 'health'));
  });
});

describeWithRealFixtures('mergeNpuSmiDetails (real npu-smi outputs)', () => {
  it('adds -t health fault codes and -t ecc counters to a 910 table, leaving the input as it was', () => {
    const table = parseNpuSmiTable(read('npu-smi-910a-8npu-1.txt'));
    const before = JSON.stringify(table);
    const merged = mergeNpuSmiDetails(table, [
      { npu: 1, chip: 0, record: parseNpuSmiInfo(read('npu-smi-t-health-910a-alarm-2.txt')) },
      { npu: 1, record: parseNpuSmiInfo(read('npu-smi-t-ecc-910a-1.txt')) },
    ]);
    expect(JSON.stringify(table)).toBe(before);
    if (merged.family !== '910B') throw new Error('expected the 910B family');
    const npu1 = merged.npus.find((n) => n.npu === 1);
    expect(npu1).toMatchObject({
      health: 'Alarm',
      error_codes: ['A4025021', '8C03A000', '8C084E00'],
      hbm: { ecc: { single_bit: 0, double_bit: 0 } },
    });
    // What the engine sees: the alarm and the codes, and ECC counters it can now follow.
    const devices = normalise(snapshotSchema.parse(envelope(merged)));
    expect(devices.find((d) => d.id === 'npu1')).toMatchObject({
      health: 'alarm',
      error_codes: ['A4025021', '8C03A000', '8C084E00'],
      ecc_errors: 0,
      ecc_uncorrectable: 0,
    });
    expect(devices.find((d) => d.id === 'npu0')?.ecc_errors).toBeNull();
  });

  it('adds the MCU card power (-t power, -t common) and chip temperatures to a 310P Duo card', () => {
    const table = parseNpuSmiTable(read('npu-smi-310p3-duo-3.txt'));
    const withPower = mergeNpuSmiDetails(table, [
      { npu: 2944, record: parseNpuSmiInfo(read('npu-smi-t-power-310p3-duo-1.txt')) },
    ]);
    if (withPower.family !== '310P') throw new Error('expected the 310P family');
    expect(withPower.cards[0]?.mcu_power_w).toBe(42.9);
    const devices = normalise(snapshotSchema.parse(envelope(withPower)));
    // Card power split across the card's two chips (§1: chip power, else card power / chips).
    expect(devices.map((d) => d.power_w)).toEqual([21.45, 21.45]);

    const withCommon = mergeNpuSmiDetails(table, [
      { npu: 2944, record: parseNpuSmiInfo(read('npu-smi-t-common-310p3-duo-1.txt')) },
    ]);
    if (withCommon.family !== '310P') throw new Error('expected the 310P family');
    expect(withCommon.cards[0]?.mcu_power_w).toBe(42.8);
    expect(withCommon.cards[0]?.chips.map((c) => c.temperature)).toEqual([45, 47]);
  });

  it('refuses a record for a device the table does not have, naming it', () => {
    const table = parseNpuSmiTable(read('npu-smi-910a-8npu-1.txt'));
    const health = parseNpuSmiInfo(read('npu-smi-t-health-910a-alarm-2.txt'));
    expect(() => mergeNpuSmiDetails(table, [{ npu: 9, chip: 0, record: health }])).toThrow(
      UnknownDeviceError,
    );
    expect(() => mergeNpuSmiDetails(table, [{ npu: 9, chip: 0, record: health }])).toThrow(
      'npu-smi info -t health: NPU 9 chip 0 is not in the device table',
    );
  });
});

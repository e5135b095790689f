import { describe, expect, it } from '@jest/globals';
import { READING_BOUNDS, READING_FIELDS, type ReadingField } from '../../contracts/index.js';
import { DEVICE_READINGS, boundDeviceReadings, boundReading, type OutOfRangeReading } from './common.js';

describe('boundReading', () => {
  it('keeps a value within its field’s bounds, the bounds included, and null', () => {
    const { min, max } = READING_BOUNDS.temperature;
    for (const value of [min, 0, 120, max, null]) expect(boundReading(value, 'temperature_gpu')).toBe(value);
  });

  it.each([
    ['temperature_gpu', 65535],
    ['temperature_gpu', 1e300],
    ['temp_c', -128],
    ['power_draw_w', -1],
    ['aicore_pct', 100.5],
    ['hbm.used_mb', 4294967295],
    ['pcie_link_width', 255],
    ['ecc_corrected_volatile', -1],
    ['ecc_corrected_volatile', 2 ** 53],
    ['temperature', Infinity],
    ['temperature', NaN],
  ] as [ReadingField, number][])('reads %s %d as null and tells it', (field, value) => {
    const told: OutOfRangeReading[] = [];
    expect(boundReading(value, field, (reading) => told.push(reading))).toBeNull();
    expect(told).toEqual([{ field, value }]);
  });
});

describe('boundDeviceReadings', () => {
  it('sets the out-of-range readings of a device to null, nested ones too, and counts them', () => {
    const npu = {
      npu: 99999,
      temp_c: 65535,
      power_w: 90,
      aicore_pct: null,
      hbm: { used_mb: 1, total_mb: -1, temp_c: 40, ecc: { single_bit: 2 ** 60, double_bit: 0 } },
    };
    const told: OutOfRangeReading[] = [];
    expect(boundDeviceReadings(npu, DEVICE_READINGS.npu910, (reading) => told.push(reading))).toBe(3);
    expect(npu).toEqual({
      npu: 99999,
      temp_c: null,
      power_w: 90,
      aicore_pct: null,
      hbm: { used_mb: 1, total_mb: null, temp_c: 40, ecc: { single_bit: null, double_bit: 0 } },
    });
    expect(told.map((reading) => reading.field)).toEqual(['temp_c', 'hbm.total_mb', 'hbm.ecc.single_bit']);
  });

  it('leaves what is not a number, and what is not an object, for the schema to judge', () => {
    const gpu = { temperature_gpu: 'hot', power_draw_w: [1e300], pcie_link_gen: true };
    expect(boundDeviceReadings(gpu, DEVICE_READINGS.gpu)).toBe(0);
    expect(gpu).toEqual({ temperature_gpu: 'hot', power_draw_w: [1e300], pcie_link_gen: true });
    for (const device of [null, 3, 'x', [], { hbm: 5 }])
      expect(boundDeviceReadings(device, DEVICE_READINGS.npu910)).toBe(0);
  });

  it('knows every bounded field of the contract, each under one kind of device', () => {
    const listed = Object.values(DEVICE_READINGS).flat();
    // power_w is the name of a 910B NPU's and a 310P chip's draw alike.
    expect(new Set(listed)).toEqual(new Set(Object.keys(READING_FIELDS)));
    expect(listed).toHaveLength(Object.keys(READING_FIELDS).length + 1);
  });
});

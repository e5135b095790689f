/**
 * A toy accelerator family, for the tests that show what adding a family takes: this one
 * folder, and one line in a registry (`defineFamilies([...FAMILY_LIST, toy])`), through the
 * registry API the product's FAMILIES is built with. Its boards carry toy chips, each with a
 * temperature, a power draw and a link.
 */
import { z } from 'zod';
import type { DeviceObservation } from '../../../contracts/index.js';
import {
  READING_BOUNDS,
  SNAPSHOT_LIMITS,
  errorCodes,
  familyPayloadSchema,
  plain,
  reading,
} from '../../../contracts/fields/index.js';
import {
  NO_XIDS,
  defineFamily,
  deviceNodeIndex,
  round1,
  type SimDevice,
  type SimRandom,
} from '../../../families/index.js';

/** One toy chip. */
export const toyChipSchema = z.object({
  slot: z.number().int().nonnegative(),
  toy_temp_c: reading('temperature'),
  toy_power_w: reading('power'),
  link: z.enum(['up', 'down']).nullable().default(null),
  error_codes: errorCodes,
  present: z.boolean().default(true),
});

export const toyPayloadSchema = familyPayloadSchema('toy', {
  chips: z.array(toyChipSchema).max(SNAPSHOT_LIMITS.devices),
});

type ToyPayload = z.infer<typeof toyPayloadSchema>;

function readChip(value: unknown): plain.Out {
  const v = plain.object(value);
  const link = v.link;
  if (link !== undefined && link !== null && link !== 'up' && link !== 'down') throw plain.NOT_PLAIN;
  return {
    slot: plain.count(v.slot),
    toy_temp_c: plain.reading(v.toy_temp_c, READING_BOUNDS.temperature),
    toy_power_w: plain.reading(v.toy_power_w, READING_BOUNDS.power),
    link: link ?? null,
    error_codes: plain.errorCodes(v.error_codes),
    present: plain.booleanOr(v.present, true),
  };
}

function simDevices(rng: SimRandom, units: number): SimDevice[] {
  return Array.from({ length: units }, (_, slot) => ({
    id: `toy${slot}`,
    slot,
    chip: 0,
    phyId: null,
    deviceId: null,
    busId: `0000:7${slot}:00.0`,
    uuid: null,
    model: 'Toy 1',
    reportsPower: true,
    initialEcc: { corrected: 0, uncorrected: 0 },
    profile: {
      baseTemp: rng.range(30, 40),
      tempPerLoad: 10,
      idlePower: 5,
      powerPerLoad: 10,
      loadOffset: 0,
      memTotalMb: 1024,
    },
  }));
}

export const toy = defineFamily({
  id: 'toy',
  kind: 'npu',
  payloadSchema: toyPayloadSchema,
  readDevices(payload, out) {
    out.chips = plain.items(payload.chips, SNAPSHOT_LIMITS.devices, readChip);
  },
  readingFields: { toy_temp_c: 'temperature', toy_power_w: 'power' },
  deviceReadings: { toyChip: ['toy_temp_c', 'toy_power_w'] },
  boundJsonReadings(payload, bound) {
    if (Array.isArray(payload.chips))
      for (const chip of payload.chips as unknown[]) bound(chip, ['toy_temp_c', 'toy_power_w']);
  },
  devicesIn: (payload) => payload.chips.length,
  normalise(payload: ToyPayload, out: DeviceObservation[]) {
    for (const chip of payload.chips)
      out.push({
        id: `toy${chip.slot}`,
        key: `toy-board/${chip.slot}`,
        resource_id: `Toy-${chip.slot}`,
        family: 'toy',
        kind: 'npu',
        model: 'Toy 1',
        health: 'unknown',
        temperature_c: chip.toy_temp_c,
        power_w: chip.toy_power_w,
        memory_used_mb: null,
        memory_total_mb: null,
        ecc_errors: null,
        ecc_uncorrectable: null,
        pcie_link_status: chip.link,
        error_codes: chip.error_codes,
        xids: NO_XIDS,
        present: chip.present,
      });
  },
  emptyPayload: () => ({ family: 'toy' as const, chips: [] }),
  resourceNames: ['example.com/toy'],
  inventory: {
    vendor: 'toyco',
    isAccelerator: (vendor) => vendor === 0x7070,
    deviceNode: 'toy',
    collectors: ['hdc'],
    complete: (payload) => payload,
  },
  applyEvent(payload, event) {
    if (event.kind !== 'removed') return false;
    const chip = payload.chips.find((c) => c.slot === deviceNodeIndex(event.line, 'toy'));
    if (chip) chip.present = false;
    return chip !== undefined;
  },
  sim: {
    kinds: { toy: { prefix: 'toy-node', units: 2, driverVersion: '0.1', devices: simDevices } },
    payload: (driverVersion, devices) => ({
      family: 'toy' as const,
      driver_version: driverVersion,
      chips: devices.map(({ device, effects, sample }) => ({
        slot: device.slot,
        toy_temp_c: round1(sample.temp),
        toy_power_w: round1(device.profile.idlePower + device.profile.powerPerLoad * sample.load),
        link: effects.linkDown ? ('down' as const) : ('up' as const),
        error_codes: effects.codes,
        present: effects.vanish !== 'absent',
      })),
    }),
    faults: { linkDown: 'device', xid: 'is not a GPU node', health: 'toys report no health' },
  },
});

/**
 * The 310P family's payload (`family: "310P"`): cards of one to four chips with card-level
 * MCU power (Atlas 300I/300V, 310, 310P, 310B layouts), as npu-smi and hdc print them.
 */
import { z } from 'zod';
import {
  SNAPSHOT_LIMITS,
  busId,
  errorCodes,
  familyPayloadSchema,
  healthText,
  readable,
  reading,
  text,
} from '../../contracts/fields/index.js';

/** One chip of a 310P-family card. */
export const chip310Schema = z.object({
  chip: z.number().int().nonnegative(),
  device_id: z.number().int().nonnegative(),
  health: healthText,
  temperature: reading('temperature'),
  power_w: reading('power'),
  ddr: z
    .object({
      used_mb: reading('memory'),
      total_mb: reading('memory'),
      ecc_sbe: reading('errorCount'),
      ecc_dbe: reading('errorCount'),
    })
    .prefault({}),
  error_codes: errorCodes,
  present: z.boolean().default(true),
  readable,
});

/** One 310P-family card (one to four chips, card-level MCU power). */
export const card310Schema = z.object({
  card: z.number().int().nonnegative(),
  name: text(SNAPSHOT_LIMITS.id).default(''),
  bus_id: busId.nullable().default(null),
  pcie_link: z
    .union([z.literal(0), z.literal(1)])
    .nullable()
    .default(null),
  mcu_power_w: reading('power'),
  chips: z.array(chip310Schema).max(SNAPSHOT_LIMITS.chips),
});

export const payload310Schema = familyPayloadSchema('310P', {
  cards: z.array(card310Schema).max(SNAPSHOT_LIMITS.devices),
});

export type Card310 = z.infer<typeof card310Schema>;
export type Chip310 = z.infer<typeof chip310Schema>;
export type Payload310 = z.infer<typeof payload310Schema>;

/** Every bounded reading of a card and a chip, by its key path (a chip's `power_w` is the 910B chip's name too). */
export const READINGS_310P = {
  mcu_power_w: 'power',
  temperature: 'temperature',
  power_w: 'power',
  'ddr.used_mb': 'memory',
  'ddr.total_mb': 'memory',
  'ddr.ecc_sbe': 'errorCount',
  'ddr.ecc_dbe': 'errorCount',
} as const;

/** The bounded readings of a card record and of a chip record. */
export const DEVICE_READINGS_310P = {
  card310: ['mcu_power_w'],
  chip310: ['temperature', 'power_w', 'ddr.used_mb', 'ddr.total_mb', 'ddr.ecc_sbe', 'ddr.ecc_dbe'],
} as const;

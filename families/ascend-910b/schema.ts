/**
 * The 910B family's payload (`family: "910B"`): one entry per chip of a 910B-family device
 * (910B, 910/910A, the A3 Ascend910 with two chips per NPU), as npu-smi and hdc print it.
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

/** One chip of a 910B-family device (910B, 910/910A, A3 Ascend910 with two chips per NPU). */
export const npu910Schema = z.object({
  npu: z.number().int().nonnegative(),
  chip: z.number().int().nonnegative().default(0),
  phy_id: z.number().int().nonnegative().nullable().optional(),
  name: text(SNAPSHOT_LIMITS.id).default(''),
  health: healthText,
  temp_c: reading('temperature'),
  power_w: reading('power'),
  aicore_pct: reading('utilisation'),
  hbm: z
    .object({
      used_mb: reading('memory'),
      total_mb: reading('memory'),
      temp_c: reading('temperature'),
      ecc: z.object({ single_bit: reading('errorCount'), double_bit: reading('errorCount') }).prefault({}),
    })
    .prefault({}),
  pcie: z
    .object({
      bus_id: busId.nullable().default(null),
      link: z.enum(['up', 'down']).nullable().default(null),
    })
    .prefault({}),
  error_codes: errorCodes,
  present: z.boolean().default(true),
  readable,
});

export const payload910Schema = familyPayloadSchema('910B', {
  npus: z.array(npu910Schema).max(SNAPSHOT_LIMITS.devices),
});

export type Npu910 = z.infer<typeof npu910Schema>;
export type Payload910 = z.infer<typeof payload910Schema>;

/** Every bounded reading of a chip, by its key path: the agent's metric label `field`. */
export const READINGS_910B = {
  temp_c: 'temperature',
  power_w: 'power',
  aicore_pct: 'utilisation',
  'hbm.used_mb': 'memory',
  'hbm.total_mb': 'memory',
  'hbm.temp_c': 'temperature',
  'hbm.ecc.single_bit': 'errorCount',
  'hbm.ecc.double_bit': 'errorCount',
} as const;

/** The bounded readings of a chip record. */
export const DEVICE_READINGS_910B = {
  npu910: [
    'temp_c',
    'power_w',
    'aicore_pct',
    'hbm.used_mb',
    'hbm.total_mb',
    'hbm.temp_c',
    'hbm.ecc.single_bit',
    'hbm.ecc.double_bit',
  ],
} as const;

/**
 * The NVIDIA family's payload (`family: "nvidia"`): one entry per GPU, as nvidia-smi and hdc
 * print it. A GPU that fell off the bus reports null metrics; one the tool lists but cannot
 * read (`readable: false`) reports null metrics too, and is not off the bus.
 */
import { z } from 'zod';
import {
  SNAPSHOT_LIMITS,
  bounded,
  busId,
  familyPayloadSchema,
  readable,
  reading,
  text,
} from '../../contracts/fields/index.js';

/** One NVIDIA GPU. */
export const gpuSchema = z.object({
  index: z.number().int().nonnegative(),
  uuid: text(SNAPSHOT_LIMITS.id).nullable().default(null),
  bus_id: busId.nullable().default(null),
  name: text(SNAPSHOT_LIMITS.id).default(''),
  temperature_gpu: reading('temperature'),
  power_draw_w: reading('power'),
  ecc_corrected_volatile: reading('errorCount'),
  ecc_uncorrected_volatile: reading('errorCount'),
  pcie_link_gen: reading('pcieGeneration'),
  pcie_link_width: reading('pcieWidth'),
  xid_events: z
    .array(
      z.object({
        xid: bounded('xid').int(),
        at: z.iso.datetime({ offset: true }).nullable().default(null),
      }),
    )
    .max(SNAPSHOT_LIMITS.xidEvents)
    .default([]),
  present: z.boolean().default(true),
  readable,
});

export const payloadNvidiaSchema = familyPayloadSchema('nvidia', {
  gpus: z.array(gpuSchema).max(SNAPSHOT_LIMITS.devices),
});

export type Gpu = z.infer<typeof gpuSchema>;
export type PayloadNvidia = z.infer<typeof payloadNvidiaSchema>;
export type PayloadNvidiaInput = z.input<typeof payloadNvidiaSchema>;

/** Every bounded reading of a GPU, by its key path: the agent's metric label `field`. */
export const READINGS_NVIDIA = {
  temperature_gpu: 'temperature',
  power_draw_w: 'power',
  ecc_corrected_volatile: 'errorCount',
  ecc_uncorrected_volatile: 'errorCount',
  pcie_link_gen: 'pcieGeneration',
  pcie_link_width: 'pcieWidth',
} as const;

/** The bounded readings of a GPU record. */
export const DEVICE_READINGS_NVIDIA = {
  gpu: [
    'temperature_gpu',
    'power_draw_w',
    'ecc_corrected_volatile',
    'ecc_uncorrected_volatile',
    'pcie_link_gen',
    'pcie_link_width',
  ],
} as const;

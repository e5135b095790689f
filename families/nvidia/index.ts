/**
 * The NVIDIA family (`family: "nvidia"`): GPUs. Each GPU is one device: display id `gpu<index>`,
 * state key and resource its UUID (else its bus id); XIDs come from the kernel log and are
 * carried when a snapshot is dropped.
 */
import { defineFamily } from '../family.js';
import { xidEvents, MAX_XID_EVENTS } from './carry.js';
import { NVIDIA_DEVICE_NODE, applyEventToGpus } from './events.js';
import { completeGpus, emptyGpu } from './inventory.js';
import { normaliseGpus } from './normalise.js';
import { readGpus } from './read.js';
import {
  DEVICE_READINGS_NVIDIA,
  READINGS_NVIDIA,
  gpuSchema,
  payloadNvidiaSchema,
  type Gpu,
  type PayloadNvidia,
} from './schema.js';
import { SIM_KINDS_NVIDIA, simPayloadNvidia } from './sim.js';

export { MAX_XID_EVENTS, emptyGpu, gpuSchema, payloadNvidiaSchema, type Gpu, type PayloadNvidia };

const NVIDIA_VENDOR = 0x10de;
/** Base class and subclass (the class code without its programming interface byte). */
const NVIDIA_CLASSES = new Set([0x0300, 0x0302]);

export const nvidia = defineFamily({
  id: 'nvidia',
  kind: 'gpu',
  payloadSchema: payloadNvidiaSchema,
  readDevices: readGpus,
  readingFields: READINGS_NVIDIA,
  deviceReadings: DEVICE_READINGS_NVIDIA,
  boundJsonReadings(payload, bound) {
    if (!Array.isArray(payload.gpus)) return;
    for (const gpu of payload.gpus as unknown[]) {
      const nulled = bound(gpu, DEVICE_READINGS_NVIDIA.gpu);
      if (nulled === 0) continue;
      // A GPU every reading of which is now null, one or more for being out of range, could
      // not be read at all (unless it says otherwise): that is not a GPU off the bus.
      // Only an object holds a number to set to null: `gpu` is one here.
      const fields = gpu as Record<string, unknown>;
      const nothingRead = DEVICE_READINGS_NVIDIA.gpu.every((field) => (fields[field] ?? null) === null);
      if (nothingRead && fields.readable === undefined && fields.present !== false) fields.readable = false;
    }
  },
  devicesIn: (payload) => payload.gpus.length,
  normalise: normaliseGpus,
  emptyPayload: () => ({ family: 'nvidia' as const, gpus: [] }),
  resourceNames: ['nvidia.com/gpu'],
  inventory: {
    vendor: 'nvidia',
    /**
     * Class 0x0300xx (VGA-compatible controller: GPUs with a display engine) or 0x0302xx (3D
     * controller: the data-centre GPUs). Their HDMI audio (0x0403), USB-C (0x0c03) and
     * NVSwitch (0x0680, a bridge) functions are not accelerators.
     */
    isAccelerator: (vendor, _device, pciClass) =>
      vendor === NVIDIA_VENDOR && NVIDIA_CLASSES.has(pciClass >> 8),
    deviceNode: NVIDIA_DEVICE_NODE,
    collectors: ['nvidia-smi'],
    complete: completeGpus,
  },
  applyEvent: applyEventToGpus,
  oneShotEvents: xidEvents,
  sim: {
    kinds: SIM_KINDS_NVIDIA,
    payload: simPayloadNvidia,
    faults: { linkDown: 'device', xid: true, health: 'nvidia-smi reports no health' },
  },
});

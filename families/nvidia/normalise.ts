/**
 * A GPU as the engine's observation (CONTRACT §1 table). GPUs have no link field: the link is
 * `up` unless every metric is null (fell off the bus), and unknown (null) for a GPU sent with
 * `present: false`. nvidia-smi prints no health word: always `unknown`.
 */
import type { DeviceObservation } from '../../contracts/index.js';
import { NO_CODES, sum, unreadable } from '../observation.js';
import type { Gpu, PayloadNvidia } from './schema.js';

export function normaliseGpus(payload: PayloadNvidia, out: DeviceObservation[]): void {
  for (const gpu of payload.gpus) out.push(fromGpu(gpu));
}

function fromGpu(gpu: Gpu): DeviceObservation {
  const device = fromReadableGpu(gpu);
  return gpu.readable === false ? unreadable(device) : device;
}

function fromReadableGpu(gpu: Gpu): DeviceObservation {
  const id = `gpu${gpu.index}`;
  const allNull =
    gpu.temperature_gpu === null &&
    gpu.power_draw_w === null &&
    gpu.ecc_corrected_volatile === null &&
    gpu.ecc_uncorrected_volatile === null &&
    gpu.pcie_link_gen === null &&
    gpu.pcie_link_width === null;
  return {
    id,
    key: gpu.uuid ?? gpu.bus_id ?? id,
    resource_id: gpu.uuid ?? gpu.bus_id ?? id,
    family: 'nvidia',
    kind: 'gpu',
    model: gpu.name,
    health: 'unknown',
    temperature_c: gpu.temperature_gpu,
    power_w: gpu.power_draw_w,
    memory_used_mb: null,
    memory_total_mb: null,
    ecc_errors: sum(gpu.ecc_corrected_volatile, gpu.ecc_uncorrected_volatile),
    ecc_uncorrectable: gpu.ecc_uncorrected_volatile,
    // A GPU the agent lists as absent has no link to speak of: device-missing, not npu-offline.
    pcie_link_status: !gpu.present ? null : allNull ? 'down' : 'up',
    error_codes: NO_CODES,
    xids: gpu.xid_events,
    present: gpu.present,
  };
}

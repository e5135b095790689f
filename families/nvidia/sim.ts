/** Simulated NVIDIA nodes: HGX H100 boards with eight GPUs, as nvidia-smi prints them. */
import {
  round1,
  simBus,
  simInitialEcc,
  type DeviceProfile,
  type SimDevice,
  type SimDeviceSecond,
  type SimNodeKind,
  type SimRandom,
} from '../sim.js';
import type { Gpu, PayloadNvidia } from './schema.js';

// PCI buses as they appear on real boards (nvidia-smi listings); beyond these, made up in order.
const BUSES_GPU = ['18', '2A', '3A', '5D', '9A', 'AB', 'BA', 'DB'];

function profile(rng: SimRandom): DeviceProfile {
  const loadOffset = rng.range(-0.1, 0.1);
  // Capped so a busy GPU stays well under 75 °C: the ECC fault must read as ecc-error,
  // not ecc-thermal (CONTRACT §2.2).
  return {
    baseTemp: rng.range(30, 36),
    tempPerLoad: rng.range(24, 30),
    idlePower: rng.range(68, 75),
    powerPerLoad: rng.range(380, 520),
    loadOffset,
    memTotalMb: 81559,
  };
}

function devicesGpu(rng: SimRandom, units: number): SimDevice[] {
  return Array.from({ length: units }, (_, index) => ({
    id: `gpu${index}`,
    slot: index,
    chip: 0,
    phyId: null,
    deviceId: null,
    busId: simBus(BUSES_GPU, index, '00000000'),
    uuid: `GPU-${rng.uuid()}`,
    model: 'NVIDIA H100 80GB HBM3',
    reportsPower: true,
    initialEcc: simInitialEcc(rng),
    profile: profile(rng),
  }));
}

/** The NVIDIA family's kind of simulated node: an HGX H100 board. */
export const SIM_KINDS_NVIDIA = {
  nvidia: { prefix: 'gpu-node', units: 8, driverVersion: '570.86.15', devices: devicesGpu },
} as const satisfies Record<string, SimNodeKind>;

function gpu(
  { device: d, effects: e, sample, corrected, uncorrected }: SimDeviceSecond,
  rng: SimRandom,
): Gpu {
  // A GPU off the bus prints ERR! / "[GPU requires reset]" for every field: null metrics.
  const off = e.vanish === 'absent' || e.linkDown;
  const p = d.profile;
  return {
    index: d.slot,
    uuid: d.uuid,
    bus_id: d.busId,
    name: d.model,
    temperature_gpu: off ? null : Math.round(sample.temp),
    power_draw_w: off ? null : round1(p.idlePower + p.powerPerLoad * sample.load + rng.normal(0, 4)),
    ecc_corrected_volatile: off ? null : corrected,
    ecc_uncorrected_volatile: off ? null : uncorrected,
    pcie_link_gen: off ? null : 5,
    pcie_link_width: off ? null : 16,
    xid_events: e.xids,
    present: e.vanish !== 'absent',
  };
}

/** One second of an NVIDIA node: every GPU the tool lists (an omitted one is left out). */
export function simPayloadNvidia(
  driverVersion: string,
  devices: readonly SimDeviceSecond[],
  rng: SimRandom,
): PayloadNvidia {
  const gpus = devices.flatMap((second) => (second.effects.vanish === 'omitted' ? [] : [gpu(second, rng)]));
  return { family: 'nvidia', driver_version: driverVersion, gpus };
}

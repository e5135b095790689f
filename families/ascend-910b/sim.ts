/**
 * Simulated 910B-family nodes: 910B boards with eight NPUs, and the A3 `Ascend910` with two
 * chips per NPU (the second chip prints no power), as npu-smi prints them.
 */
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
import type { Npu910, Payload910 } from './schema.js';

// PCI buses as they appear on real boards (npu-smi listings), so the demo looks like a fleet
// an operator knows; beyond these, addresses are made up in order.
const BUSES_910B = ['C1', 'C2', '81', '82', '01', '02', '41', '42'];
const BUSES_A3 = [
  '9D',
  '9F',
  '99',
  '9B',
  '95',
  '97',
  '91',
  '93',
  '1D',
  '1F',
  '19',
  '1B',
  '15',
  '17',
  '11',
  '13',
];

function profile(rng: SimRandom): DeviceProfile {
  const loadOffset = rng.range(-0.1, 0.1);
  return {
    baseTemp: rng.range(38, 46),
    tempPerLoad: rng.range(16, 22),
    idlePower: rng.range(92, 108),
    powerPerLoad: rng.range(170, 210),
    loadOffset,
    memTotalMb: 65536,
  };
}

function devices910(rng: SimRandom, units: number): SimDevice[] {
  return Array.from({ length: units }, (_, npu) => ({
    id: `npu${npu}`,
    slot: npu,
    chip: 0,
    phyId: npu,
    deviceId: null,
    busId: simBus(BUSES_910B, npu, '0000'),
    uuid: null,
    model: '910B3',
    reportsPower: true,
    initialEcc: simInitialEcc(rng),
    profile: profile(rng),
  }));
}

function devicesA3(rng: SimRandom, units: number): SimDevice[] {
  const out: SimDevice[] = [];
  for (let npu = 0; npu < units; npu++) {
    for (let chip = 0; chip < 2; chip++) {
      const phy = npu * 2 + chip;
      out.push({
        id: chip === 0 ? `npu${npu}` : `npu${npu}-${chip}`,
        slot: npu,
        chip,
        phyId: phy,
        deviceId: null,
        busId: simBus(BUSES_A3, phy, '0000'),
        uuid: null,
        model: 'Ascend910',
        // npu-smi prints "-" for the second chip's power on A3 boards (one sensor per NPU).
        reportsPower: chip === 0,
        initialEcc: simInitialEcc(rng),
        profile: profile(rng),
      });
    }
  }
  return out;
}

/** The 910B family's kinds of simulated node: `910B` boards and `A3` (two chips per NPU). */
export const SIM_KINDS_910B = {
  '910B': { prefix: 'atlas900-node', units: 8, driverVersion: '24.1.rc3', devices: devices910 },
  A3: { prefix: 'atlas900-node', units: 8, driverVersion: '25.3.rc1', devices: devicesA3 },
} as const satisfies Record<string, SimNodeKind>;

// Fields in the schema's order, so a trace dumped as JSON reads like the tool.
function npu910(
  { device: d, effects: e, sample, corrected, uncorrected }: SimDeviceSecond,
  rng: SimRandom,
): Npu910 {
  const absent = e.vanish === 'absent';
  const p = d.profile;
  const power =
    absent || e.powerLost || !d.reportsPower
      ? null
      : round1(p.idlePower + p.powerPerLoad * sample.load + rng.normal(0, 2));
  return {
    npu: d.slot,
    chip: d.chip,
    phy_id: d.phyId,
    name: d.model,
    health: absent ? 'UNKNOWN' : (e.health ?? 'OK'),
    temp_c: absent ? null : round1(sample.temp),
    power_w: power,
    aicore_pct: absent ? null : Math.round(sample.load * 100),
    hbm: absent
      ? { used_mb: null, total_mb: null, temp_c: null, ecc: { single_bit: null, double_bit: null } }
      : {
          used_mb: Math.round(3000 + sample.load * 52000),
          total_mb: p.memTotalMb,
          temp_c: round1(sample.temp - 5 + rng.normal(0, 0.3)),
          ecc: { single_bit: corrected, double_bit: uncorrected },
        },
    pcie: { bus_id: d.busId, link: absent ? null : e.linkDown ? 'down' : 'up' },
    error_codes: e.codes,
    present: !absent,
  };
}

/** One second of a 910B node: every chip the tool lists (an omitted one is left out). */
export function simPayload910(
  driverVersion: string,
  devices: readonly SimDeviceSecond[],
  rng: SimRandom,
): Payload910 {
  const npus = devices.flatMap((second) =>
    second.effects.vanish === 'omitted' ? [] : [npu910(second, rng)],
  );
  return { family: '910B', driver_version: driverVersion, npus };
}

/**
 * Simulated 310P nodes: Atlas 300I Duo cards with two 310P3 chips and card-level MCU power,
 * as npu-smi prints them.
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
import type { Card310, Chip310, Payload310 } from './schema.js';

// PCI buses as they appear on real boards (npu-smi listings); beyond these, made up in order.
const BUSES_310P = ['01', '02', '81', '82', '41', '42', 'C1', 'C2'];

function profile(rng: SimRandom): DeviceProfile {
  const loadOffset = rng.range(-0.1, 0.1);
  return {
    baseTemp: rng.range(38, 44),
    tempPerLoad: rng.range(9, 13),
    idlePower: rng.range(11, 14),
    powerPerLoad: rng.range(18, 24),
    loadOffset,
    memTotalMb: 44280,
  };
}

function devices310(rng: SimRandom, units: number): SimDevice[] {
  const out: SimDevice[] = [];
  for (let card = 0; card < units; card++) {
    for (let chip = 0; chip < 2; chip++) {
      const deviceId = card * 2 + chip;
      out.push({
        id: `npu${deviceId}`,
        slot: card,
        chip,
        phyId: null,
        deviceId,
        busId: simBus(BUSES_310P, card, '0000'),
        uuid: null,
        model: '310P3',
        reportsPower: false,
        initialEcc: simInitialEcc(rng),
        // The Duo's second chip has slightly less DDR (npu-smi: 44280 / 43693 MB).
        profile: { ...profile(rng), memTotalMb: chip === 0 ? 44280 : 43693 },
      });
    }
  }
  return out;
}

/** The 310P family's kind of simulated node: four Atlas 300I Duo cards. */
export const SIM_KINDS_310P = {
  '310P': { prefix: 'atlas300-node', units: 4, driverVersion: '24.1.rc2', devices: devices310 },
} as const satisfies Record<string, SimNodeKind>;

function chip310(
  { device: d, effects: e, sample, corrected, uncorrected }: SimDeviceSecond,
  i: number,
): Chip310 {
  const absent = e.vanish === 'absent';
  return {
    chip: d.chip,
    device_id: d.deviceId ?? i,
    health: absent ? 'UNKNOWN' : (e.health ?? 'OK'),
    temperature: absent ? null : Math.round(sample.temp),
    // 310P chips print NA for power: only the card's MCU reads it.
    power_w: null,
    ddr: absent
      ? { used_mb: null, total_mb: null, ecc_sbe: null, ecc_dbe: null }
      : {
          used_mb: Math.round(1000 + sample.load * 20000),
          total_mb: d.profile.memTotalMb,
          ecc_sbe: corrected,
          ecc_dbe: uncorrected,
        },
    error_codes: e.codes,
    present: !absent,
  };
}

/** One second of a 310P node: its cards, each with the chips the tool lists. */
export function simPayload310(
  driverVersion: string,
  devices: readonly SimDeviceSecond[],
  rng: SimRandom,
): Payload310 {
  const cards = new Map<number, Array<{ second: SimDeviceSecond; i: number }>>();
  devices.forEach((second, i) => {
    const card = cards.get(second.device.slot) ?? [];
    card.push({ second, i });
    cards.set(second.device.slot, card);
  });
  const out: Card310[] = [];
  for (const [slot, card] of cards) {
    const shown = card.filter(({ second }) => second.effects.vanish !== 'omitted');
    const first = card[0];
    if (shown.length === 0 || !first) continue;
    const fx = first.second.effects;
    const chips = shown.map(({ second, i }) => chip310(second, i));
    // The card's MCU reads the board's power for both chips; the chips themselves print NA.
    const mcu = card.reduce(
      (w, { second: { device, sample } }) =>
        w + device.profile.idlePower + device.profile.powerPerLoad * sample.load,
      8,
    );
    const allAbsent = shown.every(({ second }) => second.effects.vanish === 'absent');
    out.push({
      card: slot + 1,
      name: first.second.device.model,
      bus_id: first.second.device.busId,
      pcie_link: fx.linkDown ? 0 : 1,
      mcu_power_w: fx.powerLost || allAbsent ? null : round1(mcu + rng.normal(0, 0.8)),
      chips,
    });
  }
  return { family: '310P', driver_version: driverVersion, cards: out };
}

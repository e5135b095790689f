/**
 * The simulator's family-neutral vocabulary (core/sim runs the clock, the load and the faults;
 * each family says what its devices are called and how its tool prints them): a simulated
 * device, how it behaves while healthy, what the faults do to it in one second, and the few
 * helpers the families' device builders share.
 */

/** The random draws a family's simulation makes (core/sim's seeded Rng). */
export interface SimRandom {
  /** Uniform in [min, max). */
  range(min: number, max: number): number;
  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** Normally distributed. */
  normal(mean: number, sd: number): number;
  /** A version-4 UUID. */
  uuid(): string;
}

/** How a device behaves while healthy; the generator adds load and noise on top. */
export interface DeviceProfile {
  /** Idle temperature, °C. */
  baseTemp: number;
  /** Extra °C at full load. */
  tempPerLoad: number;
  /** Idle power, W (per chip; for 310P the card's MCU sums its chips). */
  idlePower: number;
  /** Extra W at full load. */
  powerPerLoad: number;
  /** Offset of this device's load from its node's job, in [-0.1, 0.1]. */
  loadOffset: number;
  /** Device memory (HBM, DDR, GPU) in MB. */
  memTotalMb: number;
}

/** One simulated device (a 910B chip, a 310P chip, or a GPU). */
export interface SimDevice {
  /** The display id normalisation gives it (CONTRACT §1): `npu5`, `npu0-1`, `gpu3`. */
  id: string;
  /** 910B: the NPU number; 310P: the card number; nvidia: the GPU index. */
  slot: number;
  /** The chip within its NPU (A3) or card (310P); 0 otherwise. */
  chip: number;
  /** 910B family: physical id; null elsewhere. */
  phyId: number | null;
  /** 310P: the chip's device id (its display number); null elsewhere. */
  deviceId: number | null;
  /** PCI address (a 310P card's two chips share their card's). */
  busId: string;
  /** GPU uuid; null for NPUs. */
  uuid: string | null;
  /** Model name as the tool prints it. */
  model: string;
  /** False where the tool prints no power for this chip (second chip of an A3 NPU). */
  reportsPower: boolean;
  /** Cumulative ECC counters at the start of the trace (since driver load). */
  initialEcc: { corrected: number; uncorrected: number };
  profile: DeviceProfile;
}

/** What the faults of one node do to one device in one second. */
export interface SimEffects {
  temp: number | null;
  linkDown: boolean;
  powerLost: boolean;
  vanish: 'omitted' | 'absent' | null;
  health: string | null;
  codes: string[];
  xids: Array<{ xid: number; at: string }>;
}

/** One device in one second, as its family's tool prints it from. */
export interface SimDeviceSecond {
  device: SimDevice;
  effects: SimEffects;
  /** The load and temperature this second (faults applied). */
  sample: { load: number; temp: number };
  /** The cumulative ECC counters now. */
  corrected: number;
  uncorrected: number;
}

/** What one kind of simulated node is (`910B`, the A3 `Ascend910`, …). */
export interface SimNodeKind {
  /** Node name prefix: `atlas900-node`. */
  prefix: string;
  /** NPUs, cards or GPUs per node by default. */
  units: number;
  driverVersion: string;
  /** The node's devices, in the order the tool prints them. */
  devices(rng: SimRandom, units: number): SimDevice[];
}

/** The faults a family's devices can show, and why not when they cannot. */
export interface SimFaultSupport {
  /** `slot`: a link-down takes every device of its slot (a 310P card's chips share its link). */
  linkDown: 'device' | 'slot';
  /** true, or why an XID cannot be injected (`is not a GPU node`). */
  xid: true | string;
  /** true, or why a health word cannot be injected (`nvidia-smi reports no health`). */
  health: true | string;
}

/** `<domain>:<bus>:00.0`: the i-th bus of a board's list, made up in order beyond it. */
export function simBus(list: readonly string[], i: number, domain: string): string {
  const b = list[i] ?? (0x20 + i).toString(16).toUpperCase().padStart(2, '0');
  return `${domain}:${b}:00.0`;
}

/** A device's ECC counters at the start of a trace. */
export function simInitialEcc(rng: SimRandom): { corrected: number; uncorrected: number } {
  // A few devices carry old corrected errors from before the trace: a non-zero baseline
  // that must not read as a fresh increase.
  return { corrected: rng.chance(0.15) ? rng.int(1, 40) : 0, uncorrected: 0 };
}

/** Rounds to one decimal, as the tools print. */
export const round1 = (x: number): number => Math.round(x * 10) / 10;

/**
 * Simulated accelerator nodes: which devices a node has, what they are called, and how each
 * one behaves when nothing is wrong (its idle temperature, how hot load makes it, its
 * power). The shapes follow the real tools the contract's payloads come from: 910B boards
 * with eight NPUs, the A3 `Ascend910` with two chips per NPU (the second chip prints no
 * power), Atlas 300I Duo cards with two 310P3 chips and card-level MCU power, and HGX H100
 * boards with eight GPUs.
 */
import type { AcceleratorFamily } from '../../contracts/index.js';
import { createRng, hashSeed, type Rng } from './prng.js';

/** A kind of simulated node. `A3` is a 910B-family node whose NPUs carry two chips each. */
export type SimKind = '910B' | 'A3' | '310P' | 'nvidia';

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

/** One simulated node and its agent. */
export interface SimNode {
  /** Kubernetes node name. */
  name: string;
  kind: SimKind;
  /** The snapshot payload family the node's agent sends. */
  family: AcceleratorFamily;
  driverVersion: string;
  /** Devices in the order the tool prints them. */
  devices: SimDevice[];
  /** Offset of this agent's sampling within each second, ms: agents are not in lock-step. */
  phaseMs: number;
  /** The node's job: mean load in [0, 1], and the period (s) of its load cycle. */
  job: { level: number; swing: number; periodS: number; phase: number };
}

/** A group of identical nodes for {@link buildFleet}. */
export interface FleetGroup {
  kind: SimKind;
  count: number;
  /** Node name prefix; default `atlas900-node` (910B, A3), `atlas300-node`, `gpu-node`. */
  prefix?: string;
  /** NPUs (910B, A3), cards (310P) or GPUs (nvidia) per node; default 8, 8, 4, 8. */
  units?: number;
}

const DEFAULT_PREFIX: Record<SimKind, string> = {
  '910B': 'atlas900-node',
  A3: 'atlas900-node',
  '310P': 'atlas300-node',
  nvidia: 'gpu-node',
};
const DEFAULT_UNITS: Record<SimKind, number> = { '910B': 8, A3: 8, '310P': 4, nvidia: 8 };

// PCI buses as they appear on real boards (npu-smi and nvidia-smi listings), so the demo
// looks like a fleet an operator knows; beyond these, addresses are made up in order.
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
const BUSES_310P = ['01', '02', '81', '82', '41', '42', 'C1', 'C2'];
const BUSES_GPU = ['18', '2A', '3A', '5D', '9A', 'AB', 'BA', 'DB'];

function bus(list: readonly string[], i: number, domain: string): string {
  const b = list[i] ?? (0x20 + i).toString(16).toUpperCase().padStart(2, '0');
  return `${domain}:${b}:00.0`;
}

function profile(rng: Rng, kind: SimKind): DeviceProfile {
  const loadOffset = rng.range(-0.1, 0.1);
  switch (kind) {
    case '910B':
    case 'A3':
      return {
        baseTemp: rng.range(38, 46),
        tempPerLoad: rng.range(16, 22),
        idlePower: rng.range(92, 108),
        powerPerLoad: rng.range(170, 210),
        loadOffset,
        memTotalMb: 65536,
      };
    case '310P':
      return {
        baseTemp: rng.range(38, 44),
        tempPerLoad: rng.range(9, 13),
        idlePower: rng.range(11, 14),
        powerPerLoad: rng.range(18, 24),
        loadOffset,
        memTotalMb: 44280,
      };
    case 'nvidia':
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
}

function ecc(rng: Rng): { corrected: number; uncorrected: number } {
  // A few devices carry old corrected errors from before the trace: a non-zero baseline
  // that must not read as a fresh increase.
  return { corrected: rng.chance(0.15) ? rng.int(1, 40) : 0, uncorrected: 0 };
}

function devices910(rng: Rng, units: number): SimDevice[] {
  return Array.from({ length: units }, (_, npu) => ({
    id: `npu${npu}`,
    slot: npu,
    chip: 0,
    phyId: npu,
    deviceId: null,
    busId: bus(BUSES_910B, npu, '0000'),
    uuid: null,
    model: '910B3',
    reportsPower: true,
    initialEcc: ecc(rng),
    profile: profile(rng, '910B'),
  }));
}

function devicesA3(rng: Rng, units: number): SimDevice[] {
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
        busId: bus(BUSES_A3, phy, '0000'),
        uuid: null,
        model: 'Ascend910',
        // npu-smi prints "-" for the second chip's power on A3 boards (one sensor per NPU).
        reportsPower: chip === 0,
        initialEcc: ecc(rng),
        profile: profile(rng, 'A3'),
      });
    }
  }
  return out;
}

function devices310(rng: Rng, units: number): SimDevice[] {
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
        busId: bus(BUSES_310P, card, '0000'),
        uuid: null,
        model: '310P3',
        reportsPower: false,
        initialEcc: ecc(rng),
        // The Duo's second chip has slightly less DDR (npu-smi: 44280 / 43693 MB).
        profile: { ...profile(rng, '310P'), memTotalMb: chip === 0 ? 44280 : 43693 },
      });
    }
  }
  return out;
}

function devicesGpu(rng: Rng, units: number): SimDevice[] {
  return Array.from({ length: units }, (_, index) => ({
    id: `gpu${index}`,
    slot: index,
    chip: 0,
    phyId: null,
    deviceId: null,
    busId: bus(BUSES_GPU, index, '00000000'),
    uuid: `GPU-${rng.uuid()}`,
    model: 'NVIDIA H100 80GB HBM3',
    reportsPower: true,
    initialEcc: ecc(rng),
    profile: profile(rng, 'nvidia'),
  }));
}

const FAMILY: Record<SimKind, AcceleratorFamily> = {
  '910B': '910B',
  A3: '910B',
  '310P': '310P',
  nvidia: 'nvidia',
};
const DRIVER: Record<SimKind, string> = {
  '910B': '24.1.rc3',
  A3: '25.3.rc1',
  '310P': '24.1.rc2',
  nvidia: '570.86.15',
};

/** Builds one node; `name` must be unique in its fleet. */
export function buildNode(
  name: string,
  kind: SimKind,
  seed: number | string,
  units = DEFAULT_UNITS[kind],
): SimNode {
  const rng = createRng(hashSeed(seed, 'node', name));
  const build = { '910B': devices910, A3: devicesA3, '310P': devices310, nvidia: devicesGpu }[kind];
  const devices = build(rng, units);
  return {
    name,
    kind,
    family: FAMILY[kind],
    driverVersion: DRIVER[kind],
    devices,
    phaseMs: rng.int(20, 950),
    job: {
      level: rng.range(0.15, 0.8),
      swing: rng.range(0.05, 0.2),
      periodS: rng.range(60, 180),
      phase: rng.range(0, 2 * Math.PI),
    },
  };
}

/**
 * Builds a fleet from groups of identical nodes. Names are `<prefix>-NNN`, numbered per
 * prefix in group order, so `[{kind:'910B',count:5},{kind:'A3',count:1}]` yields
 * atlas900-node-001 … atlas900-node-006 with the A3 last.
 */
export function buildFleet(groups: readonly FleetGroup[], seed: number | string = 1): SimNode[] {
  const numbering = new Map<string, number>();
  const nodes: SimNode[] = [];
  for (const group of groups) {
    const prefix = group.prefix ?? DEFAULT_PREFIX[group.kind];
    for (let i = 0; i < group.count; i++) {
      const n = (numbering.get(prefix) ?? 0) + 1;
      numbering.set(prefix, n);
      nodes.push(
        buildNode(
          `${prefix}-${String(n).padStart(3, '0')}`,
          group.kind,
          seed,
          group.units ?? DEFAULT_UNITS[group.kind],
        ),
      );
    }
  }
  return nodes;
}

/**
 * The demo's mixed 16-node fleet (136 devices): five 910B nodes and one A3 node
 * (atlas900-node-001…006), five 310P nodes with four Atlas 300I Duo cards each
 * (atlas300-node-001…005), and five HGX H100 nodes (gpu-node-001…005).
 */
export function mixedFleet(seed: number | string = 1): SimNode[] {
  return buildFleet(
    [
      { kind: '910B', count: 5 },
      { kind: 'A3', count: 1 },
      { kind: '310P', count: 5 },
      { kind: 'nvidia', count: 5 },
    ],
    seed,
  );
}

/**
 * A fleet of `count` nodes cycling 910B, 310P and nvidia, each with eight devices (the
 * shape property tests and benchmarks want: every family, a known device count).
 */
export function roundRobinFleet(count: number, seed: number | string = 1): SimNode[] {
  const kinds: SimKind[] = ['910B', '310P', 'nvidia'];
  const prefix: Record<string, string> = {
    '910B': 'atlas900-node',
    '310P': 'atlas300-node',
    nvidia: 'gpu-node',
  };
  const width = Math.max(3, String(count).length);
  return Array.from({ length: count }, (_, i) => {
    const kind = kinds[i % kinds.length] ?? '910B';
    return buildNode(`${prefix[kind]}-${String(i + 1).padStart(width, '0')}`, kind, seed);
  });
}

/** Total devices in a fleet. */
export function deviceTotal(fleet: readonly SimNode[]): number {
  return fleet.reduce((sum, node) => sum + node.devices.length, 0);
}

/** Finds a device by node name and display id, or undefined. */
export function findDevice(fleet: readonly SimNode[], node: string, id: string): SimDevice | undefined {
  return fleet.find((n) => n.name === node)?.devices.find((d) => d.id === id);
}

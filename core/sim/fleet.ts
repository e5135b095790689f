/**
 * Simulated accelerator nodes: which devices a node has, what they are called, and how each
 * one behaves when nothing is wrong (its idle temperature, how hot load makes it, its
 * power). Each family says so for its own kinds of node (families/<id>/sim.ts: 910B boards
 * with eight NPUs, the A3 `Ascend910` with two chips per NPU, Atlas 300I Duo cards with two
 * 310P3 chips and card-level MCU power, HGX H100 boards with eight GPUs); this builds nodes
 * and fleets of them through the registry.
 */
import { FAMILIES, type FamilyIdOf, type SimDevice, type SimKindOf } from '../../families/index.js';
import { NpuFaultError } from '../errors.js';
import { createRng, hashSeed } from './prng.js';

export type { DeviceProfile, SimDevice } from '../../families/index.js';

/** A kind of simulated node (a family's): `910B`, `A3` (two chips per NPU), `310P`, `nvidia`. */
export type SimKind = SimKindOf<typeof FAMILIES.families>;

/** One simulated node and its agent. */
export interface SimNode {
  /** Kubernetes node name. */
  name: string;
  kind: SimKind;
  /** The snapshot payload family the node's agent sends. */
  family: FamilyIdOf<typeof FAMILIES.families>;
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
  /** Node name prefix; default the kind's (`atlas900-node` for 910B and A3, `atlas300-node`, `gpu-node`). */
  prefix?: string;
  /** NPUs (910B, A3), cards (310P) or GPUs (nvidia) per node; default the kind's (8, 8, 4, 8). */
  units?: number;
}

/** A kind of simulated node and its family; an NpuFaultError when no family has it. */
function simKind(kind: string): NonNullable<ReturnType<typeof FAMILIES.simKind>> {
  const entry = FAMILIES.simKind(kind);
  if (entry === undefined)
    throw new NpuFaultError('sim_config', `no family simulates a node of kind ${kind}`);
  return entry;
}

/** Builds one node; `name` must be unique in its fleet. */
export function buildNode(
  name: string,
  kind: SimKind,
  seed: number | string,
  units = simKind(kind).kind.units,
): SimNode {
  const rng = createRng(hashSeed(seed, 'node', name));
  const { family, kind: made } = simKind(kind);
  const devices = made.devices(rng, units);
  return {
    name,
    kind,
    family: family.id as SimNode['family'],
    driverVersion: made.driverVersion,
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
    const prefix = group.prefix ?? simKind(group.kind).kind.prefix;
    for (let i = 0; i < group.count; i++) {
      const n = (numbering.get(prefix) ?? 0) + 1;
      numbering.set(prefix, n);
      nodes.push(
        buildNode(
          `${prefix}-${String(n).padStart(3, '0')}`,
          group.kind,
          seed,
          group.units ?? simKind(group.kind).kind.units,
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
 * A fleet of `count` nodes cycling through the families (each family's plain kind: 910B, 310P,
 * nvidia), each with eight devices (the shape property tests and benchmarks want: every
 * family, a known device count).
 */
export function roundRobinFleet(count: number, seed: number | string = 1): SimNode[] {
  const kinds = FAMILIES.families.map((family) => Object.keys(family.sim.kinds)[0] as SimKind);
  const width = Math.max(3, String(count).length);
  return Array.from({ length: count }, (_, i) => {
    const kind = kinds[i % kinds.length] as SimKind;
    const { prefix } = simKind(kind).kind;
    return buildNode(`${prefix}-${String(i + 1).padStart(width, '0')}`, kind, seed);
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

/**
 * The benchmark's workload: snapshots built up front (never timed) from the simulator, for
 * a round-robin fleet of 910B, 310P and H100 nodes with eight devices each, and when each
 * one reaches the receiver.
 */
import type { Snapshot } from '../contracts/index.js';
import { devicesIn as devicesInPayload } from '../core/normalise.js';
import { type Fault, generateTrace, roundRobinFleet } from '../core/sim/index.js';

/** Devices per simulated node (every node kind of the round-robin fleet has eight). */
export const DEVICES_PER_NODE = 8;

/** What to build. */
export interface WorkloadOptions {
  /** Devices to track; rounded up to whole nodes of eight. */
  devices: number;
  /** Samples per device (one per second). */
  seconds: number;
  /** Inject a few faults (2% of nodes) so transitions and timers are exercised; default true. */
  faults?: boolean;
  seed?: number;
}

/** Snapshots ready to feed, with their arrival times. */
export interface Workload {
  nodes: number;
  devices: number;
  seconds: number;
  snapshots: Snapshot[];
  /** `now` for each snapshot's observe: collected_at plus a 50 ms delivery delay. */
  nows: Float64Array;
  /** Device entries across all snapshots (what throughput is counted in). */
  deviceSamples: number;
}

/**
 * Faults on 6% of nodes, so the timed path includes smoothing, signals and failures, not
 * only healthy samples: every 50th node runs hot from second 5, every 50th (offset 25) has
 * an ECC storm, and every 50th (offset 10) loses a PCIe link at second 30 (failed at once).
 */
function faultsFor(fleet: ReturnType<typeof roundRobinFleet>): Fault[] {
  const out: Fault[] = [];
  fleet.forEach((node, i) => {
    const first = node.devices[0]?.id;
    const second = node.devices[1]?.id;
    if (i % 50 === 0 && first) out.push({ kind: 'heat', node: node.name, device: first, from: 5 });
    if (i % 50 === 25 && second) out.push({ kind: 'ecc-storm', node: node.name, device: second, from: 2 });
    if (i % 50 === 10 && first) out.push({ kind: 'link-down', node: node.name, device: first, from: 30 });
  });
  return out;
}

/** Counts the device entries of one snapshot (its family's count, as the engine's). */
export function devicesIn(snapshot: Snapshot): number {
  return devicesInPayload(snapshot.payload);
}

/** Builds the workload: `ceil(devices / 8)` nodes sampling once a second for `seconds`. */
export function buildWorkload(options: WorkloadOptions): Workload {
  const nodes = Math.max(1, Math.ceil(options.devices / DEVICES_PER_NODE));
  const seed = options.seed ?? 1;
  const fleet = roundRobinFleet(nodes, seed);
  const faults = options.faults === false ? [] : faultsFor(fleet);
  const { snapshots } = generateTrace({ nodes: fleet, seconds: options.seconds, faults, seed });
  const nows = new Float64Array(snapshots.length);
  let deviceSamples = 0;
  snapshots.forEach((s, i) => {
    nows[i] = Date.parse(s.collected_at) + 50;
    deviceSamples += devicesIn(s);
  });
  return {
    nodes,
    devices: nodes * DEVICES_PER_NODE,
    seconds: options.seconds,
    snapshots,
    nows,
    deviceSamples,
  };
}

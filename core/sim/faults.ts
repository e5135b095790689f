/**
 * Faults the simulator can inject, as plain data on a timeline of whole seconds after the
 * trace's start. Each fault says what a real tool would print while it lasts; deciding what
 * that means (degraded? failed? which reason?) is the engine's job, never the simulator's.
 */
import { FAMILIES, type SimFaultSupport } from '../../families/index.js';
import { NpuFaultError } from '../errors.js';
import type { SimDevice, SimNode } from './fleet.js';

interface FaultWindow {
  /** Node name. */
  node: string;
  /** First second (after the trace start) the fault is in effect. */
  from: number;
  /** First second it is over (exclusive); default: the end of the trace (see each kind). */
  to?: number;
  /** A sentence for people watching (the demo prints it when the fault starts). */
  note?: string;
}

interface DeviceFault extends FaultWindow {
  /** The device's display id (`npu5`, `npu0-1`, `gpu3`). */
  device: string;
}

/** Temperature climbs to `celsius` (default 90) over `rampSeconds` (default 6) and stays. */
export interface HeatFault extends DeviceFault {
  kind: 'heat';
  celsius?: number;
  rampSeconds?: number;
}
/** A short temperature spike: `celsius` (default 92) for [from, to), default two samples. */
export interface SpikeFault extends DeviceFault {
  kind: 'spike';
  celsius?: number;
}
/**
 * Correctable ECC errors keep arriving: the counter grows in most seconds, by up to
 * `burst` (default 5), and never stands still for more than three seconds.
 */
export interface EccStormFault extends DeviceFault {
  kind: 'ecc-storm';
  burst?: number;
}
/** The uncorrectable ECC counter grows by `count` (default 1) at `from`; `to` is ignored. */
export interface EccUncorrectableFault extends DeviceFault {
  kind: 'ecc-uncorrectable';
  count?: number;
}
/**
 * The PCIe link is down. On 310P the link belongs to the card, so both of the card's chips
 * go down. `power: 'kept'` (default) still reads power (a link that failed to retrain);
 * `'lost'` reads none (the device is off the bus). A GPU off the bus reports null metrics.
 */
export interface LinkDownFault extends DeviceFault {
  kind: 'link-down';
  power?: 'kept' | 'lost';
}
/**
 * The device disappears: `'omitted'` (default) leaves it out of the tool's output (on 310P,
 * a card whose chips are all omitted is left out whole); `'absent'` sends it as the
 * agent's inventory does, `present: false` with null metrics.
 */
export interface VanishFault extends DeviceFault {
  kind: 'vanish';
  mode?: 'omitted' | 'absent';
}
/** The tool reports this device health (910B and 310P only). */
export interface HealthFault extends DeviceFault {
  kind: 'health';
  health: 'Warning' | 'Alarm' | 'Critical';
}
/** The tool lists an Ascend fault code (hex, e.g. `80E01801`). */
export interface FaultCodeFault extends DeviceFault {
  kind: 'fault-code';
  code: string;
}
/** The GPU reports an XID event; default for one sample. */
export interface XidFault extends DeviceFault {
  kind: 'xid';
  xid: number;
}
/** The node's agent sends nothing (network cut, agent hung). */
export interface SilenceFault extends FaultWindow {
  kind: 'silence';
}
/**
 * The agent restarts: it sends nothing in [from, to) (default two seconds), then a new
 * boot_id with seq from 1. `resetCounters` also reloads the driver (ECC counters restart).
 */
export interface RestartFault extends FaultWindow {
  kind: 'restart';
  resetCounters?: boolean;
}
/** The node's tool fails: the agent resends its last good sample with `cached: true`. */
export interface CachedFault extends FaultWindow {
  kind: 'cached';
}

/** Anything the simulator can do wrong. */
export type Fault =
  | HeatFault
  | SpikeFault
  | EccStormFault
  | EccUncorrectableFault
  | LinkDownFault
  | VanishFault
  | HealthFault
  | FaultCodeFault
  | XidFault
  | SilenceFault
  | RestartFault
  | CachedFault;

/** Kinds of fault aimed at one device (the others act on the whole node). */
export type DeviceFaultKind = Exclude<Fault['kind'], 'silence' | 'restart' | 'cached'>;

/** A fault resolved against a fleet: a closed window and the device indexes it touches. */
export type ResolvedFault = Fault & {
  /** Exclusive end, resolved from each kind's default. */
  end: number;
  /** Indexes into the node's `devices` that the fault touches (empty for node faults). */
  targets: number[];
};

function defaultEnd(fault: Fault): number {
  if (fault.to !== undefined) return fault.to;
  switch (fault.kind) {
    case 'spike':
      return fault.from + 2;
    case 'xid':
    case 'ecc-uncorrectable':
      return fault.from + 1;
    case 'restart':
      return fault.from + 2;
    default:
      return Number.POSITIVE_INFINITY;
  }
}

/** The faults the node's family can show (families/<id>/sim.ts). */
export function simFaultSupport(node: SimNode): SimFaultSupport {
  const family = FAMILIES.get(node.family);
  if (family === undefined) throw new NpuFaultError('sim_config', `${node.name}: no family ${node.family}`);
  return family.sim.faults;
}

function targetsOf(fault: Fault, node: SimNode): number[] {
  if (!('device' in fault)) return [];
  const index = node.devices.findIndex((d) => d.id === fault.device);
  const device = node.devices[index];
  if (!device) {
    throw new NpuFaultError(
      'sim_config',
      `fault ${fault.kind}: node ${node.name} has no device ${fault.device}`,
    );
  }
  const support = simFaultSupport(node);
  if (fault.kind === 'link-down' && support.linkDown === 'slot') {
    // The link is the slot's (a 310P card's): every chip on it goes with it.
    return node.devices.flatMap((d: SimDevice, i) => (d.slot === device.slot ? [i] : []));
  }
  if (fault.kind === 'xid' && support.xid !== true) {
    throw new NpuFaultError('sim_config', `fault xid: ${node.name} ${support.xid}`);
  }
  if (fault.kind === 'health' && support.health !== true) {
    throw new NpuFaultError('sim_config', `fault health: ${support.health} for ${fault.device}`);
  }
  return [index];
}

/**
 * Checks every fault against the fleet and groups them by node. Throws an NpuFaultError
 * naming the fault when a node or device does not exist.
 */
export function resolveFaults(
  faults: readonly Fault[],
  fleet: readonly SimNode[],
): Map<string, ResolvedFault[]> {
  const byName = new Map(fleet.map((n) => [n.name, n]));
  const out = new Map<string, ResolvedFault[]>();
  for (const fault of faults) {
    const node = byName.get(fault.node);
    if (!node)
      throw new NpuFaultError('sim_config', `fault ${fault.kind}: no node ${fault.node} in the fleet`);
    const resolved = resolveFault(fault, node);
    const list = out.get(node.name) ?? [];
    list.push(resolved);
    out.set(node.name, list);
  }
  return out;
}

/**
 * Checks one fault against its node (whose name it must carry) and closes its window.
 * Throws an NpuFaultError naming the fault when it does not fit the node.
 */
export function resolveFault(fault: Fault, node: SimNode): ResolvedFault {
  if (fault.node !== node.name)
    throw new NpuFaultError(
      'sim_config',
      `fault ${fault.kind}: it is for node ${fault.node}, not ${node.name}`,
    );
  if (!Number.isInteger(fault.from) || fault.from < 0) {
    throw new NpuFaultError(
      'sim_config',
      `fault ${fault.kind} on ${fault.node}: from must be a whole second >= 0`,
    );
  }
  return { ...fault, end: defaultEnd(fault), targets: targetsOf(fault, node) };
}

/** True while second `s` lies in the fault's window. */
export function activeAt(fault: ResolvedFault, s: number): boolean {
  return s >= fault.from && s < fault.end;
}

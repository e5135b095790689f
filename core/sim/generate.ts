/**
 * Turns a fleet and a list of faults into `hdc.health/v1` snapshots: one per node per
 * second, in `collected_at` order, as the agents would send them. Pure and deterministic:
 * the same options always give the same snapshots, byte for byte (no clock, no
 * Math.random; every random draw comes from a stream seeded by (seed, node)).
 *
 * What "realistic" means here: each node runs a job whose load drifts on a slow cycle;
 * temperature and power follow the load with sensor noise; agents sample at their own
 * phase within the second with a few ms of jitter; each agent has its own boot_id and seq
 * (seq does not start at 1: the agents have been up for a while before the trace starts).
 */
import { SNAPSHOT_SCHEMA, type Payload, type Snapshot } from '../../contracts/index.js';
import { FAMILIES, type SimEffects } from '../../families/index.js';
import { NpuFaultError } from '../errors.js';
import { activeAt, resolveFaults, type Fault, type ResolvedFault } from './faults.js';
import { roundRobinFleet, type SimDevice, type SimNode } from './fleet.js';
import { createRng, hashSeed, type Rng } from './prng.js';

/** The default start of a trace: an arbitrary fixed instant, so traces are reproducible. */
export const DEFAULT_START = Date.parse('2026-11-29T08:00:00.000Z');

/** Options of {@link generateTrace}. */
export interface TraceOptions {
  /** A node count (a {@link roundRobinFleet}: 910B, 310P, nvidia, 8 devices each) or a fleet. */
  nodes: number | readonly SimNode[];
  /** Seconds of trace: each node samples once per second. */
  seconds: number;
  /** Faults on the timeline (seconds after `start`). */
  faults?: readonly Fault[];
  /** Seed of every random draw; default 1. */
  seed?: number | string;
  /** Time of second 0 (epoch ms or ISO); default {@link DEFAULT_START}. */
  start?: number | string;
}

/** A generated trace. */
export interface Trace {
  fleet: SimNode[];
  /** Epoch ms of second 0. */
  start: number;
  seconds: number;
  /** Every snapshot, in `collected_at` order (ties by node name); valid for snapshotSchema. */
  snapshots: Snapshot[];
}

/** A snapshot and when the receiver gets it (epoch ms). */
export interface Delivery {
  snapshot: Snapshot;
  receivedAt: number;
}

/** What the faults of one node do to one device in one second. */
type Effects = SimEffects;

/** Per-node state carried from one second to the next. */
export interface NodeState {
  rng: Rng;
  bootId: string;
  boots: number;
  seq: number;
  /** Cumulative ECC counters per device (they grow whether or not the agent sends). */
  corrected: number[];
  uncorrected: number[];
  /** Seconds since each device's counter last grew during a storm. */
  quietFor: number[];
  lastPayload: Payload | null;
  /**
   * When each XID fault first fired, for the event's `at`, by what the fault is (xidKey), not
   * by object: a live node is handed its faults anew at every read.
   */
  xidAt: Map<string, string>;
}

const clamp01 = (x: number): number => (x < 0 ? 0 : x > 1 ? 1 : x);

/** Reads an epoch-ms or ISO start. */
export function toEpoch(start: number | string | undefined): number {
  if (start === undefined) return DEFAULT_START;
  const ms = typeof start === 'number' ? start : Date.parse(start);
  if (!Number.isFinite(ms)) throw new NpuFaultError('sim_config', `start: not a time: ${String(start)}`);
  return ms;
}

function load(node: SimNode, device: SimDevice, t: number, rng: Rng): number {
  const { level, swing, periodS, phase } = node.job;
  return clamp01(
    level +
      swing * Math.sin((2 * Math.PI * t) / periodS + phase) +
      device.profile.loadOffset +
      rng.normal(0, 0.02),
  );
}

function noEffects(): Effects {
  return { temp: null, linkDown: false, powerLost: false, vanish: null, health: null, codes: [], xids: [] };
}

function heatTemp(
  fault: Extract<ResolvedFault, { kind: 'heat' }>,
  s: number,
  normal: number,
  rng: Rng,
): number {
  const target = fault.celsius ?? 90;
  const ramp = Math.max(1, fault.rampSeconds ?? 6);
  const f = Math.min(1, (s - fault.from + 1) / ramp);
  const t = normal + (target - normal) * f + rng.normal(0, 0.8);
  // Once at temperature it stays over the 85 °C line: sustained means sustained.
  return f === 1 && target > 86 ? Math.max(t, 86) : t;
}

/** Applies one node's faults for second `s`: effects per device, counters updated. */
function applyFaults(
  faults: readonly ResolvedFault[],
  state: NodeState,
  s: number,
  normals: readonly number[],
  at: string,
): Effects[] {
  const effects = normals.map(noEffects);
  for (const fault of faults) {
    if (fault.kind === 'restart' && fault.resetCounters && s === fault.end) {
      state.corrected.fill(0);
      state.uncorrected.fill(0);
    }
    if (!activeAt(fault, s)) continue;
    if (fault.kind === 'xid' && !state.xidAt.has(xidKey(fault))) state.xidAt.set(xidKey(fault), at);
    for (const i of fault.targets) {
      const e = effects[i];
      if (e) applyDeviceFault(fault, { i, e, state, s, normal: normals[i] ?? 60 });
    }
  }
  return effects;
}

/** What makes two XID faults the same event: device, XID and first second. */
function xidKey(fault: Extract<ResolvedFault, { kind: 'xid' }>): string {
  return `${fault.device}\u0000${fault.xid}\u0000${fault.from}`;
}

/** Where one device fault lands: device index `i`, its effects, the node state, the second. */
interface Target {
  i: number;
  e: Effects;
  state: NodeState;
  s: number;
  /** The device's temperature this second without faults. */
  normal: number;
}

function applyDeviceFault(fault: ResolvedFault, { i, e, state, s, normal }: Target): void {
  switch (fault.kind) {
    case 'heat':
      e.temp = heatTemp(fault, s, normal, state.rng);
      break;
    case 'spike':
      e.temp = (fault.celsius ?? 92) + state.rng.normal(0, 0.5);
      break;
    case 'ecc-storm': {
      const quiet = state.quietFor[i] ?? 0;
      // Bursty, but never quiet long enough for the 5-sample window to empty.
      if (quiet >= 3 || state.rng.chance(0.7)) {
        state.corrected[i] = (state.corrected[i] ?? 0) + state.rng.int(1, fault.burst ?? 5);
        state.quietFor[i] = 0;
      } else state.quietFor[i] = quiet + 1;
      break;
    }
    case 'ecc-uncorrectable':
      if (s === fault.from) state.uncorrected[i] = (state.uncorrected[i] ?? 0) + (fault.count ?? 1);
      break;
    case 'link-down':
      e.linkDown = true;
      e.powerLost = fault.power === 'lost';
      break;
    case 'vanish':
      e.vanish = fault.mode ?? 'omitted';
      break;
    case 'health':
      e.health = fault.health;
      break;
    case 'fault-code':
      e.codes.push(fault.code.toUpperCase());
      break;
    case 'xid':
      // The event keeps the time it happened however many samples repeat it.
      e.xids.push({ xid: fault.xid, at: state.xidAt.get(xidKey(fault)) ?? '' });
      break;
    default:
      break;
  }
}

/**
 * What the node's tool prints this second: its family's payload (families/<id>/sim.ts) of
 * every device, with its effects, sample and counters.
 */
function payloadFor(
  node: SimNode,
  st: NodeState,
  effects: readonly Effects[],
  samples: ReadonlyArray<{ load: number; temp: number }>,
): Payload {
  const family = FAMILIES.get(node.family);
  if (family === undefined) throw new NpuFaultError('sim_config', `${node.name}: no family ${node.family}`);
  const seconds = node.devices.map((device, i) => ({
    device,
    effects: effects[i] ?? noEffects(),
    sample: samples[i] ?? { load: 0, temp: 40 },
    corrected: st.corrected[i] ?? 0,
    uncorrected: st.uncorrected[i] ?? 0,
  }));
  return family.sim.payload(node.driverVersion, seconds, st.rng) as Payload;
}

/** A node's state before its first second (its random stream is keyed by seed and name). */
export function initialState(node: SimNode, seed: number | string): NodeState {
  const rng = createRng(hashSeed(seed, 'trace', node.name));
  return {
    rng,
    bootId: rng.uuid(),
    boots: 0,
    // The agents have been up a while: seq is wherever it happens to be.
    seq: rng.int(100, 50000),
    corrected: node.devices.map((d) => d.initialEcc.corrected),
    uncorrected: node.devices.map((d) => d.initialEcc.uncorrected),
    quietFor: node.devices.map(() => 0),
    lastPayload: null,
    xidAt: new Map(),
  };
}

/** True when the node's agent sends nothing at second `s` (silenced, or restarting). */
function silentAt(faults: readonly ResolvedFault[], s: number): boolean {
  return faults.some((f) => (f.kind === 'silence' || f.kind === 'restart') && activeAt(f, s));
}

/** What a node's tool reads in one second. */
export interface NodeReading {
  /** Epoch ms the agent sampled (second `s`, the node's phase, a few ms of jitter). */
  ms: number;
  /** The same, ISO. */
  at: string;
  payload: Payload;
  /** True while a `cached` fault holds: `payload` is the last good reading, resent. */
  cached: boolean;
}

/**
 * One node's reading for second `s`, or null when its agent sends nothing (silenced,
 * restarting, or its tool failing before any good reading). Advances the node's state
 * (random stream, counters, boot, seq) by one second: the one step both a trace and a live
 * node take, so the two read alike.
 */
export function stepNode(
  node: SimNode,
  st: NodeState,
  faults: readonly ResolvedFault[],
  s: number,
  start: number,
): NodeReading | null {
  const ms = start + s * 1000 + node.phaseMs + st.rng.int(-15, 15);
  const at = new Date(ms).toISOString();
  const samples = node.devices.map((d) => {
    const l = load(node, d, s, st.rng);
    return { load: l, temp: d.profile.baseTemp + d.profile.tempPerLoad * l + st.rng.normal(0, 0.4) };
  });
  const effects =
    faults.length === 0
      ? samples.map(noEffects)
      : applyFaults(
          faults,
          st,
          s,
          samples.map((x) => x.temp),
          at,
        );
  effects.forEach((e, i) => {
    const sample = samples[i];
    if (e.temp !== null && sample) sample.temp = e.temp;
  });
  if (silentAt(faults, s)) return null;
  const boots = faults.filter((f) => f.kind === 'restart' && f.end <= s).length;
  if (boots > st.boots) {
    st.boots = boots;
    st.bootId = st.rng.uuid();
    st.seq = 0;
  }
  const cached = faults.some((f) => f.kind === 'cached' && activeAt(f, s));
  if (cached && st.lastPayload === null) return null;
  const payload =
    cached && st.lastPayload ? structuredClone(st.lastPayload) : payloadFor(node, st, effects, samples);
  if (!cached) st.lastPayload = payload;
  st.seq += 1;
  return { ms, at, payload, cached };
}

/** One node's snapshot for second `s`, or null when its agent sends nothing. */
function sampleNode(
  node: SimNode,
  st: NodeState,
  faults: readonly ResolvedFault[],
  s: number,
  start: number,
): { ms: number; snapshot: Snapshot } | null {
  const reading = stepNode(node, st, faults, s, start);
  if (reading === null) return null;
  return {
    ms: reading.ms,
    snapshot: {
      schema: SNAPSHOT_SCHEMA,
      node: node.name,
      boot_id: st.bootId,
      seq: st.seq,
      collected_at: reading.at,
      collector: 'sim',
      cached: reading.cached,
      payload: reading.payload,
    },
  };
}

/**
 * Generates a trace: every node samples once per second for `seconds` seconds, with the
 * faults applied. Throws an NpuFaultError when a fault names a node or device the fleet
 * does not have.
 */
export function generateTrace(options: TraceOptions): Trace {
  const seed = options.seed ?? 1;
  const start = toEpoch(options.start);
  const fleet = typeof options.nodes === 'number' ? roundRobinFleet(options.nodes, seed) : [...options.nodes];
  if (new Set(fleet.map((n) => n.name)).size !== fleet.length)
    throw new NpuFaultError('sim_config', 'node names must be unique');
  const faults = resolveFaults(options.faults ?? [], fleet);
  const states = fleet.map((node) => initialState(node, seed));
  const snapshots: Snapshot[] = [];
  for (let s = 0; s < options.seconds; s++) {
    const batch: Array<{ ms: number; snapshot: Snapshot }> = [];
    fleet.forEach((node, n) => {
      const st = states[n];
      const out = st ? sampleNode(node, st, faults.get(node.name) ?? [], s, start) : null;
      if (out) batch.push(out);
    });
    // Phases keep every sample inside its second, so sorting each second sorts the trace.
    batch.sort((a, b) => a.ms - b.ms || (a.snapshot.node < b.snapshot.node ? -1 : 1));
    for (const b of batch) snapshots.push(b.snapshot);
  }
  return { fleet, start, seconds: options.seconds, snapshots };
}

/**
 * Gives each snapshot a network delay in [minDelayMs, maxDelayMs] (deterministic from the
 * seed) and returns them in the order the receiver gets them.
 */
export function deliver(
  snapshots: readonly Snapshot[],
  options: { seed?: number | string; minDelayMs?: number; maxDelayMs?: number } = {},
): Delivery[] {
  const rng = createRng(hashSeed(options.seed ?? 1, 'delivery'));
  const min = options.minDelayMs ?? 20;
  const max = options.maxDelayMs ?? 150;
  const out = snapshots.map((snapshot) => ({
    snapshot,
    receivedAt: Date.parse(snapshot.collected_at) + rng.int(min, max),
  }));
  // Array.prototype.sort is stable: equal arrival times keep collected_at order.
  return out.sort((a, b) => a.receivedAt - b.receivedAt);
}

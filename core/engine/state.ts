/**
 * The engine's in-memory state: one NodeState per node, one DeviceState per device key.
 * Plain mutable records, updated in place on every sample (no cloning on the hot path).
 */
import type { DeviceKind, DeviceObservation, NodeProblemReading } from '../../contracts/index.js';
import type { DeviceStatus } from './api.js';
import type { DeadlineEntry } from './deadlines.js';
import { newBootTrack, type BootTrack } from './dedup.js';
import { initialFsm, type FsmState } from './fsm.js';
import { inWindow } from './window.js';

/** Everything the engine keeps about one device (state identity: `key`). */
export interface DeviceState extends FsmState {
  readonly key: string;
  id: string;
  resourceId: string;
  /** The family whose payload listed it (UNKNOWN_FAMILY while seeded and not yet sampled). */
  family: string;
  kind: DeviceKind;
  model: string;
  /** The status last published (reported through transitions). */
  published: DeviceStatus;
  /** When `published` began (an overlay can change it while the state machine's `since` stands). */
  publishedSince: number;
  /** The node boot epoch this device's counters belong to. */
  epoch: number;
  /** The node sample number of the device's last sample (to spot devices left out). */
  sampleNo: number;
  /** The node sample number of the last snapshot that listed the device (0: seeded, never listed). */
  listedSample: number;
  /** Samples of this device so far (the window's clock). */
  n: number;
  /** High-temperature flags of the window, newest in bit 0. */
  hot: number;
  /** ECC baselines (last non-null reading). */
  eccBase: number | null;
  uncBase: number | null;
  /** Sample number of the last ECC / uncorrectable increase. */
  eccAt: number;
  uncAt: number;
  /**
   * Sample number of the last event of each event reason bit that keeps its memory here (the
   * XIDs; `recordEvent`), so a clear, a new boot and a rules reload treat every such reason
   * alike; null until one fires.
   */
  eventAt: number[] | null;
  /** `xid@at` keys of the XID events in the previous sample (a rolling list must not re-fire). */
  xidSeen: Set<string> | null;
  /** Latched reason bits. */
  latched: number;
  /**
   * Why the device is in its state when it is not healthy: the reason that last held it
   * there (engine.ts `recordCause`). Published while no active reason holds the state
   * (document.ts `publishedReason`), so a degraded device waiting out its clean samples
   * still says why; a name, not a bit, so a rules reload cannot lose it. Null while healthy.
   */
  cause: string | null;
  /** True when `cause` was a critical reason (a failure, not 180 s of degradation). */
  causeCritical: boolean;
  /** Active reason bits of the last sample, latched ones included. */
  active: number;
  temperature: number | null;
  power: number | null;
  ecc: number | null;
  link: 'up' | 'down' | null;
}

/** Everything the engine keeps about one node. */
export interface NodeState {
  readonly name: string;
  /** Creation order among the engine's nodes (breaks ties between equal deadlines). */
  readonly order: number;
  boot: BootTrack;
  /** Increments at each new boot_id; devices with an older epoch get new baselines. */
  epoch: number;
  /** Increments at each applied (non-cached) snapshot. */
  sampleNo: number;
  /** Receiver clock (ms) of the newest accepted snapshot; NaN before the first. */
  lastSeen: number;
  /** Largest collected_at (ms) of an applied (fresh) snapshot: the duration clock, monotone. */
  lastT: number;
  /** Largest collected_at (ms) of any accepted snapshot, cached ones included (`observed_at`). */
  observedAt: number;
  /** Receiver clock when the current run of cached snapshots began; NaN when not in one. */
  cachedSince: number;
  /** Overlay bits (overlays.ts). */
  overlays: number;
  /**
   * The Node's conditions the controller passed (type → `True`/`False`/`Unknown`, only the
   * types the rules name when passed): kept to raise `node_conditions` reasons again on a
   * rules reload. Null until any is passed.
   */
  conditions: ReadonlyMap<string, string> | null;
  /** The node problems of the newest accepted snapshot (what the agent saw, for explain); null: none. */
  problems: readonly NodeProblemReading[] | null;
  /**
   * The pods holding each device (resource id → `namespace/name`, sorted, distinct) from the
   * newest accepted snapshot (CONTRACT §1.9); null: not known (the field was left out).
   */
  holders: ReadonlyMap<string, readonly string[]> | null;
  devices: Map<string, DeviceState>;
  /** The live queue entries of the agent-unreachable and collector-error deadlines (deadlines.ts). */
  staleEntry: DeadlineEntry<NodeState> | null;
  collectorEntry: DeadlineEntry<NodeState> | null;
}

/** A node with nothing observed yet. */
export function newNode(name: string, order: number): NodeState {
  return {
    name,
    order,
    boot: newBootTrack(),
    epoch: 0,
    sampleNo: 0,
    lastSeen: Number.NaN,
    lastT: Number.NaN,
    observedAt: Number.NaN,
    cachedSince: Number.NaN,
    overlays: 0,
    conditions: null,
    problems: null,
    holders: null,
    devices: new Map(),
    staleEntry: null,
    collectorEntry: null,
  };
}

/** A device first seen in `obs` at collected_at `t`. */
export function newDevice(obs: DeviceObservation, t: number, epoch: number): DeviceState {
  return {
    ...initialFsm(t),
    key: obs.key,
    id: obs.id,
    resourceId: obs.resource_id,
    family: obs.family,
    kind: obs.kind,
    model: obs.model,
    published: 'unknown',
    publishedSince: t,
    epoch,
    sampleNo: 0,
    listedSample: 0,
    n: 0,
    hot: 0,
    eccBase: null,
    uncBase: null,
    eccAt: Number.NEGATIVE_INFINITY,
    uncAt: Number.NEGATIVE_INFINITY,
    eventAt: null,
    xidSeen: null,
    latched: 0,
    cause: null,
    causeCritical: false,
    active: 0,
    temperature: null,
    power: null,
    ecc: null,
    link: null,
  };
}

/** A new boot of the agent: new counter baselines, latches cleared (CONTRACT §1, §2.4). */
export function resetForBoot(device: DeviceState, epoch: number, first: DeviceObservation): void {
  device.epoch = epoch;
  // Latches (and recent events) clear only on evidence that the driver's counters restarted
  // (CONTRACT §2.4: "a new boot_id with reset counters"): a restart of the agent alone, such
  // as a DaemonSet rollout, must not clear a failure that still stands. The baselines stay:
  // a counter below its baseline is a reset (the new baseline), one above it an increase
  // that happened while the agent restarted, and either is judged by the usual rule.
  if (countersReset(device, first)) clearEvents(device);
}

/** True when a cumulative counter of `obs` is below the device's last reading (a reset). */
export function countersReset(device: DeviceState, obs: DeviceObservation): boolean {
  const below = (now: number | null, before: number | null): boolean =>
    now !== null && before !== null && now < before;
  return below(obs.ecc_errors, device.eccBase) || below(obs.ecc_uncorrectable, device.uncBase);
}

/** Forgets a device's event reasons and latches (operator clear). */
export function clearEvents(device: DeviceState): void {
  device.eccAt = Number.NEGATIVE_INFINITY;
  device.uncAt = Number.NEGATIVE_INFINITY;
  device.eventAt = null;
  device.latched = 0;
}

/** Records an event of the reason at `bit` in the device's current sample. */
export function recordEvent(device: DeviceState, bit: number): void {
  device.eventAt ??= new Array<number>(32).fill(Number.NEGATIVE_INFINITY);
  device.eventAt[31 - Math.clz32(bit)] = device.n;
}

/** The reasons among `bits` whose last event is inside a window of `size` samples. */
export function eventsInWindow(device: DeviceState, bits: number, size: number): number {
  const at = device.eventAt;
  if (at === null) return 0;
  let mask = 0;
  for (let rest = bits; rest !== 0; rest &= rest - 1) {
    const bit = rest & -rest;
    if (inWindow(device.n, at[31 - Math.clz32(bit)] ?? Number.NEGATIVE_INFINITY, size)) mask |= bit;
  }
  return mask;
}

/**
 * The detection engine (CONTRACT §2): snapshots in, status transitions and the published
 * document out. Pure and deterministic: time is always an argument, nothing is read from a
 * clock, the environment or the file system, so the controller, `npu-fault replay`, the
 * demo and the benchmark all run exactly this code.
 *
 * Two clocks: durations (smoothing, 60 s, 180 s) run on each node's collected_at, kept
 * monotone per node; staleness (agent-unreachable 5 s, collector-error 10 s) runs on `now`.
 * Overlay transitions are stamped at their deadline (last_seen + 5 s, first cached + 10 s),
 * whenever they are noticed; `tick(now)` fires deadlines ≤ now, and `observe` first fires
 * the node's deadlines strictly before `now` (a snapshot arriving exactly at the deadline
 * is in time).
 */
import type { DeviceObservation } from '../../contracts/device.js';
import type { PublishedDocument } from '../../contracts/published.js';
import { DEFAULT_RULES, type Rules } from '../../contracts/rules.js';
import type { Snapshot } from '../../contracts/snapshot.js';
import { normalise } from '../normalise.js';
import type { ObserveResult, PublisherInfo, ReloadableEngine, Transition } from './api.js';
import { admit } from './dedup.js';
import { iso, publishedReason, renderDocument } from './document.js';
import { evaluateSample, type SampleParams } from './evaluate.js';
import { advance, type FsmTiming } from './fsm.js';
import { AGENT_UNREACHABLE, COLLECTOR_ERROR, NODE_NOT_READY, publishedStatus } from './overlays.js';
import { compileReasons, remapMask, type ReasonTable } from './reasons.js';
import { clearEvents, newDevice, newNode, resetForBoot, type DeviceState, type NodeState } from './state.js';
import { windowMask } from './window.js';

/** Everything derived from one rules value. */
interface Compiled {
  rules: Rules;
  sample: SampleParams;
  timing: FsmTiming;
  staleMs: number;
  collectorMs: number;
  futureMs: number;
}

function compile(rules: Rules): Compiled {
  return {
    rules,
    sample: {
      table: compileReasons(rules),
      windowSize: rules.window_samples,
      windowMask: windowMask(rules.window_samples),
      hotC: rules.high_temp.threshold_c,
      minHot: rules.high_temp.min_samples,
      thermalC: rules.ecc_thermal_c,
      offlineW: rules.offline_power_w,
    },
    timing: {
      degradeMs: rules.degrade_after_s * 1000,
      failMs: rules.fail_after_degraded_s * 1000,
      recoverSamples: rules.recover_after_samples,
    },
    staleMs: rules.overlays.agent_unreachable_s * 1000,
    collectorMs: rules.overlays.collector_error_s * 1000,
    futureMs: rules.future_skew_s * 1000,
  };
}

/** A sample standing in for a device the snapshot left out: absent, every metric null. */
const LEFT_OUT: DeviceObservation = Object.freeze({
  id: '',
  key: '',
  resource_id: '',
  kind: 'npu',
  model: '',
  health: 'unknown',
  temperature_c: null,
  power_w: null,
  ecc_errors: null,
  ecc_uncorrectable: null,
  pcie_link_status: null,
  error_codes: [],
  xids: [],
  present: false,
}) as DeviceObservation;

const NO_TRANSITIONS: Transition[] = [];

class Engine implements ReloadableEngine {
  #c: Compiled;
  readonly #nodes = new Map<string, NodeState>();
  #known = new Set<string>();
  #devices = 0;

  constructor(rules: Rules) {
    this.#c = compile(rules);
  }

  observe(snapshot: Snapshot, now: number): ObserveResult {
    const t = Date.parse(snapshot.collected_at);
    if (t > now + this.#c.futureMs)
      return { accepted: false, dropped: 'future', transitions: NO_TRANSITIONS };
    const node = this.#node(snapshot.node);
    const verdict = admit(node.boot, snapshot.boot_id, snapshot.seq);
    if (verdict !== 'next' && verdict !== 'new-boot')
      return { accepted: false, dropped: verdict, transitions: NO_TRANSITIONS };
    if (verdict === 'new-boot') node.epoch++;

    const out: Transition[] = [];
    if (!Number.isNaN(node.lastSeen)) this.#expire(node, now, false, out);
    if (!(node.lastSeen >= now)) node.lastSeen = now;
    const at = Number.isNaN(node.lastT) || t > node.lastT ? t : node.lastT;
    node.lastT = at;

    let overlays = node.overlays & ~AGENT_UNREACHABLE;
    if (snapshot.cached) {
      if (Number.isNaN(node.cachedSince)) node.cachedSince = now;
    } else {
      node.cachedSince = Number.NaN;
      overlays &= ~COLLECTOR_ERROR;
      this.#apply(node, normalise(snapshot), at);
    }
    node.overlays = overlays;
    this.#publish(node, at, out);
    return { accepted: true, transitions: out };
  }

  tick(now: number): Transition[] {
    const out: Transition[] = [];
    for (const node of this.#nodes.values()) {
      if (!Number.isNaN(node.lastSeen)) this.#expire(node, now, true, out);
    }
    return out;
  }

  setNodeReady(name: string, ready: boolean, now: number): Transition[] {
    const node = this.#node(name);
    const overlays = ready ? node.overlays & ~NODE_NOT_READY : node.overlays | NODE_NOT_READY;
    if (overlays === node.overlays) return [];
    node.overlays = overlays;
    const out: Transition[] = [];
    this.#publish(node, now, out);
    return out;
  }

  setKnownNodes(nodes: Iterable<string>): void {
    this.#known = new Set(nodes);
  }

  clear(name: string, device: string | undefined, now: number): Transition[] {
    const node = this.#nodes.get(name);
    if (!node) return [];
    const { table } = this.#c.sample;
    for (const d of node.devices.values()) {
      if (device !== undefined && d.id !== device && d.key !== device) continue;
      if ((d.active & table.deviceMissing) !== 0) {
        // Clearing a missing device forgets it (it was removed on purpose); if the agent
        // still lists it as installed, its next sample brings it back as missing.
        node.devices.delete(d.key);
        this.#devices--;
        continue;
      }
      clearEvents(d);
      d.active &= ~(table.events | table.latched);
      if (d.state === 'failed' && d.active === 0) {
        d.state = 'healthy';
        d.since = now;
        d.clean = 0;
        d.warnSince = Number.NaN;
      }
    }
    const out: Transition[] = [];
    this.#publish(node, now, out);
    return out;
  }

  document(now: number, publisher: PublisherInfo): PublishedDocument {
    const { rules, sample } = this.#c;
    return renderDocument({
      nodes: this.#nodes.values(),
      known: this.#known,
      table: sample.table,
      now,
      publisher,
      degradedFraction: rules.publish.ingest_degraded_fraction,
      degradedMinNodes: rules.publish.ingest_degraded_min_nodes,
      maxBytes: rules.publish.max_bytes,
    });
  }

  deviceCount(): number {
    return this.#devices;
  }

  setRules(rules: Rules): void {
    const from = this.#c.sample.table;
    this.#c = compile(rules);
    const to = this.#c.sample.table;
    for (const node of this.#nodes.values()) {
      for (const d of node.devices.values()) remapDevice(d, from, to);
    }
  }

  rules(): Rules {
    return this.#c.rules;
  }

  #node(name: string): NodeState {
    let node = this.#nodes.get(name);
    if (!node) {
      node = newNode(name);
      this.#nodes.set(name, node);
    }
    return node;
  }

  /** Applies one fresh sample of every device, then marks devices the snapshot left out. */
  #apply(node: NodeState, observations: DeviceObservation[], t: number): void {
    const sampleNo = ++node.sampleNo;
    for (const obs of observations) {
      let device = node.devices.get(obs.key);
      if (device === undefined) {
        device = newDevice(obs, t, node.epoch);
        node.devices.set(obs.key, device);
        this.#devices++;
      } else {
        device.id = obs.id;
        device.resourceId = obs.resource_id;
        device.model = obs.model;
        if (device.epoch !== node.epoch) resetForBoot(device, node.epoch, obs);
      }
      device.sampleNo = sampleNo;
      this.#step(device, obs, t);
    }
    if (node.devices.size === observations.length) return;
    // A device this node reported before, now left out, is device-missing: within a boot as
    // CONTRACT §2.2 says, and also across a new agent boot, because a card that died and no
    // longer enumerates after a reboot must not stay "healthy" forever. An operator who
    // really removed it forgets it with a clear.
    for (const device of node.devices.values()) {
      if (device.sampleNo === sampleNo) continue;
      if (device.epoch !== node.epoch) resetForBoot(device, node.epoch, LEFT_OUT);
      device.sampleNo = sampleNo;
      this.#step(device, LEFT_OUT, t);
    }
  }

  #step(device: DeviceState, obs: DeviceObservation, t: number): void {
    const c = this.#c;
    const active = evaluateSample(device, obs, c.sample);
    device.active = active;
    device.temperature = obs.temperature_c;
    device.power = obs.power_w;
    device.ecc = obs.ecc_errors;
    device.link = obs.pcie_link_status;
    advance(device, active, c.sample.table.critical, t, c.timing);
  }

  /** Fires the node's overlay deadlines due by `now` (inclusive or strictly before). */
  #expire(node: NodeState, now: number, inclusive: boolean, out: Transition[]): void {
    const due = (deadline: number): boolean => (inclusive ? deadline <= now : deadline < now);
    const stale = (node.overlays & AGENT_UNREACHABLE) === 0 ? node.lastSeen + this.#c.staleMs : Number.NaN;
    const failing =
      (node.overlays & COLLECTOR_ERROR) === 0 ? node.cachedSince + this.#c.collectorMs : Number.NaN;
    const order: Array<[number, number]> = [
      [stale, AGENT_UNREACHABLE],
      [failing, COLLECTOR_ERROR],
    ];
    if (failing < stale) order.reverse();
    for (const [deadline, bit] of order) {
      if (Number.isNaN(deadline) || !due(deadline)) continue;
      node.overlays |= bit;
      this.#publish(node, deadline, out);
    }
  }

  /** Emits a transition for every device whose published status changed. */
  #publish(node: NodeState, at: number, out: Transition[]): void {
    const table = this.#c.sample.table;
    for (const device of node.devices.values()) {
      const status = publishedStatus(device.state, node.overlays);
      if (status === device.published) continue;
      out.push({
        at: iso(at),
        node: node.name,
        npu: device.id,
        key: device.key,
        from: device.published,
        to: status,
        reason: publishedReason(device, node.overlays, table),
      });
      device.published = status;
      device.publishedSince = at;
    }
  }
}

function remapDevice(device: DeviceState, from: ReasonTable, to: ReasonTable): void {
  device.active = remapMask(device.active, from, to);
  device.latched = remapMask(device.latched, from, to);
  if (device.xidAt === null) return;
  const at = new Array<number>(32).fill(Number.NEGATIVE_INFINITY);
  device.xidAt.forEach((when, i) => {
    const bit = remapMask(1 << i, from, to);
    if (bit !== 0) at[31 - Math.clz32(bit)] = when;
  });
  device.xidAt = at;
}

/** Creates an engine with `rules` (default: the contract's defaults). */
export function createEngine(rules: Rules = DEFAULT_RULES): ReloadableEngine {
  return new Engine(rules);
}

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
 * is in time). A deadline is always last_seen (or first cached) plus the threshold of the
 * rules in force when it is checked, so a reload re-times pending deadlines.
 *
 * Cost: the deadlines wait in a min-heap (deadlines.ts), so `tick(now)` pops only entries
 * that are due, fired or re-queued because the node was seen since (one per node per 5 s
 * at most), never a scan of every node; `observe` costs the snapshot's devices plus at
 * most one heap push.
 *
 * Cached snapshots (CONTRACT §1) keep their original collected_at: they keep the node
 * alive and start the collector-error clock on `now`, and advance no device and no
 * duration clock; an overlay change they cause (agent-unreachable lifting) is stamped at
 * `now`, the receiver's clock that overlays run on.
 */
import {
  DEFAULT_RULES,
  MAX_NODE_CONDITIONS,
  type DeviceObservation,
  type DeviceStatus,
  type PublishedDevice,
  type PublishedDocument,
  type PublishedNode,
  type Rules,
  type Snapshot,
} from '../../contracts/index.js';
import { FAMILIES, UNKNOWN_FAMILY, type FamilyRegistry } from '../../families/index.js';
import { devicesIn, normalise } from '../normalise.js';
import type {
  EngineCensus,
  EngineStats,
  Explanation,
  ObserveResult,
  PublisherInfo,
  ReloadableEngine,
  Transition,
} from './api.js';
import { DeadlineQueue, type DeadlineEntry } from './deadlines.js';
import { admit, admitted } from './dedup.js';
import type { Withheld } from './budget.js';
import { compareText, publishedReason, renderDocument, renderNodeEntry } from './document.js';
import { evaluateSample } from './evaluate.js';
import { explainNode } from './explain.js';
import { advance, type FsmTiming } from './fsm.js';
import {
  AGENT_UNREACHABLE,
  COLLECTOR_ERROR,
  NODE_NOT_READY,
  overlayNames,
  publishedStatus,
} from './overlays.js';
import { REASON_TABLE, type ReasonEntry } from './reason-table.js';
import {
  compileReasons,
  firstBit,
  type CompiledNodeReasons,
  holdingMask,
  reasonNames,
  remapMask,
  type ReasonTable,
} from './reasons.js';
import { holdersByDevice, namesOnlyDevicesOf } from './holders.js';
import { severity, type LatchedDevice, type NodeSeed } from './seed.js';
import { clearEvents, newDevice, newNode, resetForBoot, type DeviceState, type NodeState } from './state.js';
import { formatTimestamp, parseTimestamp } from './time.js';

/** Everything derived from one rules value. */
interface Compiled {
  rules: Rules;
  table: ReasonTable;
  timing: FsmTiming;
  staleMs: number;
  collectorMs: number;
  futureMs: number;
  maxDevices: number;
}

function compile(rules: Rules, reasons: readonly ReasonEntry[]): Compiled {
  const table = compileReasons(rules, reasons);
  return {
    rules,
    table,
    timing: {
      degradeMs: rules.degrade_after_s * 1000,
      failMs: rules.fail_after_degraded_s * 1000,
      recoverSamples: rules.recover_after_samples,
      degradeOnly: table.degradeOnly,
    },
    staleMs: rules.overlays.agent_unreachable_s * 1000,
    collectorMs: rules.overlays.collector_error_s * 1000,
    futureMs: rules.future_skew_s * 1000,
    maxDevices: rules.max_devices_per_node,
  };
}

/** A sample standing in for a device the snapshot left out: absent, every metric null. */
const LEFT_OUT: DeviceObservation = Object.freeze({
  id: '',
  key: '',
  resource_id: '',
  family: UNKNOWN_FAMILY,
  kind: 'npu',
  model: '',
  health: 'unknown',
  temperature_c: null,
  power_w: null,
  memory_used_mb: null,
  memory_total_mb: null,
  ecc_errors: null,
  ecc_uncorrectable: null,
  pcie_link_status: null,
  error_codes: [],
  xids: [],
  present: false,
}) as DeviceObservation;

const NO_TRANSITIONS: Transition[] = [];

/** The two time-driven overlays, in the order they fire on equal deadlines. */
const TIMED_OVERLAYS = [AGENT_UNREACHABLE, COLLECTOR_ERROR] as const;
type TimedOverlay = (typeof TIMED_OVERLAYS)[number];

/** How an engine is made beside its rules. */
export interface EngineOptions {
  /** The reasons it raises (default: the product's table, reason-table.ts). */
  reasons?: readonly ReasonEntry[];
  /** The families whose payloads it reads (default: the product's FAMILIES). */
  families?: Pick<FamilyRegistry, 'get'>;
}

class Engine implements ReloadableEngine {
  readonly #reasons: readonly ReasonEntry[];
  #c: Compiled;
  readonly #families: Pick<FamilyRegistry, 'get'>;
  readonly #nodes = new Map<string, NodeState>();
  readonly #deadlines = new DeadlineQueue<NodeState>();
  #known = new Set<string>();
  #devices = 0;
  #fired = 0;
  #retired = 0;
  /** Nodes whose node reasons a rules reload changed: their transitions come with the next tick. */
  readonly #reloaded = new Set<NodeState>();
  /** The observed nodes that are not healthy but the last document rendered did not list. */
  #withheld: ReadonlyMap<string, Withheld> = new Map();

  constructor(rules: Rules, reasons: readonly ReasonEntry[], families: Pick<FamilyRegistry, 'get'>) {
    this.#reasons = reasons;
    this.#c = compile(rules, reasons);
    this.#families = families;
  }

  observe(snapshot: Snapshot, now: number): ObserveResult {
    const t = parseTimestamp(snapshot.collected_at);
    if (t > now + this.#c.futureMs)
      return { accepted: false, dropped: 'future', transitions: NO_TRANSITIONS };
    // Refused before admission, so it takes no seq and keeps no node alive.
    if (devicesIn(snapshot.payload, this.#families) > this.#c.maxDevices)
      return { accepted: false, dropped: 'too-many-devices', transitions: NO_TRANSITIONS };
    const node = this.#node(snapshot.node);
    const verdict = admit(node.boot, snapshot.boot_id, snapshot.seq);
    if (!admitted(verdict)) return { accepted: false, dropped: verdict, transitions: NO_TRANSITIONS };
    if (verdict === 'new-boot') node.epoch++;

    const out: Transition[] = [];
    if (!Number.isNaN(node.lastSeen)) this.#expire(node, now, out);
    if (!(node.lastSeen >= now)) node.lastSeen = now;
    if (!(node.observedAt >= t)) node.observedAt = t;
    node.overlays &= ~AGENT_UNREACHABLE;
    // The agent's node problems are its own, fresh in every snapshot, even a cached one.
    this.#checkNode(node, snapshot);
    let stamp = now;
    if (snapshot.cached) {
      // A resend of the last good sample: alive, but no new data (no device, no lastT).
      if (Number.isNaN(node.cachedSince)) node.cachedSince = now;
    } else {
      if (snapshot.stale_readings === true) {
        // Kernel events on the last good reading: applied, but the tool is still failing.
        if (Number.isNaN(node.cachedSince)) node.cachedSince = now;
      } else {
        node.cachedSince = Number.NaN;
        node.overlays &= ~COLLECTOR_ERROR;
      }
      stamp = Number.isNaN(node.lastT) || t > node.lastT ? t : node.lastT;
      node.lastT = stamp;
      this.#apply(node, normalise(snapshot, this.#families), stamp);
    }
    // A present list is complete for every device the node has (§1.9): one naming a device the
    // node does not have was mapped wrong, so a device it leaves out may be held after all.
    if (node.holders !== null) {
      const ids = new Set<string>();
      for (const device of node.devices.values()) ids.add(device.resourceId);
      if (!namesOnlyDevicesOf(node.holders, ids)) node.holders = null;
    }
    this.#arm(node);
    this.#publish(node, stamp, out);
    return { accepted: true, transitions: out };
  }

  tick(now: number): Transition[] {
    const out: Transition[] = [];
    // A rules reload's changes of node reasons: published now (the host ticks after a reload).
    for (const node of this.#reloaded) this.#publish(node, now, out);
    this.#reloaded.clear();
    const queue = this.#deadlines;
    for (let top = queue.peek(); top !== undefined && top.at <= now; top = queue.peek()) {
      queue.pop();
      this.#due(top, out);
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

  setNodeConditions(name: string, conditions: Readonly<Record<string, string>>, now: number): Transition[] {
    const node = this.#node(name);
    const kept = new Map<string, string>();
    // Bounded whatever the Node says: only what the rules could name, and only known statuses.
    for (const [type, status] of Object.entries(conditions)) {
      if (kept.size >= MAX_KEPT_CONDITIONS) break;
      if (typeof status === 'string' && CONDITION_STATUSES.has(status)) kept.set(type, status);
    }
    node.conditions = kept.size === 0 ? null : kept;
    const overlays = withConditions(node.conditions, node.overlays, this.#c.table);
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
    const { table } = this.#c;
    const missing = table.bit('device-missing');
    for (const d of node.devices.values()) {
      if (device !== undefined && d.id !== device && d.key !== device) continue;
      if ((d.active & missing) !== 0) {
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
      // A cleared cause no longer explains the state: what is still active does.
      if (d.state === 'healthy') forgetCause(d);
      else if (d.active !== 0) recordCause(d, table, true);
    }
    const out: Transition[] = [];
    this.#publish(node, now, out);
    return out;
  }

  document(now: number, publisher: PublisherInfo): PublishedDocument {
    const { rules, table } = this.#c;
    const rendered = renderDocument({
      nodes: this.#nodes.values(),
      known: this.#known,
      table,
      now,
      publisher,
      degradedFraction: rules.publish.ingest_degraded_fraction,
      degradedMinNodes: rules.publish.ingest_degraded_min_nodes,
      maxBytes: rules.publish.max_bytes,
    });
    this.#withheld = rendered.withheld;
    return rendered.document;
  }

  deviceCount(): number {
    return this.#devices;
  }

  stats(): EngineStats {
    const { pushes, pops } = this.#deadlines.counters;
    return {
      nodes: this.#nodes.size,
      queued: this.#deadlines.size,
      pushes,
      pops,
      fired: this.#fired,
      retired: this.#retired,
    };
  }

  setRules(rules: Rules): void {
    const before = this.#c;
    this.#c = compile(rules, this.#reasons);
    const from = before.table;
    const to = this.#c.table;
    for (const node of this.#nodes.values()) {
      for (const d of node.devices.values()) remapDevice(d, from, to);
      // Node reasons by name (the fixed ones keep their bits); `node_conditions` evaluated again.
      const overlays = remapNodeMask(node.overlays, from.nodes, to.nodes);
      const next = withConditions(node.conditions, overlays, to);
      // A new severity (a node problem made critical) changes what is published, not the bits.
      const overlaid = (mask: number, nodes: CompiledNodeReasons): string =>
        overlayNames(mask & nodes.overlay, nodes).join();
      if (next !== node.overlays || overlaid(node.overlays, from.nodes) !== overlaid(next, to.nodes))
        this.#reloaded.add(node);
      node.overlays = next;
    }
    // Shorter thresholds move pending deadlines earlier than their queued entries: queue
    // them again (longer ones need nothing: an early entry re-queues itself when it pops).
    if (this.#c.staleMs < before.staleMs || this.#c.collectorMs < before.collectorMs) {
      for (const node of this.#nodes.values()) this.#arm(node);
    }
  }

  rules(): Rules {
    return this.#c.rules;
  }

  nodeEntry(name: string): PublishedNode | null {
    const node = this.#nodes.get(name);
    if (!node || Number.isNaN(node.lastSeen)) return null;
    return renderNodeEntry(node, this.#c.table);
  }

  removeNode(name: string): void {
    const node = this.#nodes.get(name);
    if (!node) return;
    // Its queued deadlines are dropped when they pop: they are no longer the live entries.
    node.staleEntry = null;
    node.collectorEntry = null;
    this.#devices -= node.devices.size;
    this.#reloaded.delete(node);
    this.#nodes.delete(name);
  }

  seed(seeds: Iterable<NodeSeed>, now: number): Transition[] {
    const out: Transition[] = [];
    for (const seed of seeds) {
      const node = this.#node(seed.node);
      const observed = seed.entry ? parseTimestamp(seed.entry.observed_at) : Number.NaN;
      // The engine is at least as current as the seed when it applied the node's samples up
      // to the seed's observed_at: then its own state stands (seed.ts).
      const behind = Number.isNaN(node.lastT) || !(node.lastT >= observed);
      for (const device of seed.entry?.npus ?? []) this.#seedDevice(node, device, behind);
      for (const record of seed.latched ?? []) this.#seedLatch(node, record);
      if (Number.isNaN(node.lastSeen) && node.devices.size > 0) {
        // Alive from now, as if it had just reported: silent, it goes stale in 5 s.
        node.lastSeen = now;
        node.observedAt = Number.isNaN(observed) ? now : observed;
        this.#arm(node);
      }
      this.#publish(node, now, out);
    }
    return out;
  }

  latched(name: string): LatchedDevice[] {
    const node = this.#nodes.get(name);
    if (!node) return [];
    const table = this.#c.table;
    const out: LatchedDevice[] = [];
    for (const d of node.devices.values()) {
      if (d.latched === 0) continue;
      out.push({
        key: d.key,
        id: d.id,
        resource_id: d.resourceId,
        kind: d.kind,
        model: d.model,
        reasons: reasonNames(table, d.latched),
        since: formatTimestamp(d.since),
        ecc_errors: d.eccBase,
        ecc_uncorrectable: d.uncBase,
      });
    }
    return out.sort((a, b) => compareText(a.id, b.id));
  }

  census(): EngineCensus {
    const counts = new Map<string, { family: string; status: DeviceStatus; count: number }>();
    let nodes = 0;
    let stale = 0;
    const observed = new Set<string>();
    for (const node of this.#nodes.values()) {
      if (Number.isNaN(node.lastSeen)) continue;
      nodes++;
      observed.add(node.name);
      if ((node.overlays & AGENT_UNREACHABLE) !== 0) stale++;
      for (const d of node.devices.values()) {
        const family = d.family;
        const status = publishedStatus(d.state, node.overlays, this.#c.table.nodes);
        const key = `${family}/${status}`;
        const entry = counts.get(key);
        if (entry) entry.count++;
        else counts.set(key, { family, status, count: 1 });
      }
    }
    let unobserved = 0;
    for (const name of this.#known) if (!observed.has(name)) unobserved++;
    return { devices: [...counts.values()], nodes, stale, unobserved };
  }

  explain(name: string, device: string | undefined, now: number): Explanation {
    const { rules, table, timing, staleMs, collectorMs } = this.#c;
    return explainNode(name, this.#nodes.get(name), device, now, {
      rules,
      table,
      timing,
      staleMs,
      collectorMs,
      withheld: this.#withheld.get(name) ?? null,
    });
  }

  /** Seeds one device of a published entry (seed.ts). */
  #seedDevice(node: NodeState, seen: PublishedDevice, behind: boolean): void {
    if (seen.status !== 'failed' && seen.status !== 'degraded') return;
    const table = this.#c.table;
    let device = node.devices.get(seen.key);
    if (device !== undefined && (!behind || severity(device.state) >= severity(seen.status))) return;
    const since = parseTimestamp(seen.since);
    if (device === undefined) {
      // A node holds no more devices than a snapshot may list (a Node or document written by
      // someone else cannot make every replica grow).
      if (node.devices.size >= this.#c.maxDevices) return;
      device = newDevice(seededObservation(seen), since, node.epoch);
      device.temperature = seen.temperature_c;
      device.power = seen.power_w;
      device.ecc = seen.ecc_errors;
      device.link = seen.pcie_link_status;
      node.devices.set(seen.key, device);
      this.#devices++;
    }
    device.state = seen.status;
    device.since = since;
    device.clean = 0;
    device.warnSince = Number.NaN;
    device.cause = seen.reason;
    device.causeCritical = seen.status === 'failed' && seen.reason !== null && isCritical(table, seen.reason);
    if (seen.status === 'failed') {
      const latched = bitsNamed(table, seen.reasons, table.latched);
      device.latched |= latched;
      device.active |= latched;
    }
  }

  /** Latches again the reasons a Node records (seed.ts), unless the engine is newer. */
  #seedLatch(node: NodeState, record: LatchedDevice): void {
    const table = this.#c.table;
    const bits = bitsNamed(table, record.reasons, table.latched);
    if (bits === 0) return;
    let device = node.devices.get(record.key);
    const since = parseTimestamp(record.since);
    if (device !== undefined && (device.latched & bits) === bits) return;
    // A device the engine sampled after the latch was recorded and found not latched has
    // been cleared or reset since: that newer evidence stands.
    if (device !== undefined && !Number.isNaN(node.lastT) && node.lastT > since && device.state !== 'failed')
      return;
    if (device === undefined) {
      if (node.devices.size >= this.#c.maxDevices) return;
      device = newDevice(seededObservation(record), since, node.epoch);
      node.devices.set(record.key, device);
      this.#devices++;
      device.since = since;
    }
    device.eccBase ??= record.ecc_errors;
    device.uncBase ??= record.ecc_uncorrectable;
    device.latched |= bits;
    device.active |= bits;
    device.clean = 0;
    if (device.state !== 'failed') {
      device.state = 'failed';
      device.since = since;
    }
    device.cause ??= table.names[firstBit(bits)] ?? null;
    device.causeCritical = true;
  }

  #node(name: string): NodeState {
    let node = this.#nodes.get(name);
    if (!node) {
      node = newNode(name, this.#nodes.size);
      this.#nodes.set(name, node);
    }
    return node;
  }

  /** Sets the node reasons a check of each accepted snapshot raises: the agent's node problems (§1.8). */
  #checkNode(node: NodeState, snapshot: Snapshot): void {
    node.problems = snapshot.payload.node_problems ?? null;
    node.holders = holdersByDevice(snapshot.payload.device_holders);
    const { checks, checked } = this.#c.table.nodes;
    if (checks.length === 0) return;
    let raised = 0;
    for (const { bit, check } of checks) if (check(snapshot)) raised |= bit;
    node.overlays = (node.overlays & ~checked) | raised;
  }

  /** Applies one fresh sample of every device, then marks devices the snapshot left out. */
  #apply(node: NodeState, observations: DeviceObservation[], t: number): void {
    const sampleNo = ++node.sampleNo;
    if (node.devices.size + observations.length > this.#c.maxDevices) this.#makeRoom(node, observations);
    for (const obs of observations) {
      let device = node.devices.get(obs.key);
      if (device === undefined) {
        device = newDevice(obs, t, node.epoch);
        node.devices.set(obs.key, device);
        this.#devices++;
      } else {
        device.id = obs.id;
        device.resourceId = obs.resource_id;
        device.family = obs.family;
        device.model = obs.model;
        if (device.epoch !== node.epoch) resetForBoot(device, node.epoch, obs);
      }
      device.sampleNo = sampleNo;
      device.listedSample = sampleNo;
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

  /**
   * Keeps a node within `max_devices_per_node` when a snapshot brings devices it did not hold:
   * forgets devices the snapshot leaves out (device-missing, or about to be), those without a
   * latched reason first, then those listed longest ago, then by key. A snapshot lists at most
   * the limit (observe), so there is always enough of them. Counted in stats().retired.
   */
  #makeRoom(node: NodeState, observations: readonly DeviceObservation[]): void {
    const listed = new Set<string>();
    let fresh = 0;
    for (const obs of observations) {
      listed.add(obs.key);
      if (!node.devices.has(obs.key)) fresh++;
    }
    let excess = node.devices.size + fresh - this.#c.maxDevices;
    if (excess <= 0) return;
    const leftOut = [...node.devices.values()].filter((d) => !listed.has(d.key)).sort(retireFirst);
    for (const device of leftOut) {
      if (excess-- <= 0) break;
      node.devices.delete(device.key);
      this.#devices--;
      this.#retired++;
    }
  }

  #step(device: DeviceState, obs: DeviceObservation, t: number): void {
    const c = this.#c;
    const { table } = c;
    const active = evaluateSample(device, obs, table);
    device.active = active;
    device.temperature = obs.temperature_c;
    device.power = obs.power_w;
    device.ecc = obs.ecc_errors;
    device.link = obs.pcie_link_status;
    const changed = advance(device, active, table.critical, t, c.timing);
    if (device.state === 'healthy') forgetCause(device);
    else recordCause(device, table, changed);
  }

  /** The pending deadline of one timed overlay of a node; NaN when none is pending. */
  #deadline(node: NodeState, overlay: TimedOverlay): number {
    if ((node.overlays & overlay) !== 0) return Number.NaN;
    return overlay === AGENT_UNREACHABLE
      ? node.lastSeen + this.#c.staleMs
      : node.cachedSince + this.#c.collectorMs;
  }

  /** Keeps the queue's invariant for a node: each pending deadline has a live entry at or before it. */
  #arm(node: NodeState): void {
    for (const overlay of TIMED_OVERLAYS) {
      const deadline = this.#deadline(node, overlay);
      if (Number.isNaN(deadline)) continue;
      const live = overlay === AGENT_UNREACHABLE ? node.staleEntry : node.collectorEntry;
      if (live !== null && live.at <= deadline) continue;
      this.#queue(node, overlay, deadline);
    }
  }

  #queue(node: NodeState, overlay: TimedOverlay, at: number): void {
    const entry = this.#deadlines.push(at, node, node.order, overlay);
    if (overlay === AGENT_UNREACHABLE) node.staleEntry = entry;
    else node.collectorEntry = entry;
  }

  /**
   * A popped entry whose time has come: dropped when superseded or no longer pending,
   * fired when it is the deadline itself, otherwise queued again at the real deadline
   * (even a due one, so that deadlines fire in time order across the queue).
   */
  #due(entry: DeadlineEntry<NodeState>, out: Transition[]): void {
    const node = entry.key;
    const overlay = entry.kind as TimedOverlay;
    const live = overlay === AGENT_UNREACHABLE ? node.staleEntry : node.collectorEntry;
    if (live !== entry) return;
    if (overlay === AGENT_UNREACHABLE) node.staleEntry = null;
    else node.collectorEntry = null;
    const deadline = this.#deadline(node, overlay);
    if (Number.isNaN(deadline)) return;
    if (deadline !== entry.at) {
      this.#queue(node, overlay, deadline);
      return;
    }
    this.#fire(node, overlay, deadline, out);
  }

  /** Fires the node's own deadlines strictly before `now`, in time order (observe's rule). */
  #expire(node: NodeState, now: number, out: Transition[]): void {
    const stale = this.#deadline(node, AGENT_UNREACHABLE);
    const failing = this.#deadline(node, COLLECTOR_ERROR);
    const first: TimedOverlay = failing < stale ? COLLECTOR_ERROR : AGENT_UNREACHABLE;
    const second: TimedOverlay = first === AGENT_UNREACHABLE ? COLLECTOR_ERROR : AGENT_UNREACHABLE;
    for (const overlay of [first, second]) {
      const deadline = overlay === AGENT_UNREACHABLE ? stale : failing;
      if (deadline < now) this.#fire(node, overlay, deadline, out); // false for NaN
    }
  }

  #fire(node: NodeState, overlay: TimedOverlay, at: number, out: Transition[]): void {
    this.#fired++;
    node.overlays |= overlay;
    this.#publish(node, at, out);
  }

  /** Emits a transition for every device whose published status changed. */
  #publish(node: NodeState, at: number, out: Transition[]): void {
    const table = this.#c.table;
    for (const device of node.devices.values()) {
      const status = publishedStatus(device.state, node.overlays, table.nodes);
      if (status === device.published) continue;
      out.push({
        at: formatTimestamp(at),
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

/** Node conditions kept per node, at most (the rules name at most MAX_NODE_CONDITIONS types). */
const MAX_KEPT_CONDITIONS = 2 * MAX_NODE_CONDITIONS;
/** The statuses a condition may match; any other matches nothing. */
const CONDITION_STATUSES: ReadonlySet<string> = new Set(['True', 'False', 'Unknown']);

/** `overlays` with its `node_conditions` bits set from the Node's `conditions` under `table`. */
function withConditions(
  conditions: ReadonlyMap<string, string> | null,
  overlays: number,
  table: ReasonTable,
): number {
  const { conditions: rules, conditioned } = table.nodes;
  let raised = 0;
  if (conditions !== null)
    for (const { bit, type, status } of rules) if (conditions.get(type) === status) raised |= bit;
  return (overlays & ~conditioned) | raised;
}

/** Re-expresses a node mask of `from`'s bits in `to`'s, by name (a reload moves `node_conditions` bits). */
function remapNodeMask(mask: number, from: CompiledNodeReasons, to: CompiledNodeReasons): number {
  if (mask === 0 || from === to) return mask;
  let out = 0;
  for (let rest = mask; rest !== 0; rest &= rest - 1) {
    const i = firstBit(rest);
    if (((1 << i) & from.conditioned) !== 0) continue; // evaluated again from the conditions
    const j = to.names.indexOf(from.names[i] ?? '');
    if (j >= 0 && ((1 << j) & to.conditioned) === 0) out |= 1 << j;
  }
  return out;
}

/** The order in which left-out devices are forgotten to make room (#makeRoom). */
function retireFirst(a: DeviceState, b: DeviceState): number {
  return (
    Number(a.latched !== 0) - Number(b.latched !== 0) ||
    a.listedSample - b.listedSample ||
    (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
  );
}

/**
 * Records why a device is not healthy: the first active reason that holds its state by
 * itself (reasons.ts `holdingMask`), so the cause is always the reason that last held it
 * there. When none does, the cause stays, unless `orActive` (the state just changed, as a
 * failure after 180 s of degradation, which its warnings caused; or an operator clear
 * removed the cause): then the first active reason.
 */
function recordCause(device: DeviceState, table: ReasonTable, orActive: boolean): void {
  const holding = holdingMask(table, device.state, device.active);
  const bit = firstBit(holding !== 0 ? holding : orActive ? device.active : 0);
  if (bit < 0) return;
  device.cause = table.names[bit] ?? device.cause;
  device.causeCritical = ((1 << bit) & table.critical) !== 0;
}

function forgetCause(device: DeviceState): void {
  device.cause = null;
  device.causeCritical = false;
}

function remapDevice(device: DeviceState, from: ReasonTable, to: ReasonTable): void {
  device.active = remapMask(device.active, from, to);
  device.latched = remapMask(device.latched, from, to);
  if (device.eventAt === null) return;
  const at = new Array<number>(32).fill(Number.NEGATIVE_INFINITY);
  device.eventAt.forEach((when, i) => {
    const bit = remapMask(1 << i, from, to);
    if (bit !== 0) at[31 - Math.clz32(bit)] = when;
  });
  device.eventAt = at;
}

/** The bits among `within` whose names are listed. */
function bitsNamed(table: ReasonTable, names: readonly string[], within: number): number {
  let mask = 0;
  table.names.forEach((name, i) => {
    const bit = 1 << i;
    if ((within & bit) !== 0 && names.includes(name)) mask |= bit;
  });
  return mask;
}

function isCritical(table: ReasonTable, name: string): boolean {
  return bitsNamed(table, [name], table.critical) !== 0;
}

/** The identity fields of a seeded device, shaped as an observation (no metrics: it was not sampled). */
function seededObservation(
  seen: Pick<PublishedDevice, 'id' | 'key' | 'resource_id' | 'kind' | 'model'>,
): DeviceObservation {
  return {
    ...LEFT_OUT,
    id: seen.id,
    key: seen.key,
    resource_id: seen.resource_id,
    kind: seen.kind,
    model: seen.model,
    present: true,
  };
}

/** Creates an engine with `rules` (default: the contract's defaults). */
export function createEngine(rules: Rules = DEFAULT_RULES, options: EngineOptions = {}): ReloadableEngine {
  return new Engine(rules, options.reasons ?? REASON_TABLE, options.families ?? FAMILIES);
}

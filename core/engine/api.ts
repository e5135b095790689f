/**
 * The detection engine's public surface (CONTRACT §2). The controller, `npu-fault replay`,
 * the demo and the benchmark all drive the engine through exactly this interface.
 *
 * Time is always an argument (epoch milliseconds): `observe(snapshot, now)` and `tick(now)`.
 * Durations (smoothing, 60 s to degraded, 180 s to failed) run on each node's
 * `collected_at`; staleness (5 s agent-unreachable, 10 s collector-error) runs on `now`,
 * the receiver's clock. Nothing inside the engine reads a clock. Times may carry a
 * sub-millisecond fraction: collected_at is read with `parseTimestamp` (time.ts), never
 * `Date.parse`, which drops every digit after the milliseconds.
 */
import type {
  DeviceStatus,
  PublishedDocument,
  PublishedNode,
  Rules,
  Snapshot,
} from '../../contracts/index.js';
import type { LatchedDevice, NodeSeed } from './seed.js';

export type { DeviceStatus };

/** One change of a device's published status; the JSON line `npu-fault replay` prints. */
export interface Transition {
  /**
   * ISO time of the change: a sample's collected_at, a deadline (last_seen + 5 s, first
   * cached + 10 s), or `now` for a change a cached snapshot or a call caused. Milliseconds
   * (`…:45.123Z`) for a whole millisecond, else microseconds (`…:45.123456Z`): order
   * transitions by `parseTimestamp(at)`, not as text.
   */
  at: string;
  node: string;
  /** Display id (`npu3`, `npu0-1`, `gpu6`). */
  npu: string;
  /** Stable state identity (bus id, uuid); not printed by replay. */
  key: string;
  from: DeviceStatus;
  to: DeviceStatus;
  /**
   * Null exactly when `to` is healthy. Otherwise the reason that holds the device in `to`:
   * the overlay for an `unknown` an overlay causes, else the first active reason (§2.6
   * order) that holds the state on its own (any for unknown/degraded, a critical one for
   * failed), else the reason that moved it there (document.ts `publishedReason`).
   */
  reason: string | null;
}

/** Why a snapshot was not applied. */
export type DropReason = 'duplicate' | 'out-of-order' | 'future' | 'old-boot' | 'too-many-devices';

/** What `observe` did with one snapshot. */
export interface ObserveResult {
  accepted: boolean;
  dropped?: DropReason;
  transitions: Transition[];
}

/** Publisher identity stamped into the document (CONTRACT §3). */
export interface PublisherInfo {
  identity: string;
  term: number;
}

/** The engine. One instance holds every node's device state, keyed by device `key`. */
export interface DetectionEngine {
  /**
   * Applies one validated snapshot received at `now` (epoch ms; the receiver's clock, which
   * staleness runs on). First fires the node's own overlay deadlines strictly before `now`.
   * A `cached` snapshot keeps its original collected_at: it keeps the node alive and starts
   * the collector-error clock at `now`, but advances no device and no duration clock.
   * Costs the snapshot's devices plus at most one deadline-queue push.
   */
  observe(snapshot: Snapshot, now: number): ObserveResult;
  /**
   * Fires the overlay deadlines (agent-unreachable, collector-error) due by `now`,
   * inclusive, each stamped at its deadline. Costs what it pops from the deadline queue
   * (due entries, and entries of nodes seen since they were queued), never every node.
   */
  tick(now: number): Transition[];
  /** Sets the Node's Ready condition overlay (node-not-ready when ready is false). */
  setNodeReady(node: string, ready: boolean, now: number): Transition[];
  /**
   * Sets the Node's conditions (type → status) that the rules' `node_conditions` map to node
   * reasons (CONTRACT §3.7): each entry's reason holds while its type has its status. Types
   * the rules do not name, and statuses other than True/False/Unknown, match nothing.
   */
  setNodeConditions(node: string, conditions: Readonly<Record<string, string>>, now: number): Transition[];
  /** Declares the accelerator nodes that exist (for `unobserved`); optional. */
  setKnownNodes(nodes: Iterable<string>): void;
  /** Operator clear of latched failures on a node, or one device (by display id or key). */
  clear(node: string, device: string | undefined, now: number): Transition[];
  /** Renders the published fault.json document (CONTRACT §3) as of `now`. */
  document(now: number, publisher: PublisherInfo): unknown;
  /** Number of devices with state (for metrics and the memory benchmark). */
  deviceCount(): number;
}

/** Work counters of an engine (cumulative since it was made), for tests and metrics. */
export interface EngineStats {
  /** Nodes with state. */
  nodes: number;
  /** Entries in the deadline queue, superseded ones included (at most 2 live per node). */
  queued: number;
  /** Deadline queue pushes and pops: a tick's cost is its pops (each O(log queued)). */
  pushes: number;
  pops: number;
  /** Overlay deadlines fired (by tick or by observe). */
  fired: number;
  /** Devices forgotten to keep a node within `max_devices_per_node` (engine.ts #makeRoom). */
  retired: number;
}

/**
 * What `createEngine` returns: the DetectionEngine, with the document typed and the rules
 * hot-reloadable. (DetectionEngine itself stays minimal so fakes of it stay small.)
 */
export interface ReloadableEngine extends DetectionEngine {
  /** Renders the published fault.json document (CONTRACT §3) as of `now`; it validates against contracts/published.ts. */
  document(now: number, publisher: PublisherInfo): PublishedDocument;
  /**
   * Hot-reloads the rules. State is kept: reasons are re-mapped by name, and a reason the
   * new rules no longer know is dropped. New thresholds apply from the next sample or tick:
   * a pending overlay deadline becomes last_seen (or first cached) plus the new threshold,
   * and fires at the next tick if that is already past (stamped at that deadline).
   */
  setRules(rules: Rules): void;
  /** The rules in force. */
  rules(): Rules;
  /** Work counters (what a tick cost is measured in: deadline-queue pops, not nodes). */
  stats(): EngineStats;
  /**
   * One node's entry as the document would list it now, or null when the node would not be
   * listed (healthy, or never observed). What the controller answers an agent with.
   */
  nodeEntry(node: string): PublishedNode | null;
  /** Forgets a node (its Node object was deleted): it leaves the document. */
  removeNode(node: string): void;
  /**
   * Seeds state from the published document and the latched failures recorded on Nodes
   * (seed.ts: newest evidence wins; no published failure is forgotten). Returns the
   * published changes it caused, stamped at `now`.
   */
  seed(seeds: Iterable<NodeSeed>, now: number): Transition[];
  /** A node's devices with latched reasons, to record on its Node (sorted by id). */
  latched(node: string): LatchedDevice[];
  /** Device counts by published status and family, and node counts, for metrics. */
  census(): EngineCensus;
  /**
   * Why a node's devices (or one, by display id or key) have their status as of `now`: active
   * reasons with their rules, the window, timers, latches. Reads state only; `not tracked`
   * when the engine has no state for the node or device.
   */
  explain(node: string, device: string | undefined, now: number): Explanation;
}

/** What `census` counts. */
export interface EngineCensus {
  /**
   * Devices by family (the id of the family whose payload listed them; UNKNOWN_FAMILY while
   * seeded and not yet sampled) and published status (zero counts left out).
   */
  devices: { family: string; status: DeviceStatus; count: number }[];
  /** Observed nodes, and those agent-unreachable among them. */
  nodes: number;
  stale: number;
  /** Known accelerator nodes without a snapshot yet. */
  unobserved: number;
}

/**
 * Why a node's devices have their status (`ReloadableEngine.explain`): the engine's own
 * per-device state, which the published document does not carry. Plain JSON (no NaN, no
 * Infinity): times are ISO strings or null, durations milliseconds.
 */
export type Explanation = NodeExplanation | NotTracked;

/** The engine holds no state for the node (or the device) asked about. */
export interface NotTracked {
  tracked: false;
  node: string;
  device: string | null;
  /** One line: what is not tracked and why that may be. */
  message: string;
}

/** A node reason in force, explained. */
export interface ExplainedNodeReason {
  reason: string;
  /** The rule, with the thresholds and severity in force. */
  rule: string;
  /** What the agent's check saw (a node problem); empty for the others. */
  message: string;
}

/** One node's explanation. */
export interface NodeExplanation {
  tracked: true;
  node: string;
  /** The `now` it was computed at (ISO). */
  now: string;
  /** Receiver time of the newest accepted snapshot (null: seeded only, never observed). */
  last_seen: string | null;
  /** collected_at of the newest applied (fresh) snapshot: the duration clock. */
  last_collected_at: string | null;
  /** Admission: the current boot id, the newest accepted seq, fresh samples applied. */
  boot_id: string | null;
  seq: number | null;
  samples: number;
  /** Node reasons in force (CONTRACT §3.7), in publication order: the node entry's `reasons`. */
  overlays: string[];
  /** Each of `overlays` with its rule and, for a node problem the agent reports, what its check saw. */
  node_reasons: ExplainedNodeReason[];
  /**
   * Not listed by the last document rendered although not healthy (CONTRACT §5.3): summarised
   * in an ingest outage (`ingest-outage`) or cut to fit the byte budget (`size-budget`);
   * readers then take it as unknown. null when it was listed, or is healthy.
   */
  withheld: 'ingest-outage' | 'size-budget' | null;
  /** Overlay deadlines pending (agent-unreachable, collector-error), on the receiver clock. */
  timers: ExplainedTimer[];
  /** The devices (all of them, or the one asked for), sorted by id. */
  devices: DeviceExplanation[];
}

/** One active reason and the rule that raised it. */
export interface ExplainedReason {
  name: string;
  severity: 'critical' | 'warning';
  /** Latched: stays until a new boot with reset counters or an operator clear. */
  latched: boolean;
  /** The rule, with the thresholds in force. */
  rule: string;
}

/** A timer running: what fires, when, and on which clock. */
export interface ExplainedTimer {
  /** `degraded`, `failed`, `agent-unreachable`, `collector-error`. */
  name: string;
  from: DeviceStatus | null;
  to: DeviceStatus;
  /** When it fires (ISO). */
  at: string;
  /**
   * Time left: on the sample clock (collected_at, from the newest sample) for the state
   * machine's timers, which fire with the first sample at or after `at`; on the receiver
   * clock (from `now`) for the overlays. 0 when due.
   */
  in_ms: number;
  clock: 'collected_at' | 'receiver';
  /** What must hold for it to fire. */
  condition: string;
}

/** The smoothing window of one device (the last `size` samples). */
export interface ExplainedWindow {
  size: number;
  /** Samples of the device so far (the window's clock). */
  samples: number;
  high_temp: {
    threshold_c: number;
    min_samples: number;
    /** Above the threshold, oldest first, one per sample in the window. */
    hot: boolean[];
    count: number;
  };
  /** Event reasons still inside the window: samples since the event (0: the newest). */
  events: { name: string; samples_ago: number }[];
  ecc_baseline: number | null;
  ecc_uncorrectable_baseline: number | null;
}

/** One device's explanation. */
export interface DeviceExplanation {
  id: string;
  key: string;
  resource_id: string;
  model: string;
  /** What is published, since when, and with which reason. */
  status: DeviceStatus;
  status_since: string;
  reason: string | null;
  /** The state machine's own state (differs from `status` while an overlay holds). */
  state: DeviceStatus;
  state_since: string;
  /** The rule that decided the state (or the overlay that overrides it). */
  decided_by: string;
  active: ExplainedReason[];
  /** Latest readings. */
  temperature_c: number | null;
  power_w: number | null;
  ecc_errors: number | null;
  pcie_link_status: 'up' | 'down' | null;
  window: ExplainedWindow;
  timers: ExplainedTimer[];
  /** Clean samples in a row, and how many recovery needs (degraded/failed → healthy). */
  clean_samples: number;
  recover_after_samples: number;
  latched: string[];
  /** The command that clears the latches; null when nothing is latched. */
  clear: string | null;
  /** The pods holding it (`namespace/name`), as the agent last reported (CONTRACT §1.9); null: not known. */
  pods: string[] | null;
}

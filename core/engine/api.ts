/**
 * The detection engine's public surface (CONTRACT §2). The controller, `npu-fault replay`,
 * the demo and the benchmark all drive the engine through exactly this interface.
 *
 * Time is always an argument (epoch milliseconds): `observe(snapshot, now)` and `tick(now)`.
 * Durations (smoothing, 60 s to degraded, 180 s to failed) run on each node's
 * `collected_at`; staleness (5 s agent-unreachable, 10 s collector-error) runs on `now`,
 * the receiver's clock. Nothing inside the engine reads a clock.
 */
import type { PublishedDocument } from '../../contracts/published.js';
import type { Rules } from '../../contracts/rules.js';
import type { Snapshot } from '../../contracts/snapshot.js';

/** A device's published status. */
export type DeviceStatus = 'unknown' | 'healthy' | 'degraded' | 'failed';

/** One change of a device's published status; the JSON line `npu-fault replay` prints. */
export interface Transition {
  /** ISO time of the change (a sample's collected_at, or last_seen + 5 s for staleness). */
  at: string;
  node: string;
  /** Display id (`npu3`, `npu0-1`, `gpu6`). */
  npu: string;
  /** Stable state identity (bus id, uuid); not printed by replay. */
  key: string;
  from: DeviceStatus;
  to: DeviceStatus;
  /** The first active reason in CONTRACT §2.6 order, or null when none is active. */
  reason: string | null;
}

/** Why a snapshot was not applied. */
export type DropReason = 'duplicate' | 'out-of-order' | 'future' | 'old-boot';

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
  /** Applies one validated snapshot received at `now` (epoch ms). */
  observe(snapshot: Snapshot, now: number): ObserveResult;
  /** Advances overlays that depend only on time (agent-unreachable, collector-error). */
  tick(now: number): Transition[];
  /** Sets the Node's Ready condition overlay (node-not-ready when ready is false). */
  setNodeReady(node: string, ready: boolean, now: number): Transition[];
  /** Declares the accelerator nodes that exist (for `unobserved`); optional. */
  setKnownNodes(nodes: Iterable<string>): void;
  /** Operator clear of latched failures on a node, or one device (by display id or key). */
  clear(node: string, device: string | undefined, now: number): Transition[];
  /** Renders the published fault.json document (CONTRACT §3) as of `now`. */
  document(now: number, publisher: PublisherInfo): unknown;
  /** Number of devices with state (for metrics and the memory benchmark). */
  deviceCount(): number;
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
   * new rules no longer know is dropped. New thresholds apply from the next sample or tick.
   */
  setRules(rules: Rules): void;
  /** The rules in force. */
  rules(): Rules;
}

/**
 * The controller's engine and everything that must happen around each call: transitions go
 * to the listeners (metrics, Events, the early write, Node status), accepted snapshots to the
 * optional observation journal (replayable with `npu-fault replay`), and the clock is read
 * here, once per call, so the engine itself stays pure.
 *
 * Every replica runs one: followers apply the same stream as the leader (hot standby).
 */
import type { PublishedDocument, PublishedNode, Rules, Snapshot } from '../contracts/index.js';
import type {
  DropReason,
  LatchedDevice,
  NodeSeed,
  PublisherInfo,
  ReloadableEngine,
  Transition,
} from '../core/engine/index.js';
import { normalise } from '../core/normalise.js';
import type { Clock } from '../platform/index.js';

/** What one accepted or dropped snapshot came to. */
export interface AcceptResult {
  node: string;
  accepted: boolean;
  dropped?: DropReason;
}

/** Receives every batch of transitions, with what caused it. */
export type TransitionListener = (transitions: readonly Transition[], cause: TransitionCause) => void;

/** What made the engine move. */
export type TransitionCause =
  'observation' | 'tick' | 'node-ready' | 'node-conditions' | 'clear' | 'seed' | 'rules';

/** Where accepted snapshots are written, in arrival order (one JSON line each). */
export interface ObservationJournal {
  /** The lines of one accepted batch, in order: one write for the batch, not one per line. */
  append(lines: readonly string[]): void;
}

/** The engine's view of one node, for the Node status writer and the observation answer. */
export interface HostNodeView {
  observed: boolean;
  entry: PublishedNode | null;
  latched: LatchedDevice[];
}

/**
 * Where a snapshot comes from: a node's own agent (through the ingest function), or a source
 * inside the controller that speaks for agentless nodes (controller/mindcluster). By the
 * caller, never by a field of the snapshot, so a posted snapshot cannot pass for a synthetic one.
 */
export type SnapshotOrigin = 'agent' | 'mindcluster';

/** Adds what another source knows of the node to an agent's snapshot (controller/mindcluster). */
export type SnapshotMerge = (snapshot: Snapshot) => Snapshot;

/** The engine host. */
export class EngineHost {
  readonly #engine: ReloadableEngine;
  readonly #clock: Clock;
  readonly #listeners: TransitionListener[] = [];
  readonly #observed = new Set<string>();
  /**
   * Agent nodes: their own agent's snapshots were accepted here, or they were seeded with
   * agent-keyed devices (a restarted replica then agrees with the leader, whose engine holds
   * the same): a synthetic (MindCluster) snapshot no longer applies.
   */
  readonly #agentNodes = new Set<string>();
  #merge: SnapshotMerge | undefined;
  /** What NodeSync last said of each node (Ready, conditions): applied again after a hand-over. */
  readonly #notReady = new Set<string>();
  readonly #conditions = new Map<string, Readonly<Record<string, string>>>();
  #journal: ObservationJournal | undefined;

  constructor(engine: ReloadableEngine, clock: Clock, journal?: ObservationJournal) {
    this.#engine = engine;
    this.#clock = clock;
    this.#journal = journal;
  }

  /** Adds a listener of every transition. */
  onTransitions(listener: TransitionListener): void {
    this.#listeners.push(listener);
  }

  /**
   * Merges another source's view into every agent snapshot before the engine and the journal
   * see it (so a replay of the journal reproduces the merged stream).
   */
  setMerge(merge: SnapshotMerge): void {
    this.#merge = merge;
  }

  /** Whether the node is an agent node (an accepted agent snapshot, or agent-keyed devices seeded). */
  isAgentNode(node: string): boolean {
    return this.#agentNodes.has(node);
  }

  /** Observes validated snapshots at the receiver's clock, in order. */
  accept(snapshots: readonly Snapshot[], origin: SnapshotOrigin = 'agent'): AcceptResult[] {
    const now = this.#clock.now();
    const results: AcceptResult[] = [];
    const transitions: Transition[] = [];
    // Serialised only when there is a journal: without one, accepting costs nothing more.
    const lines: string[] | undefined = this.#journal ? [] : undefined;
    for (const received of snapshots) {
      const synthetic = origin !== 'agent';
      // The agent took over: a synthetic snapshot would flip the node back to the other boot.
      if (synthetic && this.#agentNodes.has(received.node)) {
        results.push({ node: received.node, accepted: false });
        continue;
      }
      const snapshot = !synthetic && this.#merge ? this.#merge(received) : received;
      if (!synthetic && this.#observed.has(snapshot.node) && !this.#agentNodes.has(snapshot.node))
        this.#emit(this.#handOver(snapshot, now), 'seed');
      const result = this.#engine.observe(snapshot, now);
      if (result.accepted) {
        this.#observed.add(snapshot.node);
        if (!synthetic) this.#agentNodes.add(snapshot.node);
        lines?.push(JSON.stringify(snapshot));
        for (const t of result.transitions) transitions.push(t);
        results.push({ node: snapshot.node, accepted: true });
      } else {
        results.push({
          node: snapshot.node,
          accepted: false,
          ...(result.dropped ? { dropped: result.dropped } : {}),
        });
      }
    }
    if (lines && lines.length > 0) this.#journal?.append(lines);
    this.#emit(transitions, 'observation');
    return results;
  }

  /**
   * A node reported by MindCluster (synthetic snapshots) gets its own agent: MindCluster names
   * devices by index (`npu4`), the agent by PCI address, so the engine's records would be left
   * out by the agent's first sample and read as device-missing. Its failed and degraded
   * devices and latched failures are carried over to the agent's keys (matched by resource id,
   * `Ascend910-4`) by seeding, as after a restart: nothing held is lost, and nothing is
   * invented. A device the agent does not list keeps its key and goes device-missing.
   */
  #handOver(snapshot: Snapshot, now: number): Transition[] {
    const node = snapshot.node;
    const keyOf = new Map(normalise(snapshot).map((d) => [d.resource_id, d.key]));
    const entry = this.#engine.nodeEntry(node);
    const latched = this.#engine.latched(node);
    this.#engine.removeNode(node);
    const rekey = <T extends { key: string; resource_id: string }>(d: T): T => ({
      ...d,
      key: keyOf.get(d.resource_id) ?? d.key,
    });
    const seed: NodeSeed = {
      node,
      ...(entry ? { entry: { ...entry, npus: entry.npus.map(rekey) } } : {}),
      latched: latched.map(rekey),
    };
    const out = this.#engine.seed([seed], now);
    // The node's own facts (Ready, conditions) went with removeNode: the same again.
    const conditions = this.#conditions.get(node);
    if (conditions) out.push(...this.#engine.setNodeConditions(node, conditions, now));
    if (this.#notReady.has(node)) out.push(...this.#engine.setNodeReady(node, false, now));
    return out;
  }

  /** Fires the overlay deadlines due now. */
  tick(): void {
    this.#emit(this.#engine.tick(this.#clock.now()), 'tick');
  }

  setNodeReady(node: string, ready: boolean): void {
    if (ready) this.#notReady.delete(node);
    else this.#notReady.add(node);
    this.#emit(this.#engine.setNodeReady(node, ready, this.#clock.now()), 'node-ready');
  }

  /** The rules in force. */
  rules(): Rules {
    return this.#engine.rules();
  }

  /** The Node's conditions the rules name (type → status): their node reasons (`node_conditions`). */
  setNodeConditions(node: string, conditions: Readonly<Record<string, string>>): void {
    if (Object.keys(conditions).length === 0) this.#conditions.delete(node);
    else this.#conditions.set(node, conditions);
    this.#emit(this.#engine.setNodeConditions(node, conditions, this.#clock.now()), 'node-conditions');
  }

  clear(node: string, device: string | undefined): void {
    this.#emit(this.#engine.clear(node, device, this.#clock.now()), 'clear');
  }

  removeNode(node: string): void {
    this.#engine.removeNode(node);
    this.#observed.delete(node);
    this.#agentNodes.delete(node);
    this.#notReady.delete(node);
    this.#conditions.delete(node);
  }

  setKnownNodes(nodes: Iterable<string>): void {
    this.#engine.setKnownNodes(nodes);
  }

  setRules(rules: Rules): void {
    this.#engine.setRules(rules);
    // Shorter thresholds may make deadlines due at once; node reasons the reload raised or
    // lifted (`node_conditions`) come with this tick.
    this.#emit(this.#engine.tick(this.#clock.now()), 'rules');
  }

  seed(seeds: Iterable<NodeSeed>): Transition[] {
    const list = [...seeds];
    for (const seed of list) if (hasAgentKeys(seed)) this.#agentNodes.add(seed.node);
    const transitions = this.#engine.seed(list, this.#clock.now());
    this.#emit(transitions, 'seed');
    return transitions;
  }

  /** The document as of now. */
  document(publisher: PublisherInfo): PublishedDocument {
    return this.#engine.document(this.#clock.now(), publisher);
  }

  view(node: string): HostNodeView {
    return {
      observed: this.#observed.has(node),
      entry: this.#engine.nodeEntry(node),
      latched: this.#engine.latched(node),
    };
  }

  entry(node: string): PublishedNode | null {
    return this.#engine.nodeEntry(node);
  }

  get engine(): ReloadableEngine {
    return this.#engine;
  }

  #emit(transitions: readonly Transition[], cause: TransitionCause): void {
    if (transitions.length === 0) return;
    for (const listener of this.#listeners) listener(transitions, cause);
  }
}

/**
 * Whether a seed holds a device keyed as an agent keys it: by its PCI address, so the key
 * differs from the display id (`npu4`). A synthetic (MindCluster) snapshot carries no bus id,
 * so its devices are keyed by id; an agent that reads no bus id looks the same (then agentless).
 */
function hasAgentKeys(seed: NodeSeed): boolean {
  const devices = [...(seed.entry?.npus ?? []), ...(seed.latched ?? [])];
  return devices.some((device) => device.key !== device.id);
}

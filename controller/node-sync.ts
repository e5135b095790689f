/**
 * Node watch → engine: which nodes are accelerator nodes (`unobserved`), their Ready
 * condition (the node-not-ready overlay), the conditions the rules' `node_conditions` name
 * (their node reasons), deleted Nodes (they leave the document) and the
 * operator's `npu-fault.io/clear` annotation. Every replica applies these to its own engine,
 * so followers stay in step with the leader; the leader also writes back (node-status).
 */
import { parseClear } from '../contracts/index.js';
import type { Logger } from '../platform/index.js';
import type { EngineHost } from './engine-host.js';
import { sameConditions, type CachedNode, type NodeChange } from './watch/index.js';

/** What node-sync reports besides changing the engine. */
export interface NodeSyncEvents {
  /** A Node changed in a way the leader may need to write back. */
  dirty(node: string): void;
  /** A clear annotation could not be read (one line). */
  invalidClear(node: string, message: string): void;
}

/** Applies Node changes to the engine; remembers which clear requests it applied. */
export class NodeSync {
  readonly #host: EngineHost;
  readonly #log: Logger;
  readonly #events: NodeSyncEvents;
  readonly #accelerators = new Set<string>();
  readonly #appliedClear = new Map<string, string>();
  /** A clear value already refused, per node (reported once, not at every Node update). */
  readonly #refusedClear = new Map<string, string>();
  /** When each applied clear was applied (its removal waits for a document written after it). */
  readonly #clearedAt = new Map<string, number>();
  /**
   * Clears wait until the engine is seeded: applied to an engine that does not know the
   * node's devices yet, a clear would do nothing, be marked applied, and the seed would
   * then latch the failure again.
   */
  #clearsEnabled = false;
  readonly #now: () => number;

  constructor(host: EngineHost, log: Logger, events: NodeSyncEvents, now: () => number) {
    this.#host = host;
    this.#log = log;
    this.#events = events;
    this.#now = now;
  }

  /** The engine is seeded: apply the clear annotations of the Nodes as they are now. */
  enableClears(nodes: Iterable<CachedNode>): void {
    this.#clearsEnabled = true;
    for (const node of nodes) {
      if (!node.accelerator) continue;
      this.#applyClear(node);
      this.#events.dirty(node.name);
    }
  }

  /** The node watch's onChange. */
  onChange(change: NodeChange): void {
    const { name, previous, current } = change;
    if (current === undefined) {
      // A deleted Node leaves the document, with its state.
      this.#accelerators.delete(name);
      this.#host.removeNode(name);
      this.#host.setKnownNodes(this.#accelerators);
      this.#forgetClear(name);
      this.#log.info({ node: name }, 'node deleted');
      return;
    }
    if (!current.accelerator) {
      // A device plugin that dies takes its resource out of capacity: the node stops being
      // expected (`unobserved`), but what its agent reported, failures above all, stays.
      if (this.#accelerators.delete(name)) {
        this.#host.setKnownNodes(this.#accelerators);
        this.#log.info({ node: name }, 'no longer lists accelerators; its reported state is kept');
      }
      return;
    }
    if (!this.#accelerators.has(name)) {
      this.#accelerators.add(name);
      this.#host.setKnownNodes(this.#accelerators);
    }
    if (previous?.ready !== current.ready || !previous?.accelerator) {
      // Absent Ready (a Node just registered) is no overlay: only False or Unknown is.
      this.#host.setNodeReady(name, current.ready !== false);
    }
    if (!previous?.accelerator || !sameConditions(previous.conditions, current.conditions)) {
      this.#host.setNodeConditions(name, current.conditions ?? {});
    }
    this.#applyClear(current);
    this.#events.dirty(name);
  }

  /** The clear annotation value last applied on `node`, while it is still on the Node. */
  appliedClear(node: string): string | undefined {
    return this.#appliedClear.get(node);
  }

  /** Nodes with an applied clear annotation still on them. */
  pendingClears(): Iterable<string> {
    return this.#appliedClear.keys();
  }

  /** When the clear on `node` was applied (clock ms), while it is still on the Node. */
  clearedAt(node: string): number | undefined {
    return this.#clearedAt.get(node);
  }

  #forgetClear(name: string): void {
    this.#appliedClear.delete(name);
    this.#refusedClear.delete(name);
    this.#clearedAt.delete(name);
  }

  /** Accelerator nodes known now. */
  acceleratorNodes(): ReadonlySet<string> {
    return this.#accelerators;
  }

  #applyClear(node: CachedNode): void {
    const value = node.clear;
    if (value === undefined) {
      this.#forgetClear(node.name);
      return;
    }
    if (!this.#clearsEnabled) return;
    if (this.#appliedClear.get(node.name) === value || this.#refusedClear.get(node.name) === value) return;
    const request = parseClear(value);
    if ('error' in request) {
      this.#refusedClear.set(node.name, value);
      this.#events.invalidClear(node.name, request.error);
      return;
    }
    this.#refusedClear.delete(node.name);
    if (request.all) this.#host.clear(node.name, undefined);
    else for (const device of request.devices) this.#host.clear(node.name, device);
    this.#appliedClear.set(node.name, value);
    this.#clearedAt.set(node.name, this.#now());
    this.#log.info({ node: node.name, clear: value }, 'latched failures cleared by annotation');
  }
}

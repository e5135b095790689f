/**
 * Node watch → engine: which nodes are accelerator nodes (`unobserved`), their Ready
 * condition (the node-not-ready overlay), deleted Nodes (they leave the document) and the
 * operator's `npu-fault.io/clear` annotation. Every replica applies these to its own engine,
 * so followers stay in step with the leader; the leader also writes back (node-status).
 */
import type { Logger } from '../platform/index.js';
import type { EngineHost } from './engine-host.js';
import { parseClear } from './node-status/index.js';
import type { CachedNode, NodeChange } from './watch/index.js';

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

  constructor(host: EngineHost, log: Logger, events: NodeSyncEvents) {
    this.#host = host;
    this.#log = log;
    this.#events = events;
  }

  /** The node watch's onChange. */
  onChange(change: NodeChange): void {
    const { name, previous, current } = change;
    if (current === undefined || !current.accelerator) {
      if (this.#accelerators.delete(name) || previous?.accelerator) {
        this.#host.removeNode(name);
        this.#host.setKnownNodes(this.#accelerators);
        this.#log.info({ node: name }, current ? 'no longer an accelerator node' : 'node deleted');
      }
      this.#appliedClear.delete(name);
      this.#refusedClear.delete(name);
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
    this.#applyClear(current);
    this.#events.dirty(name);
  }

  /** The clear annotation value last applied on `node`, while it is still on the Node. */
  appliedClear(node: string): string | undefined {
    return this.#appliedClear.get(node);
  }

  /** Accelerator nodes known now. */
  acceleratorNodes(): ReadonlySet<string> {
    return this.#accelerators;
  }

  #applyClear(node: CachedNode): void {
    const value = node.clear;
    if (value === undefined) {
      this.#appliedClear.delete(node.name);
      this.#refusedClear.delete(node.name);
      return;
    }
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
    this.#log.info({ node: node.name, clear: value }, 'latched failures cleared by annotation');
  }
}

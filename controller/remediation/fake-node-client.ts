/** An in-memory RemediationNodeClient with the API's resourceVersion check (for unit tests). */
import { K8sApiError } from '../../platform/index.js';
import type { NodeChange, NodeState, RemediationNodeClient } from './node-client.js';

/** The fake: Nodes by name; `writes` lists every successful update. */
export class FakeRemediationNodeClient implements RemediationNodeClient {
  readonly nodes = new Map<string, NodeState>();
  readonly writes: { node: string; change: NodeChange }[] = [];
  #version = 1;

  /** Adds or replaces a Node. */
  put(node: string, state: Partial<Omit<NodeState, 'resourceVersion'>> = {}): NodeState {
    const stored: NodeState = {
      resourceVersion: String(this.#version++),
      unschedulable: state.unschedulable ?? false,
      taints: state.taints ?? [],
      annotations: state.annotations ?? {},
    };
    this.nodes.set(node, stored);
    return stored;
  }

  get(node: string): Promise<NodeState | undefined> {
    const found = this.nodes.get(node);
    return Promise.resolve(found && structuredClone(found));
  }

  update(node: string, resourceVersion: string, change: NodeChange): Promise<void> {
    const found = this.nodes.get(node);
    if (!found) return Promise.reject(new K8sApiError(404, 'NotFound'));
    if (found.resourceVersion !== resourceVersion) return Promise.reject(new K8sApiError(409, 'Conflict'));
    const annotations = { ...found.annotations };
    for (const [key, value] of Object.entries(change.annotations ?? {})) {
      if (value === null) delete annotations[key];
      else annotations[key] = value;
    }
    this.nodes.set(node, {
      resourceVersion: String(this.#version++),
      unschedulable: change.unschedulable ?? found.unschedulable,
      taints: change.taints ?? found.taints,
      annotations,
    });
    this.writes.push({ node, change });
    return Promise.resolve();
  }
}

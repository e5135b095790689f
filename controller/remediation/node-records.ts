/**
 * Self-healing's record keeping on Nodes (the `npu-fault.io/remediation` annotation, format in
 * contracts/): a write goes ahead only if the Node still carries the record the decision saw,
 * and carries the Node's resourceVersion, so a person's uncordon, a concurrent edit or a stale
 * cache makes it a no-op or a 409, and the next pass decides again.
 */
import {
  REMEDIATION_ANNOTATION,
  decodeNodeRecord,
  encodeNodeRecord,
  type NodeRecord,
} from '../../contracts/index.js';
import type { NodeChange, NodeState, RemediationNodeClient } from './node-client.js';

/** A write of the record (null: removes it), with the other Node fields it changes. */
export interface RecordChange extends Omit<NodeChange, 'annotations'> {
  record: NodeRecord | null;
}

/** Reads and conditional writes of the records on Nodes. */
export interface NodeRecords {
  /** Re-reads the Node; its state if its record is still `expected` (the decision's), else undefined. */
  unchanged(node: string, expected: string | undefined, signal: AbortSignal): Promise<NodeState | undefined>;
  /** The Node and the record it carries now (undefined when absent or invalid); undefined without the Node. */
  read(
    node: string,
    signal: AbortSignal,
  ): Promise<{ state: NodeState; record: NodeRecord | undefined } | undefined>;
  /** Applies `change` if the Node is still at `resourceVersion` (409 otherwise). */
  write(node: string, resourceVersion: string, change: RecordChange, signal: AbortSignal): Promise<void>;
}

/** The record keeping on `client`. */
export function createNodeRecords(client: RemediationNodeClient): NodeRecords {
  return {
    async unchanged(node, expected, signal) {
      const state = await client.get(node, signal);
      if (!state || state.annotations[REMEDIATION_ANNOTATION] !== expected) return undefined;
      return state;
    },
    async read(node, signal) {
      const state = await client.get(node, signal);
      if (!state) return undefined;
      const stored = state.annotations[REMEDIATION_ANNOTATION];
      return { state, record: stored === undefined ? undefined : decodeNodeRecord(stored).value };
    },
    async write(node, resourceVersion, { record, ...fields }, signal) {
      const annotations = { [REMEDIATION_ANNOTATION]: record === null ? null : encodeNodeRecord(record) };
      await client.update(node, resourceVersion, { ...fields, annotations }, signal);
    },
  };
}

/**
 * What self-healing writes on Nodes: cordon, taint, its record, and the reverse. Every write
 * carries the resourceVersion it was computed from (a JSON merge patch with
 * `metadata.resourceVersion` fails with 409 when the Node changed meanwhile), so a person's
 * uncordon or another writer's taint is never overwritten: the next pass decides again.
 * client-node implementation here, an in-memory fake in fake-node-client.ts.
 */
import * as k8s from '@kubernetes/client-node';
import { K8sApiError } from '../../platform/index.js';
import { requestOptions } from '../../platform/k8s/index.js';

/** A Node taint. */
export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

/** The parts of a Node a remediation write computes from. */
export interface NodeState {
  resourceVersion: string;
  unschedulable: boolean;
  taints: Taint[];
  annotations: Record<string, string>;
}

/** A change to a Node; unset fields are left alone; an annotation set to null is removed. */
export interface NodeChange {
  unschedulable?: boolean;
  taints?: Taint[];
  annotations?: Record<string, string | null>;
}

/** Node reads and conditional writes. Failures throw K8sApiError when the API answered. */
export interface RemediationNodeClient {
  /** The Node, or undefined when it does not exist. */
  get(node: string, signal: AbortSignal): Promise<NodeState | undefined>;
  /** Applies `change` if the Node is still at `resourceVersion` (409 otherwise). */
  update(node: string, resourceVersion: string, change: NodeChange, signal: AbortSignal): Promise<void>;
}

/** The client on client-node's CoreV1Api. */
export function createKubeRemediationNodeClient(api: k8s.CoreV1Api): RemediationNodeClient {
  return {
    async get(node, signal) {
      try {
        const found = await api.readNode({ name: node }, requestOptions({ signal }));
        return {
          resourceVersion: found.metadata?.resourceVersion ?? '',
          unschedulable: found.spec?.unschedulable === true,
          taints: (found.spec?.taints ?? []).map((taint) => ({
            key: taint.key,
            ...(taint.value !== undefined ? { value: taint.value } : {}),
            effect: taint.effect,
            ...(taint.timeAdded !== undefined ? { timeAdded: new Date(taint.timeAdded).toISOString() } : {}),
          })),
          annotations: { ...found.metadata?.annotations },
        };
      } catch (error) {
        const failure = K8sApiError.from(error);
        if (failure?.apiStatus === 404) return undefined;
        throw failure ?? error;
      }
    },
    async update(node, resourceVersion, change, signal) {
      const spec: Record<string, unknown> = {};
      if (change.unschedulable !== undefined) spec.unschedulable = change.unschedulable ? true : null;
      if (change.taints !== undefined) spec.taints = change.taints.length > 0 ? change.taints : null;
      const body = {
        metadata: { resourceVersion, ...(change.annotations ? { annotations: change.annotations } : {}) },
        ...(Object.keys(spec).length > 0 ? { spec } : {}),
      };
      try {
        await api.patchNode(
          { name: node, body },
          requestOptions({ signal, patch: 'application/merge-patch+json', discardAnswer: true }),
        );
      } catch (error) {
        throw K8sApiError.from(error) ?? error;
      }
    },
  };
}

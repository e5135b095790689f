/**
 * What node-status writes through: patches of Nodes and Events. Interfaces with a
 * client-node implementation here and an in-memory fake in fake-clients.ts.
 */
import * as k8s from '@kubernetes/client-node';
import { K8sApiError } from '../../platform/index.js';
import { requestOptions } from '../../platform/k8s/index.js';

/** A Node condition as written (RFC 3339 times). */
export interface NodeConditionPatch {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastHeartbeatTime: string;
  /** Left out when the status did not change (the merge keeps the previous one). */
  lastTransitionTime?: string;
}

/** Node writes: one condition (strategic merge on `type`), annotations (null removes one). */
export interface NodeClient {
  patchCondition(node: string, condition: NodeConditionPatch, signal: AbortSignal): Promise<void>;
  patchAnnotations(
    node: string,
    annotations: Record<string, string | null>,
    signal: AbortSignal,
  ): Promise<void>;
  /**
   * Removes annotation `key` only while it still holds `value` (a JSON patch `test` then
   * `remove`): a value written since, such as an operator's newer clear, stays. Resolves
   * false when the value had changed (or the annotation was gone).
   */
  removeAnnotationIf(node: string, key: string, value: string, signal: AbortSignal): Promise<boolean>;
}

/** A core/v1 Event as the recorder writes it. */
export interface EventBody {
  name: string;
  namespace: string;
  involvedObject: { apiVersion: string; kind: string; name: string; namespace?: string; uid?: string };
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  source: { component: string; host?: string };
  reportingComponent: string;
  reportingInstance: string;
}

/** Event writes: create one, or bump an existing one's count (aggregation). */
export interface EventClient {
  create(event: EventBody, signal: AbortSignal): Promise<void>;
  bump(
    namespace: string,
    name: string,
    count: number,
    lastTimestamp: string,
    signal: AbortSignal,
  ): Promise<void>;
}

/** The NodeClient on client-node's CoreV1Api. */
export function createKubeNodeClient(api: k8s.CoreV1Api): NodeClient {
  return {
    async patchCondition(node, condition, signal) {
      try {
        await api.patchNodeStatus(
          { name: node, body: { status: { conditions: [condition] } } },
          requestOptions({ signal, patch: 'application/strategic-merge-patch+json', discardAnswer: true }),
        );
      } catch (error) {
        throw K8sApiError.from(error) ?? error;
      }
    },
    async patchAnnotations(node, annotations, signal) {
      try {
        await api.patchNode(
          { name: node, body: { metadata: { annotations } } },
          requestOptions({ signal, patch: 'application/merge-patch+json', discardAnswer: true }),
        );
      } catch (error) {
        throw K8sApiError.from(error) ?? error;
      }
    },
    async removeAnnotationIf(node, key, value, signal) {
      const path = annotationPointer(key);
      try {
        await api.patchNode(
          {
            name: node,
            body: [
              { op: 'test', path, value },
              { op: 'remove', path },
            ],
          },
          requestOptions({ signal, patch: 'application/json-patch+json', discardAnswer: true }),
        );
        return true;
      } catch (error) {
        const failure = K8sApiError.from(error);
        // A failed `test` (or a missing path) is 422: the value changed; nothing removed.
        if (failure?.apiStatus === 422) return false;
        throw failure ?? error;
      }
    },
  };
}

/** The JSON pointer of annotation `key` (RFC 6901: `~` → `~0`, `/` → `~1`). */
export function annotationPointer(key: string): string {
  return `/metadata/annotations/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

/** The EventClient on client-node's CoreV1Api (core/v1 Events: count and lastTimestamp aggregate). */
export function createKubeEventClient(api: k8s.CoreV1Api): EventClient {
  return {
    async create(event, signal) {
      const { name, namespace, ...rest } = event;
      try {
        await api.createNamespacedEvent(
          {
            namespace,
            body: {
              metadata: { name, namespace },
              ...rest,
              firstTimestamp: new Date(rest.firstTimestamp),
              lastTimestamp: new Date(rest.lastTimestamp),
            },
          },
          requestOptions({ signal, discardAnswer: true }),
        );
      } catch (error) {
        throw K8sApiError.from(error) ?? error;
      }
    },
    async bump(namespace, name, count, lastTimestamp, signal) {
      try {
        await api.patchNamespacedEvent(
          { name, namespace, body: { count, lastTimestamp } },
          requestOptions({ signal, patch: 'application/merge-patch+json', discardAnswer: true }),
        );
      } catch (error) {
        throw K8sApiError.from(error) ?? error;
      }
    },
  };
}

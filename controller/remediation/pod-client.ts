/**
 * What the drain reads and writes of Pods: the pods on a node (reduced to what the drain
 * decides on), evictions through policy/v1 Eviction, and a delete for `forceDeleteAfter`.
 * An interface with a client-node implementation here and an in-memory fake in
 * fake-pod-client.ts. API failures are thrown as K8sApiError.
 */
import * as k8s from '@kubernetes/client-node';
import { K8sApiError, isNotFound } from '../../platform/index.js';
import { LIST_PAGE_SIZE, requestOptions } from '../../platform/k8s/index.js';
import { DRA_CLAIM_RESOURCE } from '../../contracts/index.js';

/** The annotation the kubelet puts on the API copy of a static pod. */
export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

/** A pod as the drain sees it. */
export interface PodSummary {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** `Pending`, `Running`, `Succeeded`, `Failed`, `Unknown` (empty when not reported yet). */
  readonly phase: string;
  /** Its deletionTimestamp is set: it is already going. */
  readonly terminating: boolean;
  /** Its controller (ownerReference with controller: true) is a DaemonSet. */
  readonly daemonSet: boolean;
  /** The API copy of a static pod (cannot be evicted; the kubelet owns it). */
  readonly mirror: boolean;
  /** Its annotations (the device plugin's allocation is read from them). */
  readonly annotations: Readonly<Record<string, string>>;
  /** Names of its emptyDir volumes (their data goes with the pod: reported, not a reason to keep it). */
  readonly emptyDirVolumes: readonly string[];
  /** Extended resources its containers ask for (`huawei.com/Ascend910`, `nvidia.com/gpu`). */
  readonly deviceResources: readonly string[];
}

/** What an eviction did. */
export type EvictionResult =
  /** Accepted: the pod is being deleted (with its grace period). */
  | { readonly result: 'evicted' }
  /** The pod (of that uid) no longer exists. */
  | { readonly result: 'gone' }
  /** Refused (429): a PodDisruptionBudget does not allow it now; `message` says which. */
  | { readonly result: 'blocked'; readonly message: string };

/** The drain's narrow view of Pods. */
export interface PodClient {
  /** Every pod bound to `node` (all namespaces). */
  list(node: string, signal: AbortSignal): Promise<PodSummary[]>;
  /**
   * Evicts `namespace/name`; with `uid`, only that incarnation (a pod replaced under the same
   * name is not touched and the answer is `gone`). Other failures throw a K8sApiError.
   */
  evict(
    namespace: string,
    name: string,
    uid: string | undefined,
    signal: AbortSignal,
  ): Promise<EvictionResult>;
  /** The pod, or null when it does not exist. */
  get(namespace: string, name: string, signal: AbortSignal): Promise<PodSummary | null>;
  /** Deletes that incarnation of the pod, bypassing disruption budgets (`forceDeleteAfter` only). */
  delete(namespace: string, name: string, uid: string, signal: AbortSignal): Promise<'deleted' | 'gone'>;
}

/** `namespace/name`, the way pods are named in reports. */
export function podKey(pod: { readonly namespace: string; readonly name: string }): string {
  return `${pod.namespace}/${pod.name}`;
}

/** The PodSummary of a client-node Pod. */
export function summarisePod(pod: k8s.V1Pod): PodSummary {
  const metadata = pod.metadata ?? {};
  const spec = pod.spec;
  const annotations = metadata.annotations ?? {};
  const resources = new Set<string>();
  for (const container of [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])]) {
    const { limits = {}, requests = {} } = container.resources ?? {};
    // Extended resources are the qualified names (cpu, memory, hugepages-2Mi are not).
    for (const name of [...Object.keys(limits), ...Object.keys(requests)])
      if (name.includes('/')) resources.add(name);
  }
  // Devices through Dynamic Resource Allocation: which claim holds which device is not read
  // here, so such a pod counts as one that may hold any (allocation.ts); DRA_CLAIM_RESOURCE
  // stands for its claims among the device resources.
  if ((spec?.resourceClaims ?? []).length > 0) resources.add(DRA_CLAIM_RESOURCE);
  return {
    namespace: metadata.namespace ?? '',
    name: metadata.name ?? '',
    uid: metadata.uid ?? '',
    phase: pod.status?.phase ?? '',
    terminating: metadata.deletionTimestamp !== undefined && metadata.deletionTimestamp !== null,
    daemonSet: (metadata.ownerReferences ?? []).some(
      (ref) => ref.controller === true && ref.kind === 'DaemonSet',
    ),
    mirror: MIRROR_POD_ANNOTATION in annotations,
    annotations,
    emptyDirVolumes: (spec?.volumes ?? []).filter((volume) => volume.emptyDir).map((volume) => volume.name),
    deviceResources: [...resources].sort(),
  };
}

/** A Kubernetes Status as the API sends it with a failure (the parts read here). */
interface StatusBody {
  message?: string;
  details?: { causes?: { reason?: string; message?: string }[] };
}

/**
 * Why an eviction was refused, from the 429's Status: its message and the budget's own words
 * (`The disruption budget web needs 1 healthy pods and has 1 currently`).
 */
function refusalMessage(error: unknown): string {
  const raw = (error as { body?: unknown }).body;
  let body: StatusBody | undefined;
  try {
    body = (typeof raw === 'string' ? JSON.parse(raw) : raw) as StatusBody | undefined;
  } catch {
    body = undefined;
  }
  const causes = (body?.details?.causes ?? []).map((cause) => cause.message).filter(Boolean);
  const text = [body?.message, ...causes].filter(Boolean).join(' ');
  return text || (K8sApiError.from(error)?.message ?? 'refused');
}

/** The PodClient on client-node's CoreV1Api. `pageSize` bounds each list page. */
export function createKubePodClient(api: k8s.CoreV1Api, options: { pageSize?: number } = {}): PodClient {
  const pageSize = options.pageSize ?? LIST_PAGE_SIZE;
  const get = async (namespace: string, name: string, signal: AbortSignal): Promise<PodSummary | null> => {
    try {
      return summarisePod(await api.readNamespacedPod({ name, namespace }, requestOptions({ signal })));
    } catch (error) {
      if (isNotFound(error)) return null;
      throw K8sApiError.from(error) ?? error;
    }
  };
  return {
    async list(node, signal) {
      const pods: PodSummary[] = [];
      try {
        let next: string | undefined;
        do {
          const page = await api.listPodForAllNamespaces(
            { fieldSelector: `spec.nodeName=${node}`, limit: pageSize, _continue: next },
            requestOptions({ signal }),
          );
          for (const pod of page.items) pods.push(summarisePod(pod));
          next = page.metadata?._continue || undefined;
        } while (next !== undefined);
      } catch (error) {
        throw K8sApiError.from(error) ?? error;
      }
      return pods;
    },

    async evict(namespace, name, uid, signal) {
      try {
        await api.createNamespacedPodEviction(
          {
            name,
            namespace,
            body: {
              apiVersion: 'policy/v1',
              kind: 'Eviction',
              metadata: { name, namespace },
              ...(uid ? { deleteOptions: { preconditions: { uid } } } : {}),
            },
          },
          requestOptions({ signal }),
        );
        return { result: 'evicted' };
      } catch (error) {
        const failure = K8sApiError.from(error);
        if (!failure) throw error;
        if (failure.apiStatus === 404) return { result: 'gone' };
        if (failure.apiStatus === 429) return { result: 'blocked', message: refusalMessage(error) };
        // 409: the uid precondition failed (a new pod holds the name) or a write raced; which
        // one is told by looking.
        if (failure.apiStatus === 409 && uid) {
          const current = await get(namespace, name, signal);
          if (current === null || current.uid !== uid) return { result: 'gone' };
        }
        throw failure;
      }
    },

    get,

    async delete(namespace, name, uid, signal) {
      try {
        await api.deleteNamespacedPod(
          { name, namespace, body: { preconditions: { uid } } },
          requestOptions({ signal }),
        );
        return 'deleted';
      } catch (error) {
        const failure = K8sApiError.from(error);
        if (!failure) throw error;
        // 409 here can only be the uid precondition: that pod is gone, another has its name.
        if (failure.apiStatus === 404 || failure.apiStatus === 409) return 'gone';
        throw failure;
      }
    },
  };
}

/**
 * The ConfigMapClient on client-node's CoreV1Api. A replace sends back the object last read
 * (annotations, other labels and owners kept, as the lease client does), with our labels
 * merged in, the new data and the given resourceVersion; `binaryData` is dropped (the
 * controller owns the object's content).
 */
import * as k8s from '@kubernetes/client-node';
import { K8sApiError, isNotFound } from '../../platform/index.js';
import { requestOptions } from '../../platform/k8s/index.js';
import {
  describeConfigMap,
  type ConfigMapClient,
  type ConfigMapKey,
  type StoredConfigMap,
} from './configmap-client.js';

/** A ConfigMapClient on the real API (`kubeConfig.makeApiClient(k8s.CoreV1Api)`). */
export function createKubeConfigMapClient(api: k8s.CoreV1Api): ConfigMapClient {
  // The metadata last seen per ConfigMap, so a replace keeps what others set.
  const lastSeen = new Map<string, k8s.V1ObjectMeta>();
  const remember = (key: ConfigMapKey, configMap: k8s.V1ConfigMap): StoredConfigMap => {
    lastSeen.set(describeConfigMap(key), configMap.metadata ?? {});
    return toStored(key, configMap);
  };
  const fail = (error: unknown): never => {
    throw K8sApiError.from(error) ?? error;
  };
  return {
    async get(key, signal) {
      try {
        return remember(key, await api.readNamespacedConfigMap(key, requestOptions({ signal })));
      } catch (error) {
        if (isNotFound(error)) {
          lastSeen.delete(describeConfigMap(key));
          return undefined;
        }
        return fail(error);
      }
    },
    async create(key, content, signal) {
      const body: k8s.V1ConfigMap = {
        metadata: { name: key.name, namespace: key.namespace, labels: { ...content.labels } },
        data: { ...content.data },
      };
      try {
        return remember(
          key,
          await api.createNamespacedConfigMap({ namespace: key.namespace, body }, requestOptions({ signal })),
        );
      } catch (error) {
        return fail(error);
      }
    },
    async replace(key, resourceVersion, content, signal) {
      const seen = lastSeen.get(describeConfigMap(key));
      const body: k8s.V1ConfigMap = {
        metadata: {
          ...withoutServerFields(seen),
          name: key.name,
          namespace: key.namespace,
          resourceVersion,
          labels: { ...seen?.labels, ...content.labels },
        },
        data: { ...content.data },
      };
      try {
        return remember(
          key,
          await api.replaceNamespacedConfigMap({ ...key, body }, requestOptions({ signal })),
        );
      } catch (error) {
        return fail(error);
      }
    },
    async delete(key, preconditions, signal) {
      try {
        await api.deleteNamespacedConfigMap(
          { ...key, body: { preconditions: { ...preconditions } } },
          requestOptions({ signal }),
        );
        lastSeen.delete(describeConfigMap(key));
      } catch (error) {
        fail(error);
      }
    },
  };
}

/** The metadata a client may send back (managedFields would only bloat a 900 KiB write). */
function withoutServerFields(meta: k8s.V1ObjectMeta | undefined): k8s.V1ObjectMeta {
  if (!meta) return {};
  const { managedFields: _managed, creationTimestamp: _created, ...rest } = meta;
  return rest;
}

function toStored(key: ConfigMapKey, configMap: k8s.V1ConfigMap): StoredConfigMap {
  const { resourceVersion, uid } = configMap.metadata ?? {};
  if (!resourceVersion || !uid)
    throw new Error(`ConfigMap ${describeConfigMap(key)}: the API returned no resourceVersion or uid`);
  return {
    resourceVersion,
    uid,
    labels: { ...configMap.metadata?.labels },
    data: { ...configMap.data },
  };
}

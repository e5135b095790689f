/**
 * The device-info ConfigMaps on the real API: one namespace's ConfigMaps labelled
 * `mx-consumer-cim=true` (the label mind-cluster's device plugin writes, selected
 * server-side). RBAC cannot grant a name prefix, so the Role is list+watch on ConfigMaps in
 * that namespace (k8s/controller/mindcluster/); the fake is platform/k8s/watch/testing.ts's
 * FakeListWatchClient.
 */
import * as k8s from '@kubernetes/client-node';
import {
  createKubeListWatchClient,
  type KubeCollection,
  type ListWatchClient,
} from '../../platform/k8s/index.js';
import { DEVICE_INFO_LABEL_SELECTOR } from './device-info.js';

export function deviceInfoCollection(core: k8s.CoreV1Api, namespace: string): KubeCollection {
  const labelSelector = DEVICE_INFO_LABEL_SELECTOR;
  return {
    path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`,
    labelSelector,
    listPage: (page, options) =>
      core.listNamespacedConfigMap(
        { namespace, labelSelector, limit: page.limit, _continue: page.continue },
        options,
      ),
  };
}

export function createMindClusterClient(kubeConfig: k8s.KubeConfig, namespace: string): ListWatchClient {
  return createKubeListWatchClient(
    kubeConfig,
    deviceInfoCollection(kubeConfig.makeApiClient(k8s.CoreV1Api), namespace),
  );
}

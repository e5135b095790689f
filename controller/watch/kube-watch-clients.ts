/** The controller's three watch clients (Nodes, mirror Namespaces, the rules ConfigMap) on the real API. */
import * as k8s from '@kubernetes/client-node';
import {
  configMapCollection,
  createKubeListWatchClient,
  namespacesCollection,
  nodesCollection,
  type ListWatchClient,
} from '../../platform/k8s/index.js';
import { MIRROR_LABEL_SELECTOR } from './namespaces.js';
import { RULES_CONFIGMAP } from './rules-configmap.js';

/** The clients of the controller's three watches. */
export interface KubeWatchClients {
  /** Every Node. */
  readonly nodes: ListWatchClient;
  /** The Namespaces labelled npu-fault.io/status-mirror=true. */
  readonly mirrorNamespaces: ListWatchClient;
  /** The ConfigMap `<namespace>/npu-fault-rules`. */
  readonly rulesConfigMap: ListWatchClient;
  /** The ConfigMap `<namespace>/npu-fault-remediation` (self-healing settings). */
  readonly remediationConfigMap: ListWatchClient;
}

/** The ConfigMap holding hot-reloaded self-healing settings. */
export const REMEDIATION_CONFIGMAP = 'npu-fault-remediation';

/** The controller's watch clients, acting as `kubeConfig`; `namespace` is the controller's own. */
export function createKubeWatchClients(
  kubeConfig: k8s.KubeConfig,
  options: { namespace: string; rulesConfigMap?: string },
): KubeWatchClients {
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  return {
    nodes: createKubeListWatchClient(kubeConfig, nodesCollection(core)),
    mirrorNamespaces: createKubeListWatchClient(
      kubeConfig,
      namespacesCollection(core, MIRROR_LABEL_SELECTOR),
    ),
    rulesConfigMap: createKubeListWatchClient(
      kubeConfig,
      configMapCollection(core, options.namespace, options.rulesConfigMap ?? RULES_CONFIGMAP),
    ),
    remediationConfigMap: createKubeListWatchClient(
      kubeConfig,
      configMapCollection(core, options.namespace, REMEDIATION_CONFIGMAP),
    ),
  };
}

/** Kubeconfigs for the local control plane's clients. */
import * as k8s from '@kubernetes/client-node';

/** A KubeConfig for the same cluster that authenticates with `token` only. */
export function kubeConfigWithToken(
  admin: k8s.KubeConfig,
  token: string,
  user = 'token-user',
): k8s.KubeConfig {
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('admin kubeconfig has no current cluster');
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: user, token }],
    contexts: [{ name: 'ctx', cluster: cluster.name, user }],
    currentContext: 'ctx',
  });
  return kc;
}

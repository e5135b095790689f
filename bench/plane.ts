/**
 * What a benchmark on the local control plane sets up before it starts controllers: the
 * controllers' namespace with the shipped RBAC, and tokens of ServiceAccounts in it.
 */
import * as k8s from '@kubernetes/client-node';
import { controllerRbacObjects } from '../stack/index.js';

/** The namespace `ns` with the controller's shipped RBAC, and a minter of 2-hour tokens. */
export async function controllerNamespace(
  admin: k8s.KubeConfig,
  ns: string,
): Promise<{ core: k8s.CoreV1Api; token(serviceAccount: string, audiences?: string[]): Promise<string> }> {
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const objects = k8s.KubernetesObjectApi.makeApiClient(admin);
  await core.createNamespace({ body: { metadata: { name: ns } } });
  for (const object of controllerRbacObjects(ns)) await objects.create(object);
  const token = async (serviceAccount: string, audiences: string[] = []): Promise<string> => {
    await core
      .createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: serviceAccount } } })
      .catch(() => undefined);
    const minted = await core.createNamespacedServiceAccountToken({
      name: serviceAccount,
      namespace: ns,
      body: { spec: { audiences, expirationSeconds: 7200 } },
    });
    return minted.status?.token ?? '';
  };
  return { core, token };
}

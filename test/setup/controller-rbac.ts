/**
 * The controller's shipped RBAC (k8s/controller/leader-election-rbac.yaml and rbac.yaml), and
 * the ingest function's (k8s/functions/base/rbac.yaml), applied into a test namespace so that
 * a test acts as the component's ServiceAccount with
 * exactly those rules: `ai-infra` becomes the test namespace, and the cluster-scoped objects
 * (ClusterRole, ClusterRoleBinding) get the namespace appended to their names so that test
 * files running at once do not share them. Nothing else is changed: a rule the code needs
 * and the manifest lacks fails the test with a 403.
 */
import * as k8s from '@kubernetes/client-node';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { manifestRbacObjects } from '../../hack/manifest-rbac.js';
import { CONTROLLER_TOKEN_AUDIENCE } from '../../contracts/index.js';
import type { TestNamespace } from './cluster.js';

/** The ServiceAccount the controller runs as (k8s/controller/serviceaccount.yaml). */
export const CONTROLLER_SERVICE_ACCOUNT = 'npu-fault-controller';

const RBAC_FILES = ['leader-election-rbac.yaml', 'rbac.yaml'];

/** The ServiceAccount the ingest function runs as (k8s/functions/base/serviceaccount.yaml). */
export const FUNCTION_SERVICE_ACCOUNT = 'npu-fault-function';

/** The controller's RBAC objects as shipped, rewritten for `namespace`. */
export function controllerRbacObjects(namespace: string): k8s.KubernetesObject[] {
  return rbacObjects(
    RBAC_FILES.map((file) => `controller/${file}`),
    namespace,
  );
}

/** The ingest function's RBAC objects as shipped (k8s/functions/base/rbac.yaml), rewritten for `namespace`. */
export function functionRbacObjects(namespace: string): k8s.KubernetesObject[] {
  return rbacObjects(['functions/base/rbac.yaml'], namespace);
}

/** RBAC objects of manifests under k8s/, rewritten for `namespace` (hack/manifest-rbac.ts). */
const rbacObjects = manifestRbacObjects;

/** The controller's identity in a test namespace, under its shipped RBAC. */
export interface ControllerAccess {
  /** Acts as the controller's ServiceAccount (a fresh TokenRequest token). */
  kubeConfig: k8s.KubeConfig;
  /** Mints another KubeConfig for the same ServiceAccount (a second replica, say). */
  another(): Promise<k8s.KubeConfig>;
  /** Deletes the cluster-scoped objects (the namespaced ones go with the namespace). */
  dispose(): Promise<void>;
}

/**
 * Applies the controller's shipped RBAC into `ns` and returns a KubeConfig acting as its
 * ServiceAccount there. Call `dispose` in afterAll.
 */
export async function controllerAccess(ns: TestNamespace): Promise<ControllerAccess> {
  return access(ns, controllerRbacObjects(ns.name), CONTROLLER_SERVICE_ACCOUNT);
}

/** The ingest function's identity in a test namespace, under its shipped RBAC. */
export async function functionAccess(ns: TestNamespace): Promise<ControllerAccess> {
  return access(ns, functionRbacObjects(ns.name), FUNCTION_SERVICE_ACCOUNT);
}

async function access(
  ns: TestNamespace,
  created: k8s.KubernetesObject[],
  serviceAccount: string,
): Promise<ControllerAccess> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(ns.admin);
  for (const object of created) await objects.create(object);
  const another = (): Promise<k8s.KubeConfig> => ns.serviceAccountKubeConfig(serviceAccount);
  return {
    kubeConfig: await another(),
    another,
    async dispose() {
      for (const object of created) {
        if (!object.kind?.startsWith('Cluster')) continue;
        await objects.delete(object).catch(() => undefined);
      }
    },
  };
}

/** The ServiceAccount the operator roles are bound to in a test (it stands for a person). */
export const OPERATOR_SERVICE_ACCOUNT = 'npu-fault-operator';

/**
 * The operator roles (k8s/operator/rbac.yaml) and the example bindings
 * (k8s/operator/bindings.example.yaml), rewritten for `namespace`, with the example's Group
 * subject replaced by the ServiceAccount OPERATOR_SERVICE_ACCOUNT (a token cannot carry a
 * made-up group).
 */
export function operatorRbacObjects(namespace: string): k8s.KubernetesObject[] {
  const objects = rbacObjects(['operator/rbac.yaml', 'operator/bindings.example.yaml'], namespace);
  for (const object of objects as (k8s.KubernetesObject & { subjects?: Record<string, string>[] })[]) {
    object.subjects = object.subjects?.map((subject) =>
      subject.kind === 'Group'
        ? { kind: 'ServiceAccount', name: OPERATOR_SERVICE_ACCOUNT, namespace }
        : subject,
    );
  }
  return objects;
}

/** A platform engineer's identity in a test namespace, under the shipped operator roles. */
export async function operatorAccess(ns: TestNamespace): Promise<ControllerAccess> {
  return access(ns, operatorRbacObjects(ns.name), OPERATOR_SERVICE_ACCOUNT);
}

/** functionCallerToken written to a file in `dir`: what a function process reads (`--token-file`). */
export async function functionTokenFile(ns: TestNamespace, dir: string): Promise<string> {
  const file = join(dir, 'function-controller-token');
  writeFileSync(file, await functionCallerToken(ns), { mode: 0o600 });
  return file;
}

/**
 * A token of the ingest function's ServiceAccount in `ns` (created when missing), valid for an
 * hour, with the controllers' audience: what a test posts observations to a controller with,
 * as the function does with its projected token.
 */
export async function functionCallerToken(ns: TestNamespace): Promise<string> {
  const core = ns.admin.makeApiClient(k8s.CoreV1Api);
  try {
    await core.createNamespacedServiceAccount({
      namespace: ns.name,
      body: { metadata: { name: FUNCTION_SERVICE_ACCOUNT } },
    });
  } catch (error) {
    if ((error as { code?: number }).code !== 409) throw error;
  }
  const minted = await core.createNamespacedServiceAccountToken({
    name: FUNCTION_SERVICE_ACCOUNT,
    namespace: ns.name,
    body: { spec: { audiences: [CONTROLLER_TOKEN_AUDIENCE], expirationSeconds: 3600 } },
  });
  return minted.status?.token ?? '';
}

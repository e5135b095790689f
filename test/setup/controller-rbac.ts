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
import { controllerRbacObjects, functionRbacObjects, manifestRbacObjects } from '../../stack/index.js';
import { CONTROLLER_TOKEN_AUDIENCE } from '../../contracts/index.js';
import type { TestNamespace } from './cluster.js';

/** The ServiceAccount the controller runs as (k8s/controller/serviceaccount.yaml). */
export const CONTROLLER_SERVICE_ACCOUNT = 'npu-fault-controller';

/** The ServiceAccount the ingest function runs as (k8s/functions/base/serviceaccount.yaml). */
export const FUNCTION_SERVICE_ACCOUNT = 'npu-fault-function';

// The shipped RBAC as objects lives in stack/ (the benchmarks and the demo apply it too).
export { controllerRbacObjects, functionRbacObjects };

/** RBAC objects of manifests under k8s/, rewritten for `namespace` (stack/manifest-rbac.ts). */
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

/**
 * Opts `mirrorNamespace` in to the controller's status mirror, as an operator does: the
 * shipped example RoleBinding (k8s/controller/status-mirror-binding.example.yaml) moved into
 * that namespace, naming the controller of `controllerNamespace` and the ClusterRole
 * controllerAccess created for it. It goes with the mirror namespace.
 */
export async function allowMirrorsIn(
  controllerNamespace: TestNamespace,
  mirrorNamespace: string,
): Promise<void> {
  const [binding] = rbacObjects(['controller/status-mirror-binding.example.yaml'], controllerNamespace.name);
  if (!binding) throw new Error('status-mirror-binding.example.yaml holds no RoleBinding');
  binding.metadata = { ...binding.metadata, namespace: mirrorNamespace };
  await k8s.KubernetesObjectApi.makeApiClient(controllerNamespace.admin).create(binding);
}

/** The opt-in pod delete of k8s/controller/force-delete, rewritten for `namespace`. */
export function forceDeleteRbacObjects(namespace: string): k8s.KubernetesObject[] {
  return rbacObjects(['controller/force-delete/rbac.yaml'], namespace);
}

/**
 * Applies the opt-in pod delete (k8s/controller/force-delete) for the controller of `ns`, and
 * resolves once the apiserver's authorizer answers that it may delete pods there (it follows
 * bindings through a watch, so a request right after the create could still be refused).
 * Returns what removes the grant again.
 */
export async function grantForceDelete(ns: TestNamespace): Promise<() => Promise<void>> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(ns.admin);
  const created = forceDeleteRbacObjects(ns.name);
  for (const object of created) await objects.create(object);
  const authorization = ns.admin.makeApiClient(k8s.AuthorizationV1Api);
  const deadline = performance.now() + 10_000;
  for (;;) {
    const review = await authorization.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${ns.name}:${CONTROLLER_SERVICE_ACCOUNT}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${ns.name}`, 'system:authenticated'],
          resourceAttributes: { resource: 'pods', verb: 'delete', namespace: ns.name },
        },
      },
    });
    if (review.status?.allowed) break;
    if (performance.now() > deadline) throw new Error('the force-delete grant was not in force within 10 s');
  }
  return async () => {
    for (const object of created) await objects.delete(object).catch(() => undefined);
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

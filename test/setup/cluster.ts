/**
 * What an integration test file needs from the shared control plane: an admin client, a
 * namespace of its own (deleted afterwards), and clients that act as a ServiceAccount with
 * a token minted through the TokenRequest API, so components are tested under their real
 * RBAC rather than as admin.
 */
import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { kubeConfigWithToken } from '../../stack/index.js';

/** The admin kubeconfig of the control plane global-setup started. */
export function adminKubeConfig(): k8s.KubeConfig {
  const path = process.env.NPU_FAULT_TEST_KUBECONFIG;
  if (!path)
    throw new Error('NPU_FAULT_TEST_KUBECONFIG is unset: run integration tests through jest (npm test)');
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

/** Directory of the cached control-plane binaries (kubectl among them). */
export function binDir(): string {
  const dir = process.env.NPU_FAULT_TEST_BIN_DIR;
  if (!dir) throw new Error('NPU_FAULT_TEST_BIN_DIR is unset: run integration tests through jest (npm test)');
  return dir;
}

// Shared with the benchmarks, so it lives in stack/.
export { kubeConfigWithToken };

/** A test file's namespace on the shared control plane. */
export interface TestNamespace {
  name: string;
  admin: k8s.KubeConfig;
  /** Creates a ServiceAccount (if missing) and returns a KubeConfig using a fresh TokenRequest token. */
  serviceAccountKubeConfig(serviceAccount: string, namespace?: string): Promise<k8s.KubeConfig>;
  /** Deletes the namespace. */
  dispose(): Promise<void>;
}

/** Creates a uniquely named namespace for one test file. */
export async function createTestNamespace(prefix: string): Promise<TestNamespace> {
  const admin = adminKubeConfig();
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name, labels: { 'npu-fault.io/test': 'true' } } } });
  return {
    name,
    admin,
    async serviceAccountKubeConfig(serviceAccount, namespace = name) {
      try {
        await core.createNamespacedServiceAccount({
          namespace,
          body: { metadata: { name: serviceAccount } },
        });
      } catch (error) {
        if ((error as { code?: number }).code !== 409) throw error;
      }
      const response = await core.createNamespacedServiceAccountToken({
        name: serviceAccount,
        namespace,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      const token = response.status?.token;
      if (!token) throw new Error(`TokenRequest for ${namespace}/${serviceAccount} returned no token`);
      return kubeConfigWithToken(admin, token, `system:serviceaccount:${namespace}:${serviceAccount}`);
    },
    async dispose() {
      await core.deleteNamespace({ name }).catch(() => undefined);
    },
  };
}

/**
 * Watches `path` (a list URL such as /api/v1/namespaces/x/pods) until `predicate` holds for
 * an object, returning it. Synchronises on the API's own events instead of sleeping; the
 * initial state is covered because a watch without resourceVersion starts with ADDED events
 * for every existing object.
 */
export async function watchUntil<T extends k8s.KubernetesObject>(
  kc: k8s.KubeConfig,
  path: string,
  predicate: (object: T, type: string) => boolean,
  options: {
    fieldSelector?: string;
    labelSelector?: string;
    resourceVersion?: string;
    timeoutMs?: number;
    what?: string;
  } = {},
): Promise<T> {
  const watch = new k8s.Watch(kc);
  const timeoutMs = options.timeoutMs ?? 60_000;
  let last: T | undefined;
  // The newest resourceVersion seen: a watch that ends early (client-node closes one that saw
  // no event for 30 s; the server closes long ones) resumes from it, missing nothing.
  let resumeFrom = options.resourceVersion;
  return await new Promise<T>((resolve, reject) => {
    let request: AbortController | undefined;
    let settled = false;
    const finish = (error: Error | undefined, value?: T): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request?.abort();
      if (error) reject(error);
      else resolve(value as T);
    };
    const timer = setTimeout(
      () =>
        finish(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${options.what ?? path}; last seen: ${JSON.stringify(last)?.slice(0, 600)}`,
          ),
        ),
      timeoutMs,
    );
    const start = (): void => {
      const query: Record<string, string> = {};
      if (options.fieldSelector) query.fieldSelector = options.fieldSelector;
      if (options.labelSelector) query.labelSelector = options.labelSelector;
      if (resumeFrom) query.resourceVersion = resumeFrom;
      watch
        .watch(
          path,
          query,
          (type: string, object: T) => {
            last = object;
            resumeFrom = object.metadata?.resourceVersion ?? resumeFrom;
            if (predicate(object, type)) finish(undefined, object);
          },
          (error?: unknown) => {
            if (settled) return;
            // 410 Gone: the resume point was compacted away; nothing here can recover it.
            if (String(error).includes('410')) finish(new Error(`watch of ${path} expired (410 Gone)`));
            else setTimeout(start, 200).unref(); // a pause, so a failing connection cannot spin
          },
        )
        .then((controller) => {
          request = controller;
          if (settled) controller.abort();
        })
        .catch((error: unknown) => finish(error instanceof Error ? error : new Error(String(error))));
    };
    start();
  });
}

/**
 * Waits until the object `name` is gone from the list at `path`. Lists first (through
 * `list`, a typed client call with the same field selector): a watch without a
 * resourceVersion would never report an object that is already gone.
 */
export async function waitUntilGone(
  kc: k8s.KubeConfig,
  path: string,
  name: string,
  list: (fieldSelector: string) => Promise<{ items: unknown[]; metadata?: { resourceVersion?: string } }>,
  timeoutMs = 60_000,
): Promise<void> {
  const fieldSelector = `metadata.name=${name}`;
  const current = await list(fieldSelector);
  if (current.items.length === 0) return;
  const options = { fieldSelector, timeoutMs, what: `${path}/${name} deleted` };
  await watchUntil(kc, path, (_object, type) => type === 'DELETED', {
    ...options,
    ...(current.metadata?.resourceVersion ? { resourceVersion: current.metadata.resourceVersion } : {}),
  });
}

/**
 * Whether kwok runs nodes and pods here: it comes with the local control plane; an existing
 * cluster must say so (`NPU_FAULT_TEST_KWOK=true`). Tests of kwok-run nodes skip without it.
 */
export function kwokAvailable(): boolean {
  return process.env.NPU_FAULT_USE_EXISTING_CLUSTER !== 'true' || process.env.NPU_FAULT_TEST_KWOK === 'true';
}

/**
 * A controller replica as a real process: the process helpers live in
 * stack/component-process.ts (the pipeline demo and the benchmarks use them too); the test-only replica
 * defaults are here.
 */
import type * as k8s from '@kubernetes/client-node';
import { startControllerProcess, writeKubeConfig, type ControllerProcess } from '../../stack/index.js';
import type { TestNamespace } from './cluster.js';
import { functionTokenFile } from './controller-rbac.js';

export {
  startControllerProcess,
  writeKubeConfig,
  type ControllerProcess,
  type LogLine,
} from '../../stack/index.js';

/** The Lease timing test replicas run with: a takeover in seconds, not the default 15 s. */
export const TEST_LEASE = { duration: 4, renewDeadline: 3, retry: 0.5 } as const;

/**
 * Starts a controller replica in test namespace `namespace` under a fresh token of the
 * controller's ServiceAccount (`access`, test/setup/controller-rbac.ts): its status and Lease
 * there, TEST_LEASE timing, observations accepted from the namespace's `npu-fault-function`,
 * and `args` on top.
 */
export async function startTestReplica(options: {
  identity: string;
  namespace: string;
  access: { another(): Promise<k8s.KubeConfig> };
  args?: string[];
}): Promise<ControllerProcess> {
  return startControllerProcess({
    identity: options.identity,
    kubeconfig: writeKubeConfig(await options.access.another()),
    args: [
      `--namespace=${options.namespace}`,
      `--lease-duration-seconds=${TEST_LEASE.duration}`,
      `--lease-renew-deadline-seconds=${TEST_LEASE.renewDeadline}`,
      `--lease-retry-period-seconds=${TEST_LEASE.retry}`,
      `--auth-allowed-users=system:serviceaccount:${options.namespace}:npu-fault-function`,
      ...(options.args ?? []),
    ],
  });
}

/**
 * An `npu-fault function` process as the tests run it: under `access`'s kubeconfig (the
 * function's shipped RBAC), presenting a token of the controllers' audience written into
 * `dir`, forwarding to `controllers` (`name=url,…`), plus `args` and `env`.
 */
export async function startTestFunction(options: {
  ns: TestNamespace;
  access: { kubeConfig: k8s.KubeConfig };
  dir: string;
  controllers: string;
  args?: string[];
  env?: Record<string, string>;
}): Promise<ControllerProcess> {
  return startControllerProcess({
    identity: 'function',
    command: 'function',
    kubeconfig: writeKubeConfig(options.access.kubeConfig),
    ...(options.env ? { env: options.env } : {}),
    args: [
      `--namespace=${options.ns.name}`,
      `--token-file=${await functionTokenFile(options.ns, options.dir)}`,
      `--controllers=${options.controllers}`,
      ...(options.args ?? []),
    ],
  });
}

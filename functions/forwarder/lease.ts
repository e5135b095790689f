/**
 * The leader as the controller's Lease names it (`<namespace>/npu-fault-controller`,
 * coordination.k8s.io/v1, `spec.holderIdentity`), followed with the platform's list+watch
 * loop through a field selector on its name (RBAC may then grant just that Lease).
 *
 * The holder is reported as the Lease says, even after it stopped renewing: the forwarder
 * accepts a leader answer from any replica (see retry.ts), so a stale holder only costs a
 * retry aimed at the dead replica until a standby takes the Lease over.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Clock, Logger, Registry } from '../../platform/index.js';
import { createWatchLoop, type KubeCollection, type ListWatchClient } from '../../platform/k8s/index.js';
import { Listeners, type LeaderSource } from './replicas.js';

/** The controller's leader-election Lease (controller/leader-election). */
export const CONTROLLER_LEASE = 'npu-fault-controller';

/** The one Lease `namespace/name`, through a field selector on its name. */
export function leaseCollection(
  coordination: k8s.CoordinationV1Api,
  namespace: string,
  name: string = CONTROLLER_LEASE,
): KubeCollection {
  const fieldSelector = `metadata.name=${name}`;
  return {
    path: `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`,
    fieldSelector,
    listPage: (page, options) =>
      coordination.listNamespacedLease(
        { namespace, fieldSelector, limit: page.limit, _continue: page.continue },
        options,
      ),
  };
}

/** What the Lease source is built from (`client` lists and watches the one Lease). */
export interface LeaseSourceDeps {
  client: ListWatchClient;
  clock: Clock;
  log: Logger;
  registry: Registry;
}

/** A LeaderSource following the Lease; run it (Runnable) to fill it. */
export function createLeaseLeaderSource(
  deps: LeaseSourceDeps,
  options: { watchdogMs?: number; initialBackoffMs?: number; maxBackoffMs?: number } = {},
): LeaderSource {
  const listeners = new Listeners();
  let holder: string | undefined;
  const loop = createWatchLoop<string>(
    { client: deps.client, clock: deps.clock, log: deps.log, registry: deps.registry },
    {
      resource: 'leases',
      metricsComponent: 'function',
      transform: (raw) => {
        const identity = (raw as { spec?: { holderIdentity?: unknown } }).spec?.holderIdentity;
        return typeof identity === 'string' && identity !== '' ? identity : undefined;
      },
      ...options,
      handlers: {
        onAdd: (_key, value) => changed(value),
        onUpdate: (_key, value) => changed(value),
        onDelete: () => changed(undefined),
      },
    },
  );
  function changed(next: string | undefined): void {
    holder = next;
    deps.log.info({ holder: next ?? null }, 'controller lease holder');
    listeners.notify();
  }
  return {
    name: 'controller-lease',
    holder: () => holder,
    subscribe: (listener) => listeners.subscribe(listener),
    start: (signal) => loop.start(signal),
  };
}

/**
 * The controller replicas from the EndpointSlices of the controller's headless Service
 * (discovery.k8s.io/v1, label `kubernetes.io/service-name=<service>`), followed with the
 * platform's list+watch loop (watchdog, 410 re-list, backoff).
 *
 * An endpoint is a replica when it is ready (`conditions.ready` true, or absent: the API
 * says consumers should treat an unknown readiness as ready), has an address and a
 * `targetRef` name. Its identity is that name, the pod's, which is what the controller puts
 * in the Lease; its URL is `http://<first address>:<the slice's port named "http">`, or
 * `https://…` when that port's `appProtocol` is `https` (the Service says the controllers serve
 * TLS: k8s/controller/tls), whose certificate is then checked against the
 * Service's name `<service>.<namespace>.svc`, not the pod's address. A slice without that port
 * contributes nothing. A pod listed by two slices (while the EndpointSlice controller moves
 * it) counts once.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Clock, Logger, Registry } from '../../platform/index.js';
import {
  createWatchLoop,
  type KubeCollection,
  type ListWatchClient,
  type RawObject,
  type WatchLoopOptions,
} from '../../platform/k8s/index.js';
import { byIdentity, Listeners, type Replica, type ReplicaSource } from './replicas.js';

/** The controller's headless Service (k8s/controller/service.yaml) and its port name. */
export const CONTROLLER_SERVICE = 'npu-fault-controller';
/** The name of the Service port the observation endpoint is on. */
export const OBSERVATIONS_PORT_NAME = 'http';

/** The EndpointSlices of Service `namespace/service`. */
export function endpointSlicesCollection(
  discovery: k8s.DiscoveryV1Api,
  namespace: string,
  service: string = CONTROLLER_SERVICE,
): KubeCollection {
  const labelSelector = `kubernetes.io/service-name=${service}`;
  return {
    path: `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/endpointslices`,
    labelSelector,
    listPage: (page, options) =>
      discovery.listNamespacedEndpointSlice(
        { namespace, labelSelector, limit: page.limit, _continue: page.continue },
        options,
      ),
  };
}

/** What the EndpointSlice source is built from (`client` lists and watches the slices). */
export interface EndpointSliceSourceDeps {
  client: ListWatchClient;
  clock: Clock;
  log: Logger;
  registry: Registry;
}

/** How the slices are read and watched. */
export interface EndpointSliceSourceOptions extends Pick<
  WatchLoopOptions<unknown>,
  'watchdogMs' | 'initialBackoffMs' | 'maxBackoffMs'
> {
  /** The port name of the observation endpoint (default `http`). */
  portName?: string;
  /**
   * The name an https replica's certificate must carry (the function passes
   * `<service>.<namespace>.svc`); unset: the pod's address.
   */
  serverName?: string;
}

/** A ReplicaSource following EndpointSlices; run it (Runnable) to fill it. */
export function createEndpointSliceReplicaSource(
  deps: EndpointSliceSourceDeps,
  options: EndpointSliceSourceOptions = {},
): ReplicaSource {
  const portName = options.portName ?? OBSERVATIONS_PORT_NAME;
  const serverName = options.serverName;
  const listeners = new Listeners();
  let current: readonly Replica[] = [];
  const loop = createWatchLoop<readonly Replica[]>(
    { client: deps.client, clock: deps.clock, log: deps.log, registry: deps.registry },
    {
      resource: 'endpointslices',
      metricsComponent: 'function',
      transform: (raw) => replicasOfSlice(raw, portName, serverName),
      watchdogMs: options.watchdogMs,
      initialBackoffMs: options.initialBackoffMs,
      maxBackoffMs: options.maxBackoffMs,
      handlers: { onAdd: changed, onUpdate: changed, onDelete: changed },
    },
  );
  function changed(): void {
    const byName = new Map<string, Replica>();
    for (const slice of loop.values()) for (const replica of slice) byName.set(replica.identity, replica);
    current = Object.freeze([...byName.values()].sort(byIdentity));
    deps.log.info({ replicas: current.map((r) => `${r.identity}=${r.url}`) }, 'controller replicas');
    listeners.notify();
  }
  return {
    name: 'controllers-endpointslices',
    replicas: () => current,
    subscribe: (listener) => listeners.subscribe(listener),
    start: (signal) => loop.start(signal),
  };
}

/** The ready replicas one EndpointSlice lists (only the fields used are read). */
export function replicasOfSlice(
  raw: RawObject,
  portName: string = OBSERVATIONS_PORT_NAME,
  serverName?: string,
): Replica[] {
  const slice = raw as {
    addressType?: unknown;
    ports?: unknown;
    endpoints?: unknown;
  };
  const found = Array.isArray(slice.ports)
    ? (slice.ports as { name?: unknown; port?: unknown; appProtocol?: unknown }[]).find(
        (p) => p?.name === portName,
      )
    : undefined;
  const port = found?.port;
  const https = found?.appProtocol === 'https';
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) return [];
  if (slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6') return [];
  const replicas: Replica[] = [];
  for (const endpoint of Array.isArray(slice.endpoints) ? slice.endpoints : []) {
    const e = endpoint as {
      addresses?: unknown;
      conditions?: { ready?: unknown };
      targetRef?: { name?: unknown };
    };
    if (e?.conditions?.ready === false) continue;
    const address = Array.isArray(e.addresses) ? e.addresses[0] : undefined;
    const identity = e.targetRef?.name;
    if (typeof address !== 'string' || address === '') continue;
    if (typeof identity !== 'string' || identity === '') continue;
    const host = slice.addressType === 'IPv6' ? `[${address}]` : address;
    replicas.push(
      https
        ? { identity, url: `https://${host}:${port}`, ...(serverName ? { serverName } : {}) }
        : { identity, url: `http://${host}:${port}` },
    );
  }
  return replicas;
}

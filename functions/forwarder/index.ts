/**
 * The ingest function's forwarder: fans validated snapshots out to every ready controller
 * replica (hot standby), micro-batched, with a bounded queue per replica and keep-alive
 * connections, and answers with the leader's answer, or LeaderUnavailableError (503) when no
 * leader accepted within the bound. Replicas come from a static `--controllers` list or the
 * EndpointSlices of the controller's headless Service; the leader from the controller's
 * Lease and the replicas' answers. The one door into functions/forwarder/; tests get fake
 * replicas from `./testing.js`.
 */
export {
  CONTROLLER_SERVICE,
  OBSERVATIONS_PORT_NAME,
  createEndpointSliceReplicaSource,
  endpointSlicesCollection,
  replicasOfSlice,
  type EndpointSliceSourceDeps,
  type EndpointSliceSourceOptions,
} from './endpoint-slices.js';
export { LeaderUnavailableError, ReplicaRequestError } from './errors.js';
export {
  createForwarder,
  type ForwardOptions,
  type ForwardResult,
  type Forwarder,
  type ForwarderDeps,
  type RunningForwarder,
} from './forwarder.js';
export { CONTROLLER_LEASE, createLeaseLeaderSource, leaseCollection, type LeaseSourceDeps } from './lease.js';
export { FORWARD_ERROR_REASONS, type ForwardErrorReason } from './metrics.js';
export { FORWARDER_DEFAULTS, type ForwarderOptions } from './options.js';
export {
  createStaticReplicaSource,
  parseControllers,
  type ChangeListener,
  type LeaderSource,
  type Replica,
  type ReplicaSource,
} from './replicas.js';
export {
  createHttpTransport,
  type HttpTransportOptions,
  type ReplicaRequest,
  type ReplicaTransport,
} from './transport.js';

/**
 * Which pods hold which device, from the kubelet's PodResources API (docs/pod-resources.md):
 * the gRPC client of its socket (client.ts), the mapping to our resource ids (holders.ts), the
 * periodic reader whose last read goes with every snapshot (reader.ts) and its config section.
 */
export { DEFAULT_POD_RESOURCES_SOCKET, podResourcesConfigSchema, type PodResourcesConfig } from './config.js';
export {
  PodResourcesError,
  createPodResourcesClient,
  type ListFailure,
  type PodResourcesClient,
  type PodResourcesClientOptions,
} from './client.js';
export {
  UNMAPPED_KINDS,
  holdersFrom,
  resourceIdOf,
  type HoldersReading,
  type UnmappedKind,
} from './holders.js';
export {
  createPodResourcesReader,
  type PodResourcesReader,
  type PodResourcesReaderDeps,
  type ReadResult,
} from './reader.js';

/**
 * The consumer SDK (package entry `npu-fault/consumer`): follow one node's published fault
 * status, or the cluster's, from a pod, through the mounted mirror ConfigMap (`file`), the
 * node agent's stream (`sse`) or an API watch (`watch`), with one API. It depends only on
 * contracts/, because it ships into users' pods.
 *
 * ```ts
 * import { followStatus, drainOnFailure } from 'npu-fault/consumer';
 * const follower = followStatus({ transport: 'file', dir: '/config' }); // node: $NODE_NAME
 * follower.onDeviceFailed(({ node, device }) => log(`${node}/${device.id} failed: ${device.reason}`));
 * follower.onStale((stale) => log(stale ? 'publisher silent' : 'publisher back'));
 * follower.onError((error) => log(error.message));
 * drainOnFailure(server, follower, { onDrain: () => setReady(false) });
 * for await (const update of follower) log(update.health);
 * ```
 */
export { followStatus, type FollowOptions } from './follow-status.js';
export type { StatusFollower, Transport, TransportSink, FollowerSettings } from './follower.js';
export { createFollower } from './follower.js';
export { drainOnFailure, type DrainHandle, type DrainOptions } from './drain.js';
export { FILE_DEFAULTS, fileTransport, type FileTransportOptions } from './file-transport.js';
export {
  SSE_DEFAULTS,
  agentUrl,
  createSseParser,
  sseTransport,
  type SseMessage,
  type SseTransportOptions,
} from './sse-transport.js';
export {
  WATCH_DEFAULTS,
  watchTransport,
  type WatchCredentials,
  type WatchTransportOptions,
} from './watch-transport.js';
export { SUPPORTED_MAJOR, checkVersion, majorOf, parseDocument } from './document.js';
export {
  FollowError,
  realClock,
  type ConsumerClock,
  type FailedDevice,
  type FollowErrorKind,
  type FollowedHealth,
  type StatusUpdate,
  type TransportKind,
} from './types.js';
export type { DeviceStatus, PublishedDevice, PublishedDocument, PublishedNode } from '../contracts/index.js';

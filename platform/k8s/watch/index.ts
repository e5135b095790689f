/**
 * A list+watch loop over any Kubernetes collection, caching only the fields used: it lists,
 * watches from the list's resourceVersion with bookmarks, restarts a watch that is silent for
 * `watchdogMs`, re-lists after 410 Gone (reporting what changed in the gap) and backs off on
 * errors. The controller's Node, Namespace and rules watches and the ingest function's
 * discovery run on it. The one door into platform/k8s/watch/; tests get the in-memory
 * FakeListWatchClient from `./testing.js`.
 */
export {
  LIST_PAGE_SIZE,
  configMapCollection,
  createKubeListWatchClient,
  namespacesCollection,
  nodesCollection,
  type KubeCollection,
  type ListPage,
} from './kube-list-watch-client.js';
export {
  objectKey,
  resourceVersionOf,
  type ListWatchClient,
  type RawObject,
  type WatchEvent,
  type WatchEventType,
  type WatchRequest,
} from './list-watch-client.js';
export { RESTART_REASONS, type RestartReason } from './metrics.js';
export {
  WATCH_DEFAULTS,
  createWatchLoop,
  type WatchHandlers,
  type WatchLoop,
  type WatchLoopDeps,
  type WatchLoopOptions,
} from './watch-loop.js';

/**
 * MindCluster in: the controller's optional observation source from MindCluster's device-info
 * ConfigMaps (docs/mindcluster.md). The one door into controller/mindcluster/.
 *
 * ```ts
 * const source = createMindClusterSource(
 *   { client: createMindClusterClient(kc, 'kube-system'), clock, log, registry,
 *     accept: (s) => host.accept(s, 'mindcluster'), isAgentNode: (n) => host.isAgentNode(n),
 *     isNode: (n) => nodes.get(n) !== undefined },
 *   { periodMs: 1000 },
 * );
 * host.setMerge((snapshot) =>
 *   mergeNodeProblems(mergeView(snapshot, source.view(snapshot.node)), source.nodeProblems(snapshot.node)),
 * );
 * ```
 */
export { createMindClusterClient, deviceInfoCollection } from './client.js';
export { mindClusterConfigSchema } from './config.js';
export {
  DEVICE_INFO_KEY,
  DEVICE_INFO_LABEL_SELECTOR,
  DEVICE_INFO_PREFIX,
  MANUALLY_SEPARATE_KEY,
  MAX_DEVICE_INFO_BYTES,
  parseDeviceInfo,
  type MindClusterDevice,
  type MindClusterFault,
  type MindClusterList,
  type MindClusterView,
  type ParseResult,
  type RefusalReason,
} from './device-info.js';
export { deviceInfoCheckCode, goJsonString, nodeInfoCheckCode } from './go-json.js';
export {
  BOOT_PREFIX,
  MINDCLUSTER_COLLECTOR,
  codesOf,
  healthOf,
  mergeNodeProblems,
  mergeView,
  snapshotOf,
} from './snapshot.js';
export {
  MAX_NODE_INFO_BYTES,
  NODE_INFO_KEY,
  NODE_INFO_NAMESPACE,
  NODE_INFO_PREFIX,
  nodeProblemOf,
  parseNodeInfo,
  type NodeFaultDevice,
  type NodeInfoResult,
  type NodeInfoView,
} from './node-info.js';
export {
  createMindClusterSource,
  type MindClusterSource,
  type MindClusterSourceDeps,
  type MindClusterSourceOptions,
} from './source.js';

/**
 * Self-healing, the one door into controller/remediation/: cordon, taint and drain through the
 * Eviction API, decided by a pure step (decide.ts) and carried out by the remediator (the only
 * code that changes the cluster for it: remediator.ts composes pass-loop.ts, pass.ts,
 * execute.ts, actions/, breaker.ts, drain-runner.ts), with its state on the Nodes and in a
 * ConfigMap (their formats in contracts/: remediation-record.ts, remediation-breaker.ts). The
 * thermal eviction preset is one more trigger of the same decision, timed by thermal.ts. Device
 * taints (device-taints/) put a DRA DeviceTaintRule on each failed device of a node.
 */
export {
  breakerConfigSchema,
  deviceTaintsConfigSchema,
  drainConfigSchema,
  parseRemediationConfig,
  remediationConfigSchema,
  thermalEvictionConfigSchema,
  triggerConfigSchema,
  uncordonConfigSchema,
  type RemediationConfig,
  type RemediationConfigInput,
} from './config.js';
export {
  REMEDIATION_CONFIGMAP,
  REMEDIATION_CONFIG_KEY,
  createRemediationConfigWatch,
  parseRemediationText,
  type RemediationConfigWatch,
  type RemediationConfigWatchOptions,
} from './config-watch.js';
export {
  breakerLimit,
  decide,
  matchingDevices,
  triggeredDevices,
  type Action,
  type Decision,
  type DecisionInput,
  type NodeFacts,
  type SkipReason,
  type TriggeredDevice,
} from './decide.js';
export { THERMAL_REASON, type Heat } from './thermal.js';
export {
  DRAIN_DEFAULTS,
  drainNode,
  type BlockingPod,
  type DrainConfig,
  type DrainDeps,
  type DrainReport,
  type DrainRequest,
} from './drain.js';
export { createKubePodClient, type PodClient } from './pod-client.js';
export { knownHolders } from './allocation.js';
export { createRemediationMetrics, type RemediationMetrics } from './metrics.js';
export {
  createKubeRemediationNodeClient,
  type NodeChange,
  type NodeState,
  type RemediationNodeClient,
  type Taint,
} from './node-client.js';
export {
  createDeviceTaintReconciler,
  createKubeDeviceTaintClient,
  desiredDeviceTaints,
  parseResourceSlice,
  ruleName,
  type DesiredRule,
  type DeviceTaintClient,
  type DeviceTaintNode,
  type RuleOwner,
  type StoredRule,
} from './device-taints/index.js';
export {
  createRemediator,
  type DrainFunction,
  type DrainResult,
  type Remediator,
  type RemediatorDeps,
  type RemediatorOptions,
} from './remediator.js';

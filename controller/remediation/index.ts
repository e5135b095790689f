/**
 * Self-healing, the one door into controller/remediation/: cordon, taint and drain through the
 * Eviction API, decided by a pure step (decide.ts) and carried out by the remediator (the only
 * code that changes the cluster for it), with its state on the Nodes and in a ConfigMap.
 */
export {
  breakerConfigSchema,
  drainConfigSchema,
  parseRemediationConfig,
  remediationConfigSchema,
  triggerConfigSchema,
  uncordonConfigSchema,
  type RemediationConfig,
  type RemediationConfigInput,
} from './config.js';
export {
  createRemediationConfigWatch,
  parseRemediationText,
  type RemediationConfigWatch,
  type RemediationConfigWatchOptions,
} from './config-watch.js';
export {
  breakerLimit,
  decide,
  matchingDevices,
  type Action,
  type Decision,
  type DecisionInput,
  type NodeFacts,
  type SkipReason,
} from './decide.js';
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
export { createRemediationMetrics, type RemediationMetrics } from './metrics.js';
export {
  createKubeRemediationNodeClient,
  type NodeChange,
  type NodeState,
  type RemediationNodeClient,
  type Taint,
} from './node-client.js';
export {
  createRemediator,
  type DrainFunction,
  type DrainResult,
  type Remediator,
  type RemediatorDeps,
  type RemediatorOptions,
} from './remediator.js';
export {
  BREAKER_CONFIGMAP,
  BREAKER_KEY,
  CLOSED_BREAKER,
  MAINTENANCE_ANNOTATION,
  REMEDIATION_ANNOTATION,
  REMEDIATION_CONFIGMAP,
  REMEDIATION_CONFIG_KEY,
  REMEDIATION_PHASES,
  UNHEALTHY_TAINT_KEY,
  breakerStateSchema,
  decodeBreaker,
  decodeNodeRecord,
  encodeBreaker,
  encodeNodeRecord,
  nodeRecordSchema,
  resetBreaker,
  type BreakerState,
  type NodeRecord,
  type RemediationPhase,
} from './state.js';

/**
 * Kubernetes-native signals of the controller: the Node condition NPUHealthy, the latched and
 * clear annotations on Nodes, and aggregated, rate-limited Events. The one door into
 * controller/node-status/; tests get the fakes from ./testing.js.
 */
export { LATCHED_ANNOTATION, decodeLatched, encodeLatched } from './annotations.js';
export {
  createKubeEventClient,
  createKubeNodeClient,
  type EventBody,
  type EventClient,
  type NodeClient,
  type NodeConditionPatch,
} from './clients.js';
export {
  MAX_MESSAGE,
  NPU_HEALTHY,
  desiredCondition,
  sameCondition,
  type DesiredCondition,
} from './condition.js';
export {
  createEventRecorder,
  type EventRecorder,
  type EventRecorderOptions,
  type InvolvedObject,
} from './event-recorder.js';
export {
  createNodeStatusWriter,
  type NodeFacts,
  type NodeStatusWriter,
  type NodeStatusWriterDeps,
  type NodeView,
} from './node-status-writer.js';

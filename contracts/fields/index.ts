/**
 * The door to the snapshot's building blocks: its bounds (limits.ts), its text rules
 * (text.ts), what hardware can report (readings.ts), the fields every family's devices share
 * and the frame of a family's payload (payload.ts), and the hot path's readers of plainly
 * valid values (plain.ts, as `plain`). A leaf: it imports nothing of the project, so the
 * families (families/) and the envelope (contracts/snapshot.ts) both build on it.
 */
export { SNAPSHOT_LIMITS } from './limits.js';
export {
  FAULT_CODE_PATTERN,
  NODE_NAME_PATTERN,
  PRINTABLE_TEXT_PATTERN,
  isPrintableText,
  text,
  withinSnapshotTimes,
} from './text.js';
export {
  READING_BOUNDS,
  bounded,
  describeReadingBounds,
  reading,
  withinReadingBounds,
  type ReadingBound,
  type ReadingKind,
} from './readings.js';
export {
  busId,
  canarySchema,
  errorCodes,
  familyPayloadSchema,
  healthText,
  readable,
  type AnyFamilyPayload,
  type CanaryReading,
  type FamilyPayloadSchema,
  type FamilyPayloadShape,
} from './payload.js';
export {
  NODE_PROBLEM_NAME_PATTERN,
  AGENT_NODE_PROBLEM_REASONS,
  MINDCLUSTER_NODE_PROBLEM_REASONS,
  NODE_PROBLEM_REASONS,
  nodeProblemSchema,
  nodeProblemsSchema,
  type NodeProblemReading,
  type NodeProblemReason,
} from './node-problems.js';
export {
  DNS_LABEL_PATTERN,
  DNS_SUBDOMAIN_PATTERN,
  deviceHolderPodSchema,
  deviceHolderSchema,
  deviceHoldersSchema,
  type DeviceHolderPod,
  type DeviceHolderReading,
} from './device-holders.js';
export * as plain from './plain.js';

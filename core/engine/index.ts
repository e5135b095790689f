/**
 * The detection engine's only public door (CONTRACT §2): `createEngine(rules?, { reasons?, families? })`
 * and the interface it implements. See api.ts for the semantics of each method, and
 * reason-table.ts for the reasons it raises.
 */
export { createEngine, type EngineOptions } from './engine.js';
export {
  REASON_TABLE,
  type CheckContext,
  type DeviceRaise,
  type NodeCheck,
  type NodeRaise,
  type ReasonEntry,
  type SampleCheck,
} from './reason-table.js';
export type {
  DetectionEngine,
  DeviceStatus,
  DropReason,
  EngineCensus,
  EngineStats,
  DeviceExplanation,
  ExplainedReason,
  ExplainedTimer,
  ExplainedWindow,
  Explanation,
  NodeExplanation,
  NotTracked,
  ObserveResult,
  PublisherInfo,
  ReloadableEngine,
  Transition,
} from './api.js';
export { compareText } from './document.js';
export { formatTimestamp, parseTimestamp } from './time.js';
export { MAX_SEQ_JUMP, admit, admitted, newBootTrack, type Admitted, type BootTrack } from './dedup.js';
export type { LatchedDevice, NodeSeed } from './seed.js';

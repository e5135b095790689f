/**
 * The detection engine's only public door (CONTRACT §2): `createEngine(rules?)` and the
 * interface it implements. See api.ts for the semantics of each method.
 */
export { createEngine, type EngineOptions } from './engine.js';
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

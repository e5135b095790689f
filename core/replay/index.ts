/**
 * Replay's only public door: recorded snapshots through the detection engine, streamed
 * (see replay.ts for the semantics), and the line splitter that feeds it.
 */
export {
  Replay,
  compareTransitions,
  formatTransition,
  parseSnapshotLine,
  replayLines,
  runReplay,
  type ReplayResult,
} from './replay.js';
export { LineTooLongError, MAX_LINE_BYTES, splitLines, type Line } from './lines.js';

/**
 * The one door to agent/probe/: running the node's health tools safely (`createExecTool`:
 * process-group kills, capped output, one-line errors) and the hardened probe around a
 * collector (`createProbe`: per-attempt timeout, retries, the cached last good sample, the
 * warm-up discard, metrics). Fakes for tests are in testing.ts.
 */
export {
  DEFAULT_MAX_OUTPUT_BYTES,
  ExecToolError,
  createExecTool,
  firstLine,
  killProcessGroup,
  toolEnvironment,
  type ExecFailureKind,
  type ExecTool,
} from './exec.js';
export {
  DEFAULT_MAX_LINE_BYTES,
  createStreamTool,
  type StreamTool,
  type ToolStream,
  type ToolStreamHandlers,
} from './stream.js';
export { PROBE_FAILURE_KINDS, type ProbeFailureKind } from './metrics.js';
export {
  DEFAULT_PROBE_OPTIONS,
  ProbeTimeoutError,
  createProbe,
  failureKindOf,
  type Probe,
  type ProbeOptions,
  type ProbeSample,
} from './probe.js';

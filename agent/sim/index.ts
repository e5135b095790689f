/**
 * The simulated node (`--collector sim`): its collector, its fault board and the
 * fault-injection API (the one door to agent/sim/). Refused unless `--sim-enabled`.
 */
export { SIM_FAULTS_PATH, createSimApi, type SimApiDeps } from './api.js';
export { createSimCollector } from './collector.js';
export {
  FaultBoard,
  SIM_FAULT_KINDS,
  SimFaultError,
  simFaultRequestSchema,
  type SimFault,
  type SimFaultKind,
  type SimFaultRequest,
} from './faults.js';

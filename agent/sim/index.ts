/**
 * The simulated node (`--collector sim`): its collector, its fault board and the
 * fault-injection API (the one door to agent/sim/). Refused unless `--sim-enabled`.
 */
import type { createSimApi } from './api.js';

export type { SimApiDeps } from './api.js';

/**
 * The fault API's builder, loaded on first use: it is an express app, and only a simulated
 * node serves it (an agent on a real node does not carry express in memory).
 */
export async function loadSimApi(): Promise<typeof createSimApi> {
  return (await import('./api.js')).createSimApi;
}
export { createSimCollector } from './collector.js';
export {
  FaultBoard,
  SIM_FAULT_KINDS,
  SIM_FAULTS_PATH,
  SimFaultError,
  simFaultRequestSchema,
  type SimFault,
  type SimFaultKind,
  type SimFaultRequest,
} from './faults.js';

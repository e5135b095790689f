/**
 * The simulated node (`--collector sim`): its collector, its fault board and the
 * fault-injection API (the one door to agent/sim/). Refused unless `--sim-enabled`.
 */
import type { createSimApi, readFaultToken } from './api.js';
import type { createSimCollector } from './collector.js';
import type { buildNode } from '../../core/sim/index.js';

export type { SimApiDeps } from './api.js';

/** What a simulated node is built from. */
export interface SimNodeParts {
  buildNode: typeof buildNode;
  createSimCollector: typeof createSimCollector;
  createSimApi: typeof createSimApi;
  readFaultToken: typeof readFaultToken;
}

/**
 * The simulated node's parts, loaded on first use: the simulator (core/sim) and the fault
 * API (an express app) are only needed with `--collector sim`, and an agent on a real node
 * does not carry them in memory.
 */
export async function loadSimNode(): Promise<SimNodeParts> {
  const [sim, collector, api] = await Promise.all([
    import('../../core/sim/index.js'),
    import('./collector.js'),
    import('./api.js'),
  ]);
  return {
    buildNode: sim.buildNode,
    createSimCollector: collector.createSimCollector,
    createSimApi: api.createSimApi,
    readFaultToken: api.readFaultToken,
  };
}
export {
  FaultBoard,
  SIM_FAULT_KINDS,
  SIM_FAULTS_PATH,
  SimFaultError,
  simFaultRequestSchema,
  simDeviceHolders,
  simNodeCheck,
  type SimFault,
  type SimFaultKind,
  type SimFaultRequest,
} from './faults.js';

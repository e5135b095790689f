/**
 * The agent's node checks (the one door to agent/node-checks/): the faults around the
 * accelerators, each check one folder with its own config section, run by one runner whose
 * problems travel in every snapshot (payload `node_problems`, CONTRACT §1.8).
 */
export type { NodeCheck, NodeProblem } from './check.js';
export {
  createNodeCheckRunner,
  mergeProblems,
  oneLine,
  type NodeCheckRunner,
  type NodeCheckRunnerDeps,
} from './runner.js';

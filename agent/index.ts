/**
 * The node agent (`npu-fault agent`): the one door to agent/. cli/agent.ts builds it from
 * the command line; tests and the demo build it in-process.
 */
export { createNodeAgent, type AgentDeps, type NodeAgent } from './agent.js';
export {
  COLLECTOR_KINDS,
  DEFAULT_TOKEN_FILE,
  SIM_NODE_KINDS,
  agentConfigSchema,
  type AgentConfig,
  type CollectorKind,
} from './config.js';
export { SIM_FAULT_KINDS, SIM_FAULTS_PATH, type SimFault, type SimFaultRequest } from './sim/index.js';

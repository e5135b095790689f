/** An agent's identity on the test control plane: stack/agent-identity.ts (shared with the pipeline demo). */
export { createAgentIdentity, type AgentIdentity, type AgentNodeOptions } from '../../stack/index.js';

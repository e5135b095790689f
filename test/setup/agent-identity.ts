/** An agent's identity on the test control plane: hack/agent-identity.ts (shared with the pipeline demo). */
export { createAgentIdentity, type AgentIdentity, type AgentNodeOptions } from '../../hack/agent-identity.js';

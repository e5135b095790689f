/**
 * The local development stack: what the demo, the benchmarks and the integration tests share
 * to run the pipeline on this machine (the control plane of hack/, the shipped RBAC rewritten
 * into a namespace, component processes under their ServiceAccounts' tokens, agents' pod-bound
 * identities, observers of the published status), and the development commands `npu-fault
 * demo` and `npu-fault bench`.
 *
 * None of it ships: the build (tsconfig.build.json) and the image leave stack/ out, and lint
 * keeps the product (cli/, the components, contracts/, core/, platform/, consumer/) from
 * importing it. The CLI reaches `devCommands` by a path the compiler does not follow
 * (cli/commands.ts), so a checkout has the commands and the image says they are not in it.
 */
import type { DevCommandLoaders } from '../cli/commands.js';

export { WITHOUT_NODE_CHECKS } from './agent-flags.js';
export { createAgentIdentity, type AgentIdentity, type AgentNodeOptions } from './agent-identity.js';
export {
  startControllerProcess,
  writeKubeConfig,
  type ControllerProcess,
  type LogLine,
} from './component-process.js';
export { kubeConfigWithToken } from './kube-config.js';
export { controllerRbacObjects, functionRbacObjects, manifestRbacObjects } from './manifest-rbac.js';
export {
  followFaultStream,
  watchStatus,
  watchObjects,
  watchStatusConfigMap,
  type SeenDocument,
  type SeenEntry,
} from './observe.js';
export {
  DEMO_LABEL,
  DEMO_RULES,
  deployPipeline,
  faultHeaders,
  startDemoCluster,
  type DemoAgent,
  type DemoCluster,
  type DemoStack,
  type StackTuning,
} from './pipeline-stack.js';

/** The development commands, each loaded only when run (the demo's pipeline loads the control plane). */
export const devCommands: DevCommandLoaders = {
  demo: async () => (await import('./demo/command.js')).demo,
  bench: async () => (await import('./bench-command.js')).bench,
};

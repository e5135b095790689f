/**
 * The inference canary (the one door to agent/canary/): its config section
 * (`canaryConfigSchema`, agent config `canary`) and the canary built from it. The stand-in
 * OpenAI server of tests and demos is in testing.ts.
 */
export {
  createCanary,
  MAX_CANARY_ANSWER_BYTES,
  type Canary,
  type CanaryDeps,
  type CanaryOptions,
  type CanaryVerdict,
} from './canary.js';
export {
  CANARY_APIS,
  DEFAULT_CANARY_MAX_TOKENS,
  DEFAULT_CANARY_PATTERN,
  DEFAULT_CANARY_PROMPT,
  canaryConfigSchema,
  type CanaryApi,
  type CanaryConfig,
} from './config.js';
export { CANARY_RESULTS, type CanaryResult } from './answer.js';

/**
 * The agent's sampling loop and what kernel events do to a snapshot (the one door to
 * agent/sampler/).
 */
export { applyKernelEvents, type AppliedEvents, type KernelEventLike } from './event-effects.js';
export { createSampler, type Sampler, type SamplerDeps, type SamplerOptions } from './sampler.js';

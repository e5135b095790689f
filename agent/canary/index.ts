/** The inference canary (the one door to agent/canary/). */
export { createCanary, type Canary, type CanaryOptions, type CanaryVerdict } from './canary.js';

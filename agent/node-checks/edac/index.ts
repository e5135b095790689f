/**
 * The host memory ECC check (the one door to agent/node-checks/edac/): the kernel's EDAC
 * counters; raises `host-memory-ecc`. Fake sysfs trees for tests are in testing.ts.
 */
export { createEdacCheck, type EdacCheckDeps } from './check.js';
export { edacCheckConfigSchema, type EdacCheckConfig } from './config.js';

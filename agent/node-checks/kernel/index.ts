/**
 * The one door to the kernel check: node problems (hung tasks, CPU lockups, OOM storms,
 * filesystem errors and read-only remounts, uncorrected machine checks) from the kernel's own
 * messages, which the kernel-log follower (agent/events, `onNodeEvent`) hands to `record`.
 * Its config section is `kernelCheckConfigSchema`; what each message is, core/parsers
 * kmsg-node.ts; the rules, docs/node-checks.md.
 */
export { kernelCheckConfigSchema, type KernelCheckConfig } from './config.js';
export { createKernelCheck, type KernelCheck, type KernelCheckDeps } from './kernel-check.js';

/**
 * The controller's annotations on Nodes. Their formats cross to people and other processes, so
 * they live in contracts/: the latched failures (`npu-fault.io/latched`,
 * contracts/latched-annotation.ts) and the clear request an operator sets (`npu-fault.io/clear`,
 * contracts/clear-annotation.ts).
 */
export { LATCHED_ANNOTATION, decodeLatched, encodeLatched } from '../../contracts/index.js';

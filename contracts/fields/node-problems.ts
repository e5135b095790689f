/**
 * The node problems an agent reports (CONTRACT §1.8): faults around the accelerators (the
 * network, NIC and RDMA links, NVLink, host memory, the kernel, filesystems) that the agent's
 * node checks find. Each is a node reason of the catalogue (contracts/reasons.ts) by the same
 * name; the payload carries the ones that hold now.
 *
 * A reason name the controllers do not know is accepted (a newer agent's) and raises nothing:
 * refusing it would refuse the node's device readings with it.
 */
import { z } from 'zod';
import { SNAPSHOT_LIMITS } from './limits.js';
import { text } from './text.js';

/** The node problems this version's agent checks can raise, in publication order. */
export const AGENT_NODE_PROBLEM_REASONS = [
  'network-unreachable',
  'nic-link-down',
  'rdma-port-down',
  'nvlink-down',
  'host-memory-ecc',
  'kernel-machine-check',
  'kernel-soft-lockup',
  'kernel-hung-task',
  'oom-kill-storm',
  'filesystem-readonly',
  'filesystem-error',
  'filesystem-full',
] as const;

/**
 * The node problems the controller's MindCluster source reads from NodeD's
 * `mindx-dl-nodeinfo-<node>` ConfigMaps (controller/mindcluster/node-info.ts) and adds to the
 * node's snapshots: a host hardware fault that separates the node, and one that only keeps
 * new jobs away (NodeD's SeparateFault and PreSeparateFault).
 */
export const MINDCLUSTER_NODE_PROBLEM_REASONS = ['host-hardware-fault', 'host-hardware-warning'] as const;

/** Every node problem a snapshot's `node_problems` may carry that raises a node reason, in publication order. */
export const NODE_PROBLEM_REASONS = [
  ...AGENT_NODE_PROBLEM_REASONS,
  ...MINDCLUSTER_NODE_PROBLEM_REASONS,
] as const;

/** One of NODE_PROBLEM_REASONS. */
export type NodeProblemReason = (typeof NODE_PROBLEM_REASONS)[number];

/** A reason name as the wire carries it: lower-case words joined by `-`. */
export const NODE_PROBLEM_NAME_PATTERN = /^[a-z][a-z0-9-]*$/;

/** One problem that holds on the node now: its reason and, for a person, what was seen. */
export const nodeProblemSchema = z.object({
  reason: z
    .string()
    .min(1)
    .max(SNAPSHOT_LIMITS.label)
    .regex(NODE_PROBLEM_NAME_PATTERN, 'must be a reason name (lower-case words joined by "-")'),
  /** What the check saw (`eth2 carrier down, 3 flaps in 10 min`); bounded, printable. */
  message: text(SNAPSHOT_LIMITS.problemMessage).default(''),
});

/** The node problems of a payload: at most SNAPSHOT_LIMITS.nodeProblems. Left out: none (or an older agent). */
export const nodeProblemsSchema = z.array(nodeProblemSchema).max(SNAPSHOT_LIMITS.nodeProblems);

/** One node problem as validated. */
export type NodeProblemReading = z.infer<typeof nodeProblemSchema>;

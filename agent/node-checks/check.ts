/**
 * The vocabulary of the agent's node checks: the faults around the accelerators (network,
 * links, NVLink, host memory, kernel, filesystems). Each check is one folder with its own
 * config section (node-problem-detector's one package per monitor); the runner
 * (runner.ts) calls each on its own period and the agent sends the problems that hold with
 * every snapshot (payload `node_problems`, CONTRACT §1.8).
 */
import type { NodeProblemReason } from '../../contracts/fields/index.js';

/** One problem that holds now: a node reason of the contract and, for a person, what was seen. */
export interface NodeProblem {
  readonly reason: NodeProblemReason;
  /** One line, at most 256 characters (`eth2: carrier down, 3 flaps in 10 min`). */
  readonly message: string;
}

/** A node check: reads its inputs when run and says which of its problems hold. */
export interface NodeCheck {
  /** Its config section and its `check` label in metrics and logs (`network`, `links`). */
  readonly name: string;
  /** How often the runner calls it. */
  readonly intervalMs: number;
  /**
   * One round at `now` (epoch ms): reads what it checks and returns the problems that hold.
   * Never rejects on what it reads: a source it cannot read is its own metric and one log
   * line per failing spell, and it says what that means (a problem, or none). Stops early
   * when `signal` aborts.
   */
  run(now: number, signal: AbortSignal): Promise<readonly NodeProblem[]>;
}

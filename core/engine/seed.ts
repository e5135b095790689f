/**
 * Seeding an engine from what outlives it (controller restart, failover after a gap): the
 * published document's node entries and the latched failures recorded on Nodes. Pure
 * types and helpers; engine.ts applies them.
 *
 * The rule is "newest evidence wins, and no published failure is forgotten":
 * - a device the engine does not know is created in the seed's status (failed or degraded;
 *   healthy and unknown need no seed), with its `since` and reason, so the next document
 *   says exactly what the previous publisher said;
 * - a device the engine knows keeps the engine's state when the engine has seen the node's
 *   samples up to the seed's `observed_at` or later (it is at least as current); otherwise a
 *   more severe seed status (failed > degraded) is adopted;
 * - latched reasons (by the rules in force) of a seeded failed device are latched again, with
 *   the counter baselines of a latched record, so a reset of the counters still clears them
 *   and nothing else does.
 * A seeded device then follows the usual rules: a failed one needs 5 clean samples to
 * recover (a latched one cannot count any), a seeded node is alive from `now` and becomes
 * agent-unreachable if no snapshot follows.
 */
import type { LatchedDevice, PublishedNode } from '../../contracts/index.js';
import type { DeviceStatus } from './api.js';

/** A latched device as the annotation carries it (contracts/latched-annotation.ts). */
export type { LatchedDevice };

/** A device whose latched failure is recorded on its Node (annotation npu-fault.io/latched). */

/** What is known of one node from outside the engine. */
export interface NodeSeed {
  node: string;
  /** The node's entry in the published document, if it had one. */
  entry?: PublishedNode;
  /** Latched failures recorded on the Node. */
  latched?: readonly LatchedDevice[];
}

/** How severe a status is, for "adopt the more severe". */
export function severity(status: DeviceStatus): number {
  switch (status) {
    case 'failed':
      return 3;
    case 'degraded':
      return 2;
    case 'unknown':
      return 1;
    case 'healthy':
      return 0;
  }
}

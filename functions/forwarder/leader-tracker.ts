/**
 * Who leads the controllers. The Lease holder when a LeaderSource is given and the Lease names
 * one (authoritative); otherwise what the answers say: a replica answering `leader: true` is
 * the leader; a follower's `leader_identity` fills the gap while none is known, or replaces
 * the one it names when that replica itself answers as a follower. The forwarder uses it to
 * choose where to retry, for `ready()` and for the idle flush.
 */
import type { ObservationsResponse } from '../../contracts/index.js';
import type { LeaderSource } from './replicas.js';

/** The leader before and after an answer changed it (undefined: none known). */
export interface LeaderChange {
  readonly leader: string | undefined;
  readonly from: string | undefined;
}

/** The leader as the Lease and the replicas' answers tell it. */
export class LeaderTracker {
  readonly #lease: LeaderSource | undefined;
  /** The leader as the answers tell it. */
  #learned: string | undefined;

  constructor(lease: LeaderSource | undefined) {
    this.#lease = lease;
  }

  /** The leader as known now; undefined when none is. */
  leader(): string | undefined {
    return this.#lease?.holder() ?? this.#learned;
  }

  /** Takes in what `answer` says about who leads; returns the change, if the leader known changed. */
  learn(answer: ObservationsResponse): LeaderChange | undefined {
    const before = this.leader();
    if (answer.leader) this.#learned = answer.identity;
    else if (this.#learned === undefined || this.#learned === answer.identity)
      this.#learned = answer.leader_identity ?? undefined;
    const after = this.leader();
    return after === before ? undefined : { leader: after, from: before };
  }
}

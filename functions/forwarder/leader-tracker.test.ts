import { describe, expect, it } from '@jest/globals';
import type { ObservationsResponse } from '../../contracts/index.js';
import { LeaderTracker } from './leader-tracker.js';
import { FakeLeaderSource } from './testing.js';

const leaderSays = (identity: string): ObservationsResponse => ({
  leader: true,
  identity,
  term: 1,
  results: [],
});
const followerSays = (identity: string, leader: string | null): ObservationsResponse => ({
  leader: false,
  identity,
  leader_identity: leader,
  results: [],
});

describe('LeaderTracker', () => {
  it('takes a replica answering as leader, and reports the change once', () => {
    const tracker = new LeaderTracker(undefined);
    expect(tracker.leader()).toBeUndefined();
    expect(tracker.learn(leaderSays('a'))).toEqual({ leader: 'a', from: undefined });
    expect(tracker.learn(leaderSays('a'))).toBeUndefined();
    expect(tracker.learn(leaderSays('b'))).toEqual({ leader: 'b', from: 'a' });
  });

  it("takes a follower's leader_identity only while none is known or when the leader itself follows", () => {
    const tracker = new LeaderTracker(undefined);
    expect(tracker.learn(followerSays('b', 'a'))).toEqual({ leader: 'a', from: undefined });
    // Another follower naming someone else does not replace a known leader.
    expect(tracker.learn(followerSays('c', 'c2'))).toBeUndefined();
    expect(tracker.leader()).toBe('a');
    // The leader itself answering as a follower hands over to whom it names (or to no one).
    expect(tracker.learn(followerSays('a', 'b'))).toEqual({ leader: 'b', from: 'a' });
    expect(tracker.learn(followerSays('b', null))).toEqual({ leader: undefined, from: 'b' });
  });

  it('lets the Lease holder outrank the answers while it names one', () => {
    const lease = new FakeLeaderSource('L');
    const tracker = new LeaderTracker(lease);
    expect(tracker.learn(leaderSays('a'))).toBeUndefined();
    expect(tracker.leader()).toBe('L');
    lease.set(undefined);
    expect(tracker.leader()).toBe('a');
  });
});

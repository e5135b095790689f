import { describe, expect, it } from '@jest/globals';
import { observationsResponseSchema, snapshotSchema, type PublishedNode } from '../../contracts/index.js';
import { gpuSnapshot } from '../../contracts/testing.js';
import { createEngine } from '../../core/engine/index.js';
import { ReplicaRequestError } from './errors.js';
import { parseAnswer } from './transport.js';

const replica = { identity: 'controller-0', url: 'http://127.0.0.1:1' };

function failure(status: number, text: string): ReplicaRequestError {
  try {
    parseAnswer(replica, status, text);
  } catch (error) {
    return error as ReplicaRequestError;
  }
  throw new Error('parseAnswer accepted it');
}

describe('parseAnswer', () => {
  it('accepts a leader and a follower answer', () => {
    const leader = {
      leader: true,
      identity: 'controller-0',
      term: 3,
      results: [{ node: 'n', accepted: true, entry: null }],
    };
    expect(parseAnswer(replica, 200, JSON.stringify(leader))).toEqual(leader);
    const follower = { leader: false, identity: 'controller-0', leader_identity: null, results: [] };
    expect(parseAnswer(replica, 200, JSON.stringify(follower))).toEqual(follower);
  });

  it('keeps only the contract’s keys, entries included, as the contract’s schema does', () => {
    const entry = failedEntry();
    const answer = {
      leader: true,
      identity: 'controller-0',
      term: 3,
      newer: 'field',
      results: [
        { node: 'gpu-node-1', accepted: true, entry: { ...entry, extra: 1 }, extra: 1 },
        { node: 'n2', accepted: false, dropped: 'duplicate', entry: null },
      ],
    };
    const parsed = parseAnswer(replica, 200, JSON.stringify(answer));
    expect(parsed).toEqual(observationsResponseSchema.parse(answer));
    expect(parsed).toEqual({
      leader: true,
      identity: 'controller-0',
      term: 3,
      results: [
        { node: 'gpu-node-1', accepted: true, entry },
        { node: 'n2', accepted: false, dropped: 'duplicate', entry: null },
      ],
    });
    const follower = {
      leader: false,
      identity: 'controller-1',
      leader_identity: 'controller-0',
      results: [{ node: 'n', accepted: true, entry: null, extra: 1 }],
    };
    expect(parseAnswer(replica, 200, JSON.stringify(follower))).toEqual({
      leader: false,
      identity: 'controller-1',
      leader_identity: 'controller-0',
      results: [{ node: 'n', accepted: true }],
    });
  });

  it.each([
    [
      401,
      '{"error":{"code":"unauthenticated","message":"invalid token"}}',
      'unauthorized',
      'controller-0 answered 401 (unauthenticated: invalid token)',
    ],
    [403, 'nope', 'unauthorized', 'controller-0 answered 403 (no error body)'],
    [
      503,
      '{"error":{"code":"not_ready","message":"seeding"}}',
      'http-error',
      'controller-0 answered 503 (not_ready: seeding)',
    ],
    [
      200,
      '{"leader":true}',
      'bad-answer',
      'controller-0: answer is not an observations response (identity: ',
    ],
    [200, 'not json', 'bad-answer', 'controller-0: answer is not an observations response (/: '],
    [200, '[]', 'bad-answer', 'controller-0: answer is not an observations response (/: '],
    [200, '{"leader":"yes","identity":"c","results":[]}', 'bad-answer', '(leader: '],
    [200, '{"leader":true,"identity":"","term":1,"results":[]}', 'bad-answer', '(identity: '],
    [200, '{"leader":true,"identity":"c","term":-1,"results":[]}', 'bad-answer', '(term: '],
    [200, '{"leader":true,"identity":"c","term":1.5,"results":[]}', 'bad-answer', '(term: '],
    [200, '{"leader":true,"identity":"c","term":1,"results":{}}', 'bad-answer', '(results: '],
    [200, '{"leader":true,"identity":"c","term":1,"results":[7]}', 'bad-answer', '(results.0.: '],
    [
      200,
      '{"leader":true,"identity":"c","term":1,"results":[{"node":"n","accepted":true}]}',
      'bad-answer',
      '(results.0.entry: ',
    ],
    [
      200,
      '{"leader":true,"identity":"c","term":1,"results":[{"node":"n","accepted":true,"entry":{"node":"n"}}]}',
      'bad-answer',
      '(results.0.entry.observed_at: ',
    ],
    [
      200,
      '{"leader":false,"identity":"c","leader_identity":null,"results":[{"node":"n","accepted":"yes"}]}',
      'bad-answer',
      '(results.0.accepted: ',
    ],
    [
      200,
      '{"leader":false,"identity":"c","leader_identity":null,"results":[{"node":"n","accepted":false,"dropped":"lost"}]}',
      'bad-answer',
      '(results.0.dropped: ',
    ],
    [
      200,
      '{"leader":false,"identity":"c","leader_identity":5,"results":[]}',
      'bad-answer',
      '(leader_identity: ',
    ],
  ])('%d %s → %s', (status, text, reason, message) => {
    const error = failure(status, text);
    expect(error).toBeInstanceOf(ReplicaRequestError);
    expect(error.reason).toBe(reason);
    expect(error.message).toContain(message);
    expect(error.message).not.toContain('\n');
  });
});

/** A real published entry of a failed node, from the engine the controllers run. */
function failedEntry(): PublishedNode {
  const engine = createEngine();
  const snapshot = snapshotSchema.parse(gpuSnapshot({ xids: [79] }));
  engine.observe(snapshot, Date.parse(snapshot.collected_at));
  const entry = engine.nodeEntry('gpu-node-1');
  if (!entry) throw new Error('the engine lists no entry for a node with XID 79');
  return entry;
}

import { describe, expect, it } from '@jest/globals';
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
  ])('%d %s → %s', (status, text, reason, message) => {
    const error = failure(status, text);
    expect(error).toBeInstanceOf(ReplicaRequestError);
    expect(error.reason).toBe(reason);
    expect(error.message.startsWith(message)).toBe(true);
    expect(error.message).not.toContain('\n');
  });
});

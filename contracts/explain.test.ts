import { describe, expect, it } from '@jest/globals';
import { EXPLAIN_PATH, explainPath, explainResponseSchema } from './explain.js';

describe('the explain API', () => {
  it('puts the node, then the device, under /v1/explain, each segment URI-encoded', () => {
    expect(EXPLAIN_PATH).toBe('/v1/explain');
    expect(explainPath('gpu-node-1', undefined)).toBe('/v1/explain/gpu-node-1');
    expect(explainPath('gpu-node-1', 'npu3')).toBe('/v1/explain/gpu-node-1/npu3');
    expect(explainPath('a b', '0000:3b:00.0/x')).toBe('/v1/explain/a%20b/0000%3A3b%3A00.0%2Fx');
  });

  it('answers only for a tracked node', () => {
    const answer = {
      leader: false,
      identity: 'controller-1',
      term: null,
      leader_identity: null,
      explanation: { tracked: false, node: 'gpu-node-1', device: null, message: 'not tracked' },
    };
    expect(explainResponseSchema.safeParse(answer).success).toBe(false);
  });
});

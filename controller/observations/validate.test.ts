import { describe, expect, it } from '@jest/globals';
import {
  DEFAULT_MAX_BATCH,
  observationsRequestSchema,
  observationsResponseSchema,
  type ObservationsResponse,
} from '../../contracts/index.js';
import { gpuSnapshot, observationsBody } from './testing.js';
import {
  InvalidBodyError,
  findPollutingKey,
  jsonPointer,
  observationsLimit,
  parseObservationsBody,
} from './validate.js';

const limit = observationsLimit(DEFAULT_MAX_BATCH);

function refusal(body: unknown, maxBatch = DEFAULT_MAX_BATCH): InvalidBodyError {
  try {
    parseObservationsBody(body, observationsLimit(maxBatch));
  } catch (error) {
    if (error instanceof InvalidBodyError) return error;
    throw error;
  }
  throw new Error('expected the body to be refused');
}

describe('jsonPointer', () => {
  it.each([
    [[], ''],
    [['observations', 3, 'snapshot'], '/observations/3/snapshot'],
    [['a/b', 'm~n', ''], '/a~1b/m~0n/'],
  ])('%j is %j (RFC 6901)', (path, pointer) => {
    expect(jsonPointer(path)).toBe(pointer);
  });
});

describe('findPollutingKey', () => {
  it.each([
    ['__proto__ at the top', '{"__proto__":{"x":1}}', '/__proto__'],
    ['__proto__ deep in an array', '{"a":[1,{"b":[{"__proto__":null}]}]}', '/a/1/b/0/__proto__'],
    ['constructor.prototype', '{"a":{"constructor":{"prototype":{}}}}', '/a/constructor'],
    ['the first in document order', '{"a":{"__proto__":1},"b":{"__proto__":1}}', '/a/__proto__'],
    ['a key that needs escaping on the way', '{"x/y":{"__proto__":1}}', '/x~1y/__proto__'],
  ])('finds %s', (_name, text, pointer) => {
    expect(findPollutingKey(JSON.parse(text))).toBe(pointer);
  });

  it.each([
    ['a harmless constructor', '{"constructor":"x","c":{"constructor":{"name":"y"}}}'],
    ['a string value "__proto__"', '{"k":"__proto__","l":["__proto__"]}'],
    ['a scalar', '42'],
    ['null', 'null'],
  ])('passes %s', (_name, text) => {
    expect(findPollutingKey(JSON.parse(text))).toBeUndefined();
  });

  it('walks nesting as deep as JSON.parse accepts without overflowing the stack', () => {
    const depth = 200_000;
    const deep = JSON.parse(`${'['.repeat(depth)}{"__proto__":1}${']'.repeat(depth)}`) as unknown;
    expect(findPollutingKey(deep)).toBe(`${'/0'.repeat(depth)}/__proto__`);
  });
});

describe('parseObservationsBody', () => {
  it('returns the batch with snapshot defaults filled and unknown keys stripped', () => {
    const request = parseObservationsBody(
      { observations: [{ snapshot: { ...gpuSnapshot(), extra: 1 }, note: 'x' }], future_field: true },
      limit,
    );
    expect(request.observations).toHaveLength(1);
    const snapshot = request.observations[0]?.snapshot;
    expect(snapshot?.cached).toBe(false);
    expect(snapshot).not.toHaveProperty('extra');
    expect(request).not.toHaveProperty('future_field');
  });

  it('accepts exactly maxBatch observations and refuses one more', () => {
    const many = (n: number): unknown =>
      observationsBody(...Array.from({ length: n }, (_, i) => gpuSnapshot({ seq: i + 1 })));
    expect(parseObservationsBody(many(5), observationsLimit(5)).observations).toHaveLength(5);
    expect(refusal(many(6), 5).message).toBe('/observations: expected at most 5 items');
  });

  it.each([
    ['not an object', null, 'body: expected object, got null'],
    ['observations not an array', { observations: {} }, '/observations: expected array, got object'],
    [
      'an observation without a snapshot',
      { observations: [{}] },
      '/observations/0/snapshot: required (expected object)',
    ],
    [
      'a fractional seq',
      observationsBody({ ...gpuSnapshot(), seq: 1.5 }),
      '/observations/0/snapshot/seq: expected an integer',
    ],
    [
      'an unknown family',
      observationsBody({ ...gpuSnapshot(), payload: { family: 'tpu' } }),
      "/observations/0/snapshot/payload/family: Invalid discriminator value. Expected '910B' | '310P' | 'nvidia'",
    ],
  ])('refuses %s naming the field', (_name, body, message) => {
    const error = refusal(body);
    expect(error).toMatchObject({ status: 400, code: 'invalid_body', message });
  });

  it('keeps a message through long unknown keys to one short printable line', () => {
    const key = `k\n${'x'.repeat(5000)}`;
    // An own __proto__ key, as JSON.parse makes it (an object literal would set the prototype).
    const polluted = JSON.parse('{"__proto__":1}') as unknown;
    const error = refusal({ observations: [{ snapshot: gpuSnapshot(), [key]: polluted }] });
    expect(error.message.length).toBeLessThanOrEqual(301);
    expect(error.message).not.toContain('\n');
    expect(error.message.startsWith('/observations/0/k\\nxxx')).toBe(true);
  });

  it('refuses a maxBatch that is not a positive integer', () => {
    expect(() => observationsRequestSchema(0)).toThrow(
      'observations maxBatch: expected a positive integer, got 0',
    );
  });
});

describe('observationsResponseSchema', () => {
  it('tells the leader’s answer from a follower’s by `leader`', () => {
    const leader: ObservationsResponse = {
      leader: true,
      identity: 'a',
      term: 3,
      results: [{ node: 'n', accepted: false, dropped: 'old-boot', entry: null }],
    };
    const follower: ObservationsResponse = {
      leader: false,
      identity: 'b',
      leader_identity: null,
      results: [{ node: 'n', accepted: true }],
    };
    expect(observationsResponseSchema.parse(leader)).toEqual(leader);
    expect(observationsResponseSchema.parse(follower)).toEqual(follower);
    expect(observationsResponseSchema.safeParse({ ...follower, leader: true }).success).toBe(false);
    expect(
      observationsResponseSchema.safeParse({
        ...leader,
        results: [{ node: 'n', accepted: false, dropped: 'x' }],
      }).success,
    ).toBe(false);
  });
});

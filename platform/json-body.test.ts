import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { findPollutingKey, mayHoldPollutingKey } from './json-body.js';

/** JSON text of `value` with each character of each key escaped as `\uXXXX` where `escape` says. */
function withEscapedKeys(value: unknown, escape: (key: string, index: number) => boolean): string {
  if (Array.isArray(value)) return `[${value.map((item) => withEscapedKeys(item, escape)).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const members = Object.entries(value).map(([key, item]) => {
    const spelled = [...key]
      .map((char, i) =>
        escape(key, i) && char.length === 1
          ? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`
          : JSON.stringify(char).slice(1, -1),
      )
      .join('');
    return `"${spelled}":${withEscapedKeys(item, escape)}`;
  });
  return `{${members.join(',')}}`;
}

const key = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'snapshot', 'node'),
  fc.string(),
);
const body = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.jsonValue({ maxDepth: 0 }),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(key, tie('value'), { maxKeys: 3 }),
  ),
})).value;

describe('mayHoldPollutingKey', () => {
  it('never clears a body that holds a polluting key, however its keys are spelled', () => {
    fc.assert(
      fc.property(body, fc.integer(), (value, seed) => {
        const text = withEscapedKeys(value, (k, i) => (seed + k.length * 31 + i) % 3 === 0);
        const parsed: unknown = JSON.parse(text);
        if (findPollutingKey(parsed) !== undefined)
          expect(mayHoldPollutingKey(Buffer.from(text), 'utf-8')).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('clears a body without those words or escapes, and sends any other charset to the walk', () => {
    const plain = Buffer.from('{"snapshot":{"node":"n","constructor":"x"}}');
    expect(mayHoldPollutingKey(plain, 'utf-8')).toBe(false);
    expect(mayHoldPollutingKey(plain, 'utf8')).toBe(false);
    expect(mayHoldPollutingKey(plain, 'utf-16le')).toBe(true);
    expect(mayHoldPollutingKey(plain, undefined)).toBe(true);
    expect(mayHoldPollutingKey(Buffer.from('{"a":"\\u0041"}'), 'utf-8')).toBe(true);
    expect(mayHoldPollutingKey(Buffer.from('{"__proto__":1}'), 'utf-8')).toBe(true);
    expect(mayHoldPollutingKey(Buffer.from('{"constructor":{"prototype":1}}'), 'utf-8')).toBe(true);
  });
});

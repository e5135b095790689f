import { describe, expect, it } from '@jest/globals';
import { LabelSelectorError, matchesLabels, parseLabelSelector } from './label-selector.js';

const labels = { 'node.kubernetes.io/instance-type': 'a2', accel: 'npu', 'team/x': '' };

describe('label selector', () => {
  it.each([
    ['k=v', 'accel=npu', true],
    ['k=v, other value', 'accel=gpu', false],
    ['k==v', 'accel==npu', true],
    ['k!=v, same value', 'accel!=npu', false],
    ['k!=v, other value', 'accel!=gpu', true],
    ['k!=v, label absent', 'missing!=x', true],
    ['k', 'accel', true],
    ['k absent', 'missing', false],
    ['!k', '!missing', true],
    ['!k present', '! accel', false],
    ['in', 'accel in (gpu, npu)', true],
    ['in, absent', 'missing in (a)', false],
    ['notin', 'accel notin (gpu,tpu)', true],
    ['notin, listed', 'accel notin (npu)', false],
    ['notin, absent', 'missing notin (a)', true],
    ['prefixed key', 'node.kubernetes.io/instance-type=a2', true],
    ['empty value', 'team/x=', true],
    ['several terms, all hold', 'accel=npu,node.kubernetes.io/instance-type in (a1,a2),!missing', true],
    ['several terms, one fails', 'accel=npu, !team/x', false],
    ['no space before (', 'accel in(npu)', true],
    ['spaces around', '  accel = npu ,  !missing  ', true],
  ])('%s: %s → %s', (_name, text, expected) => {
    expect(matchesLabels(parseLabelSelector(text), labels)).toBe(expected);
  });

  it('an empty selector has no terms and matches everything', () => {
    const selector = parseLabelSelector('   ');
    expect(selector.terms).toEqual([]);
    expect(matchesLabels(selector, {})).toBe(true);
  });

  it('reads the terms', () => {
    expect(parseLabelSelector('a=b, c!=d, e in (f, g), h notin (i), j, !k').terms).toEqual([
      { key: 'a', op: 'in', values: ['b'] },
      { key: 'c', op: 'notin', values: ['d'] },
      { key: 'e', op: 'in', values: ['f', 'g'] },
      { key: 'h', op: 'notin', values: ['i'] },
      { key: 'j', op: 'exists' },
      { key: 'k', op: 'not-exists' },
    ]);
  });

  it.each([
    ['a=b,,c', 'label selector term 2 "": empty term'],
    ['a=b, c in (d', 'label selector term 2 "c in (d": missing ")"'],
    ['a in (b))', 'label selector term 1 "a in (b))": unbalanced parentheses'],
    ['a in ((b))', 'unbalanced parentheses'],
    ['a in ()', 'label selector term 1 "a in ()": "in" needs at least one value'],
    ['a > 1', 'label selector term 1 "a > 1": expected k=v, k==v, k!=v, k, !k, k in (a,b) or k notin (a,b)'],
    ['a=b=c', 'label selector term 1 "a=b=c": expected'],
    ['a=-b', 'value "-b" must be empty or 1-63 characters'],
    ['x/y/z=1', 'key "x/y/z" has more than one "/"'],
    ['Bad_Prefix/k=1', 'key prefix "Bad_Prefix" must be a DNS subdomain'],
    ['k-=1', 'key name "k-" must be 1-63 characters'],
    [`${'k'.repeat(64)}=1`, 'must be 1-63 characters'],
  ])('refuses %s in one line naming the term', (text, message) => {
    let error: unknown;
    try {
      parseLabelSelector(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LabelSelectorError);
    expect((error as Error).message).toContain(message);
    expect((error as Error).message).not.toContain('\n');
  });
});

import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { defaultRules, parseRules } from '../core/rules/index.js';

describe('contracts/rules.default.yaml', () => {
  it('spells out exactly the built-in defaults (the documented file cannot drift from the code)', () => {
    const text = readFileSync(new URL('./rules.default.yaml', import.meta.url), 'utf8');
    expect(parseRules(text)).toEqual(defaultRules());
  });
});

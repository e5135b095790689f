import { describe, expect, it } from '@jest/globals';
import { RulesError, fieldPath, quote } from './rules-error.js';

describe('RulesError', () => {
  it('describes itself as <file>:<line>: <field>: <message>', () => {
    const error = new RulesError('high_temp.threshold_c', 'expected number', 7);
    expect(error.describe('rules.yaml')).toBe('rules.yaml:7: high_temp.threshold_c: expected number');
    expect(error.message).toBe('line 7: high_temp.threshold_c: expected number');
    expect(error.code).toBe('rules_error');
  });

  it('leaves the field out when the text itself is at fault', () => {
    expect(new RulesError('', 'more than one YAML document', 3).describe('r.yaml')).toBe(
      'r.yaml:3: more than one YAML document',
    );
  });

  it('keeps every part on one line, whatever it is given', () => {
    const error = new RulesError('a\nb', 'first line\n  second line\r\n\tthird', 2);
    expect(error.describe('dir/my\nrules.yaml')).toBe(
      'dir/my rules.yaml:2: a b: first line second line third',
    );
  });

  it('escapes invisible characters and cuts a long message', () => {
    const error = new RulesError('', `tag !x\u202ey${'z'.repeat(1000)}`, 1);
    expect(error.detail.startsWith('tag !x\\u202ey')).toBe(true);
    expect([...error.detail].length).toBe(241);
    expect(error.detail.endsWith('…')).toBe(true);
  });

  it('falls back to line 1 for a line that is not a positive whole number', () => {
    expect(new RulesError('', 'x', 0).line).toBe(1);
    expect(new RulesError('', 'x', Number.NaN).line).toBe(1);
  });
});

describe('fieldPath', () => {
  it.each([
    [['high_temp', 'threshold_c'], 'high_temp.threshold_c'],
    [['xids', 'critical', 1], 'xids.critical[1]'],
    [['fault_codes', '0x80E0'], 'fault_codes.0x80E0'],
    [['fault_codes', '__proto__'], 'fault_codes.__proto__'],
    [['fault_codes', '80 E0'], 'fault_codes["80 E0"]'],
    [['a.b'], '["a.b"]'],
    [['a', 'x"].y'], 'a["x\\"].y"]'],
    [['', 0], '[""][0]'],
    [['line\nbreak', 'x'], '["line\\nbreak"].x'],
    [[], ''],
  ])('writes %j as %s', (path, text) => {
    expect(fieldPath(path)).toBe(text);
  });
});

describe('quote', () => {
  it('cuts long text and escapes what a terminal would not show', () => {
    expect(quote('k'.repeat(100))).toBe(`"${'k'.repeat(40)}…"`);
    expect(quote('a\u2028b\u200bc\ud800')).toBe('"a\\u2028b\\u200bc\\ud800"');
  });
});

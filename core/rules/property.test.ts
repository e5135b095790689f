/**
 * Whatever the text, parseRules returns valid Rules or throws a RulesError whose report is
 * exactly one line `<file>:<line>: <field>: <message>` (or `<file>:<line>: <message>` when
 * the text itself is at fault), with a line that exists in the text. Never another exception.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { RulesError, parseRules, rulesSchema } from './index.js';

/** Tokens that steer random text into YAML's corners: indicators, anchors, tags, rules fields, odd keys. */
const TOKENS = [
  ...['-', '- ', '? ', ':', ': ', ',', '[', ']', '{', '}', '#', '"', "'", '|', '>', '\\', '\n', '\r\n', '\t'],
  ...[' ', '  ', '    ', '---', '...', '%YAML 1.1\n', '%TAG ! tag:x,2000:\n', '\u2028', '\u202e', '\ufeff'],
  ...['&a ', '*a', '&b ', '*b', '!!str ', '!!int ', '!!map ', '!!omap ', '!!binary ', '!foo ', '<<'],
  ...['__proto__', 'constructor', 'prototype', 'window_samples', 'high_temp', 'threshold_c', 'min_samples'],
  ...['fault_codes', 'fault_codes_default', 'xids', 'watched', 'critical', 'warning', 'latched', 'publish'],
  ...['80E01801', '80e01801', '0x80E0', '00001234', '1e3', '.inf', '.nan', 'true', '~', 'null', '2001-12-14'],
];

const yamlishText = fc
  .array(
    fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...TOKENS) },
      { weight: 2, arbitrary: fc.integer({ min: -5, max: 200 }).map(String) },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }) },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 4 }) },
    ),
    { maxLength: 60 },
  )
  .map((tokens) => tokens.join(''));

/** YAML-ish lines: `<indent>[- ]<key>:<value>`, so that most texts are mappings and reach validation. */
const token = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...TOKENS) },
  { weight: 1, arbitrary: fc.integer({ min: -5, max: 200 }).map(String) },
);
const yamlishLines = fc
  .array(
    fc
      .tuple(
        fc.constantFrom('', '', '  ', '    ', '  - ', '- ', ' '),
        fc.array(token, { minLength: 1, maxLength: 2 }),
        fc.constantFrom(': ', ':', ': ', ':\n'),
        fc.array(token, { maxLength: 4 }),
      )
      .map(([indent, key, colon, value]) => `${indent}${key.join('')}${colon}${value.join(' ')}`),
    { maxLength: 12 },
  )
  .map((lines) => `${lines.join('\n')}\n`);

/** Rules-shaped JSON: known fields with arbitrary values, plus arbitrary extra keys. */
const FIELDS = ['window_samples', 'high_temp', 'xids', 'latched', 'fault_codes', 'overlays', 'publish'];
const rulesishJson = fc
  .tuple(
    fc.dictionary(fc.constantFrom(...FIELDS), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
    fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }),
    fc.constantFrom(undefined, 2, '\t'),
  )
  .map(([known, extra, indent]) => JSON.stringify({ ...extra, ...known }, null, indent));

/** Asserts the outcome of parseRules(text) keeps the contract. */
function checkOutcome(text: string): void {
  let outcome: unknown;
  try {
    outcome = parseRules(text);
  } catch (error) {
    if (!(error instanceof RulesError)) throw error;
    const report = error.describe('dir/r.yaml');
    expect(report).not.toMatch(/[\p{Cc}\u2028\u2029\u0085]/u);
    const match = /^dir\/r\.yaml:([1-9]\d*): (\S.*)$/u.exec(report);
    expect(match).not.toBeNull();
    // The line exists: at most one past the last line break (an error at the very end).
    expect(error.line).toBeLessThanOrEqual(text.split(/\r\n|\r|\n/).length + 1);
    expect(report).toBe(`dir/r.yaml:${error.line}: ${error.path ? `${error.path}: ` : ''}${error.detail}`);
    expect(error.detail.length).toBeGreaterThan(0);
    return;
  }
  expect(rulesSchema.safeParse(outcome).success).toBe(true);
}

describe('parseRules on arbitrary input', () => {
  it('YAML-ish text: valid Rules or a one-line RulesError', () => {
    fc.assert(fc.property(yamlishText, checkOutcome), { numRuns: 1000 });
  });

  it('YAML-ish lines: valid Rules or a one-line RulesError', () => {
    fc.assert(fc.property(yamlishLines, checkOutcome), { numRuns: 1000 });
  });

  it('any text at all: valid Rules or a one-line RulesError', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), checkOutcome), { numRuns: 300 });
  });

  it('arbitrary JSON values: valid Rules or a one-line RulesError', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
        checkOutcome,
      ),
      {
        numRuns: 300,
      },
    );
  });

  it('rules-shaped JSON with arbitrary values: valid Rules or a one-line RulesError', () => {
    fc.assert(fc.property(rulesishJson, checkOutcome), { numRuns: 500 });
  });

  it('keeps any unquoted hex fault code as written, made canonical', () => {
    const hexDigits = fc.string({
      unit: fc.constantFrom(...'0123456789abcdefABCDEF'),
      minLength: 1,
      maxLength: 16,
    });
    const written = fc
      .tuple(fc.constantFrom('', '0x', '0X'), hexDigits)
      .map(([prefix, digits]) => prefix + digits);
    fc.assert(
      fc.property(written, fc.constantFrom('critical', 'warning'), (code, severity) => {
        const canonical = code.replace(/^0x/i, '').toUpperCase();
        expect(parseRules(`fault_codes:\n  ${code}: ${severity}\n`).fault_codes).toEqual({
          [canonical]: severity,
        });
        expect(parseRules(`fault_codes: {${code}: ${severity}}\n`).fault_codes).toEqual({
          [canonical]: severity,
        });
      }),
      { numRuns: 500 },
    );
  });
});

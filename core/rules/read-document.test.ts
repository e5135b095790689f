/**
 * Every way a rules text can be refused ends in one line naming file, line and (where one is
 * at fault) field: `<file>:<line>: <field>: <message>` or `<file>:<line>: <message>`.
 */
import { describe, expect, it } from '@jest/globals';
import { MAX_NESTING, MAX_RULES_CHARS, MAX_VALUES, RulesError, parseRules } from './index.js';
import { readDocument } from './read-document.js';

/** The one-line report of the RulesError that parseRules throws for `text`. */
function reportOf(text: string): string {
  try {
    parseRules(text);
  } catch (error) {
    if (error instanceof RulesError) return error.describe('r.yaml');
    throw error;
  }
  throw new Error('expected a RulesError');
}

/** The classic "billion laughs": nine levels of nine aliases each, 9^9 values if expanded. */
function billionLaughs(): string {
  const names = 'abcdefghi';
  const lines = ['a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
  for (let i = 1; i < names.length; i++) {
    lines.push(
      `${names[i]}: &${names[i]} [${Array(9)
        .fill(`*${names[i - 1]}`)
        .join(', ')}]`,
    );
  }
  return `${lines.join('\n')}\n`;
}

describe('readDocument: keys are the text written', () => {
  it('keeps plain keys YAML would read as numbers, booleans or null', () => {
    const { value } = readDocument('00001234: a\n0x80E0: b\n80E01801: c\n.inf: d\ntrue: e\n~: f\n1e3: g\n');
    expect(Object.keys(value ?? {})).toEqual(['00001234', '0x80E0', '80E01801', '.inf', 'true', '~', '1e3']);
  });

  it('still types values', () => {
    expect(readDocument('a: 0x10\nb: 1e3\nc: true\nd: ~\ne: "80"\n').value).toEqual({
      a: 16,
      b: 1000,
      c: true,
      d: null,
      e: '80',
    });
  });

  it('yields no value for a text with no content', () => {
    for (const text of ['', '\n', '# only a comment\n', '~\n', '---\n']) {
      expect(readDocument(text).value).toBeUndefined();
    }
  });
});

describe('rules-loader errors: one line naming file, line and field', () => {
  it.each([
    [
      '__proto__ inside fault_codes',
      'fault_codes:\n  __proto__: critical\n',
      'r.yaml:2: fault_codes.__proto__:',
    ],
    ['__proto__ in JSON', '{"fault_codes": {"__proto__": "critical"}}', 'r.yaml:1: fault_codes.__proto__:'],
    ['__proto__ at the top', 'window_samples: 3\n__proto__: {}\n', 'r.yaml:2: __proto__:'],
    ['constructor nested', 'high_temp:\n  constructor: 1\n', 'r.yaml:2: high_temp.constructor:'],
    ['prototype in a list item', 'latched:\n  - {prototype: 1}\n', 'r.yaml:2: latched[0].prototype:'],
    ['quoted __proto__', 'publish: {"__proto__": 1}\n', 'r.yaml:1: publish.__proto__:'],
  ])('refuses a prototype key at any depth: %s', (_name, text, where) => {
    const key = /\.?(\w+):$/.exec(where)?.[1] ?? '';
    expect(reportOf(text)).toBe(`${where} '${key}' is not allowed as a key`);
  });

  it('stops an alias bomb at the line and field of the alias that sets it off', () => {
    expect(reportOf(billionLaughs())).toMatch(
      new RegExp(`^r\\.yaml:(\\d+): ([a-i])\\[\\d+\\]: aliases expand to more than ${MAX_VALUES} values$`),
    );
    // The reported line holds the reported field's alias.
    const text = billionLaughs();
    const [, line, field] = /^r\.yaml:(\d+): ([a-i])\[/.exec(reportOf(text)) ?? [];
    expect(text.split('\n')[Number(line) - 1]).toMatch(new RegExp(`^${field}: &${field} \\[\\*`));
  });

  it('stops aliases that multiply a list past the budget, at the list item', () => {
    const uses = Math.ceil(MAX_VALUES / 10) + 1;
    const text = `x: &x [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\nxids:\n  watched: [${Array(uses).fill('*x').join(', ')}]\n`;
    expect(reportOf(text)).toMatch(
      new RegExp(`^r\\.yaml:3: xids\\.watched\\[\\d+\\]: aliases expand to more than ${MAX_VALUES} values$`),
    );
  });

  it('refuses more values than the budget without aliases too', () => {
    const text = `latched: [${'a,'.repeat(MAX_VALUES)}a]\n`;
    expect(reportOf(text)).toMatch(
      new RegExp(`^r\\.yaml:\\d+: latched\\[\\d+\\]: the text holds more than ${MAX_VALUES} values$`),
    );
  });

  it.each([
    [
      'an alias to no anchor',
      'window_samples: *nope\n',
      'r.yaml:1: window_samples: alias "*nope" names no anchor before it',
    ],
    [
      'an alias inside its own anchor',
      'latched: &l [*l]\n',
      'r.yaml:1: latched[0]: alias "*l" lies inside its own anchor',
    ],
    [
      'a key written twice',
      'window_samples: 5\nwindow_samples: 6\n',
      'r.yaml:2: window_samples: written twice in the same mapping',
    ],
    [
      'a nested key written twice',
      'high_temp:\n  threshold_c: 1\n  min_samples: 2\n  threshold_c: 2\n',
      'r.yaml:4: high_temp.threshold_c: written twice in the same mapping',
    ],
    [
      'a duplicate in JSON',
      '{"xids": {"watched": [], "watched": []}}',
      'r.yaml:1: xids.watched: written twice in the same mapping',
    ],
    [
      'an unknown tag',
      'high_temp:\n  threshold_c: !celsius 80\n',
      'r.yaml:2: high_temp.threshold_c: Unresolved tag: !celsius',
    ],
    [
      'two documents',
      'window_samples: 3\n---\nwindow_samples: 4\n',
      'r.yaml:2: more than one YAML document (a rules file holds one)',
    ],
    [
      'a list as a key',
      '? [a]\n: 1\n',
      'r.yaml:1: a key must be plain text, not a list, mapping, alias or tagged value',
    ],
    [
      'an alias as a key',
      'x: &k window_samples\n*k : 1\n',
      'r.yaml:2: a key must be plain text, not a list, mapping, alias or tagged value',
    ],
    [
      'a YAML 1.1 ordered map',
      '%YAML 1.1\n---\nlatched: !!omap [a: 1]\n',
      'r.yaml:3: latched[0]: a list item must be a value, not key: value',
    ],
    [
      'a merge key (not supported)',
      'overlays: &o {collector_error_s: 20}\npublish:\n  <<: *o\n',
      'r.yaml:3: publish["<<"]: unknown field',
    ],
    ['a top-level scalar', 'hello\n', 'r.yaml:1: the rules must be a mapping of field: value, not text'],
    ['a top-level number', '\n\n42\n', 'r.yaml:3: the rules must be a mapping of field: value, not a number'],
  ])('refuses %s', (_name, text, report) => {
    expect(reportOf(text)).toBe(report);
  });

  it.each([
    ['an unterminated flow mapping', 'high_temp: {threshold_c: 80\n', 2],
    ['an unterminated flow list', 'xids:\n  watched: [1, 2\nlatched: []\n', 3],
    ['bad indentation', 'high_temp:\n  threshold_c: 80\n   min_samples: 2\n', 2],
    ['a tab as indentation', 'high_temp:\n\tthreshold_c: 80\n', 2],
    ['an unclosed quote', 'fault_codes_default: "warning\n', 2],
    ['a reserved character', 'fault_codes_default: @warning\n', 1],
  ])('reports a YAML syntax error (%s) at its line', (_name, text, line) => {
    expect(reportOf(text)).toMatch(new RegExp(`^r\\.yaml:${line}: \\S`));
  });

  it('names the value a syntax error lies in, never a key the parser guessed', () => {
    // Mis-indented, `min_samples` is glued onto the line above as a key `80 min_samples`.
    expect(reportOf('high_temp:\n  threshold_c: 80\n   min_samples: 2\n')).toMatch(
      /^r\.yaml:2: high_temp\.threshold_c: /,
    );
  });

  it('refuses nesting deeper than the limit before the parser recurses into it', () => {
    expect(reportOf('['.repeat(MAX_RULES_CHARS))).toBe(`r.yaml:1: nested deeper than ${MAX_NESTING} levels`);
    expect(reportOf('- '.repeat(MAX_RULES_CHARS / 2))).toBe(
      `r.yaml:1: nested deeper than ${MAX_NESTING} levels`,
    );
    expect(reportOf(`a: 1\nb: ${'{x: '.repeat(MAX_NESTING)}`)).toBe(
      `r.yaml:2: nested deeper than ${MAX_NESTING} levels`,
    );
  });

  it('refuses nesting by indentation at the line and field that go too deep', () => {
    const depth = MAX_NESTING + 1;
    const text = `${Array.from({ length: depth }, (_, i) => `${' '.repeat(i)}a:`).join('\n')} 1\n`;
    expect(reportOf(text)).toBe(
      `r.yaml:${depth}: ${Array(depth).fill('a').join('.')}: nested deeper than ${MAX_NESTING} levels`,
    );
  });

  it('refuses a text over the size limit at the line where the limit falls', () => {
    const text = '#\n'.repeat(MAX_RULES_CHARS / 2 + 1);
    expect(reportOf(text)).toBe(
      `r.yaml:${MAX_RULES_CHARS / 2 + 1}: longer than ${MAX_RULES_CHARS} characters, ` +
        'the most a rules file may hold (this line crosses it)',
    );
    expect(() => parseRules('#\n'.repeat(MAX_RULES_CHARS / 2))).not.toThrow();
  });

  it('keeps a key with a line break or bidi control on one line, quoted', () => {
    expect(reportOf('"bad\\nkey": 1\n')).toBe('r.yaml:1: ["bad\\nkey"]: unknown field');
    expect(reportOf('high_temp: {"a\u202eb": 1}\n')).toBe('r.yaml:1: high_temp["a\\u202eb"]: unknown field');
  });
});

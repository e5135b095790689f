import { describe, expect, it } from '@jest/globals';
import { DEFAULT_RULES } from '../../contracts/index.js';
import { RulesError, parseRules, reloadRules } from './index.js';

function errorOf(text: string): RulesError {
  try {
    parseRules(text);
  } catch (error) {
    if (error instanceof RulesError) return error;
    throw error;
  }
  throw new Error('expected a RulesError');
}

describe('parseRules', () => {
  it.each([
    ['empty', ''],
    ['comment only', '# nothing\n'],
    ['empty JSON object', '{}'],
    ['null document', '~'],
  ])('yields the defaults for %s', (_name, text) => {
    expect(parseRules(text)).toEqual(DEFAULT_RULES);
  });

  it('reads YAML and JSON alike', () => {
    const yaml = parseRules('high_temp:\n  threshold_c: 80\nxids:\n  watched: [79, 13]\n  critical: [79]\n');
    const json = parseRules(
      '{"high_temp": {"threshold_c": 80}, "xids": {"watched": [79, 13], "critical": [79]}, "latched": []}',
    );
    expect(yaml.high_temp).toEqual({ threshold_c: 80, min_samples: 3 });
    expect(json.xids).toEqual({ watched: [79, 13], critical: [79] });
    expect(json.latched).toEqual([]);
  });

  describe('fault codes: keys are the text written', () => {
    it('keeps unquoted codes that YAML would read as numbers (00001234, 0x80E0, 80E01801)', () => {
      // YAML alone reads these keys as 1234, 32992 and Infinity.
      const text = 'fault_codes: { 00001234: critical, 0x80E0: warning, 80E01801: critical, 1E3: warning }\n';
      expect(parseRules(text).fault_codes).toEqual({
        '00001234': 'critical',
        '80E0': 'warning',
        '80E01801': 'critical',
        '1E3': 'warning',
      });
    });

    it('reads block, flow, quoted and JSON spellings of the same table alike', () => {
      const spellings = [
        'fault_codes:\n  00001234: critical\n  80e01801: warning\n',
        'fault_codes: {\'00001234\': critical, "80e01801": warning}\n',
        '{"fault_codes": {"00001234": "critical", "80e01801": "warning"}}',
      ];
      for (const text of spellings) {
        expect(parseRules(text).fault_codes).toEqual({ '00001234': 'critical', '80E01801': 'warning' });
      }
    });

    it('ignores case and a 0x prefix, keeping leading zeros (codes match as text)', () => {
      expect(
        parseRules('fault_codes: {0x80e00209: critical, 0X0000abcd: warning, abcd: critical}\n').fault_codes,
      ).toEqual({
        '80E00209': 'critical',
        '0000ABCD': 'warning',
        ABCD: 'critical',
      });
    });

    it.each([
      ['case', 'fault_codes:\n  80e01801: critical\n  80E01801: warning\n', '80E01801', '80e01801'],
      ['0x', 'fault_codes:\n  80E01801: critical\n  0x80e01801: warning\n', '0x80e01801', '80E01801'],
    ])('refuses two keys naming the same code (%s), at the second', (_name, text, second, first) => {
      const error = errorOf(text);
      expect(error.describe('r.yaml')).toBe(
        `r.yaml:3: fault_codes.${second}: names the same code as '${first}' (codes ignore case and 0x)`,
      );
    });

    it('refuses a code that is not hex by the key as written', () => {
      expect(errorOf('fault_codes:\n  80E0_1801: critical\n').describe('r.yaml')).toBe(
        'r.yaml:2: fault_codes.80E0_1801: must be a hex fault code such as "80E01801"',
      );
    });

    it('still reads values as typed: numbers stay numbers', () => {
      const rules = parseRules('high_temp: {threshold_c: 80.5, min_samples: 0x2}\nwindow_samples: 4\n');
      expect(rules.high_temp).toEqual({ threshold_c: 80.5, min_samples: 2 });
      expect(rules.window_samples).toBe(4);
    });

    it('names a top-level key YAML would read as another type by its text', () => {
      expect(errorOf('true: 1\n').describe('r.yaml')).toBe('r.yaml:1: true: unknown field');
      expect(errorOf('~: 1\n').describe('r.yaml')).toBe('r.yaml:1: ["~"]: unknown field');
      expect(errorOf('0x10: 1\n').describe('r.yaml')).toBe('r.yaml:1: 0x10: unknown field');
    });
  });

  it.each([
    {
      name: 'unknown top-level field',
      text: 'window_samples: 5\nthreshold: 3\n',
      path: 'threshold',
      line: 2,
    },
    {
      name: 'unknown nested field',
      text: 'high_temp:\n  threshold_c: 90\n  treshold: 3\n',
      path: 'high_temp.treshold',
      line: 3,
    },
    {
      name: 'wrong type',
      text: 'overlays:\n  agent_unreachable_s: soon\n',
      path: 'overlays.agent_unreachable_s',
      line: 2,
    },
    { name: 'out of range', text: 'window_samples: 64\n', path: 'window_samples', line: 1 },
    {
      name: 'critical XID not watched',
      text: 'xids:\n  watched: [79]\n  critical:\n    - 79\n    - 48\n',
      path: 'xids.critical[1]',
      line: 5,
    },
    {
      name: 'unknown latched reason',
      text: 'latched: [ecc-uncorrectable, high-tmp]\n',
      path: 'latched[1]',
      line: 1,
    },
    {
      name: 'min_samples beyond window',
      text: 'window_samples: 2\nhigh_temp: {min_samples: 3}\n',
      path: 'high_temp.min_samples',
      line: 2,
    },
    { name: 'bad fault code', text: 'fault_codes:\n  zz: critical\n', path: 'fault_codes.zz', line: 2 },
    {
      name: 'bad severity of a lower-case code',
      text: 'fault_codes:\n  80e00209: fatal\n',
      path: 'fault_codes.80e00209',
      line: 2,
    },
    {
      name: 'wrong type in JSON',
      text: '{\n\t"high_temp": {\n\t\t"threshold_c": "hot"\n\t}\n}\n',
      path: 'high_temp.threshold_c',
      line: 3,
    },
    {
      name: 'bad severity',
      text: 'fault_codes:\n  "80E00209": fatal\n',
      path: 'fault_codes.80E00209',
      line: 2,
    },
  ])('names the field and line: $name', ({ text, path, line }) => {
    const error = errorOf(text);
    expect(error.path).toBe(path);
    expect(error.line).toBe(line);
    expect(error.message).toBe(`line ${line}: ${path}: ${error.detail}`);
    expect(error.describe('rules.yaml')).toBe(`rules.yaml:${line}: ${path}: ${error.detail}`);
  });

  it('refuses a document that is not a mapping, at its line', () => {
    expect(errorOf('# rules\n- 1\n- 2\n').describe('r.yaml')).toBe(
      'r.yaml:2: the rules must be a mapping of field: value, not a list',
    );
  });

  it('reports a field reached through an alias at the line where its value was written', () => {
    const text = 'xids:\n  watched: &w\n    - 79\n  critical: [79]\nlatched: *w\n';
    expect(errorOf(text).describe('r.yaml')).toBe(
      'r.yaml:3: latched[0]: Invalid input: expected string, received number',
    );
  });
});

describe('reloadRules', () => {
  it('replaces valid rules with valid rules', () => {
    const result = reloadRules(DEFAULT_RULES, 'degrade_after_s: 30\n');
    expect(result.error).toBeUndefined();
    expect(result.rules.degrade_after_s).toBe(30);
  });

  it('keeps the previous rules when the new text is invalid', () => {
    const previous = parseRules('degrade_after_s: 30\n');
    const result = reloadRules(previous, 'degrade_after_s: -1\n');
    expect(result.rules).toBe(previous);
    expect(result.error?.message).toMatch(/^line 1: degrade_after_s: /);
  });
});

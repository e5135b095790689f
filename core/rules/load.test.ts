import { describe, expect, it } from '@jest/globals';
import { DEFAULT_RULES } from '../../contracts/rules.js';
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

  it('upper-cases fault codes of the table', () => {
    expect(parseRules('fault_codes:\n  "80e00209": critical\n').fault_codes).toEqual({
      '80E00209': 'critical',
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
    expect(error.message).not.toContain('\n');
    expect(error.describe('rules.yaml')).toBe(`rules.yaml:${line}: ${path}: ${error.detail}`);
  });

  it.each([
    ['unterminated flow', 'high_temp: {threshold_c: 80\n'],
    ['duplicate key', 'window_samples: 5\nwindow_samples: 6\n'],
    ['bad indentation', 'high_temp:\n  threshold_c: 80\n   min_samples: 2\n'],
  ])('reports a syntax error (%s) on one line with its line number', (_name, text) => {
    const error = errorOf(text);
    expect(error.path).toBe('');
    expect(error.line).toBeGreaterThanOrEqual(1);
    expect(error.message).not.toContain('\n');
  });

  it('rejects a document that is not a mapping', () => {
    expect(errorOf('- 1\n- 2\n').message).toMatch(/expected object/);
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

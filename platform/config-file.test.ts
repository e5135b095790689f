import { describe, expect, it } from '@jest/globals';
import { parseConfigFile, type ParsedConfigFile } from './config-file.js';

function parsed(text: string): ParsedConfigFile {
  const result = parseConfigFile({ path: 'c.yaml', text });
  if ('errors' in result) throw new Error(result.errors.join('\n'));
  return result;
}

function errors(text: string): string[] {
  const result = parseConfigFile({ path: 'c.yaml', text });
  return 'errors' in result ? result.errors : [];
}

describe('parseConfigFile', () => {
  it('reads YAML and JSON, and an empty file as no settings', () => {
    expect(parsed('lease:\n  durationSeconds: 15\n').value).toEqual({ lease: { durationSeconds: 15 } });
    expect(parsed('{"lease": {"durationSeconds": 15}}').value).toEqual({ lease: { durationSeconds: 15 } });
    expect(parsed('').value).toEqual({});
    expect(parsed('# only a comment\n').value).toEqual({});
  });

  it('knows the line of each key, list item, and of the nearest ancestor of a missing one', () => {
    const file = parsed(
      'listen: ":8080"\nlease:\n  name: x\n  durationSeconds: 15\nnamespaces:\n  - a\n  - b\n',
    );
    expect(file.lineOf(['listen'])).toBe(1);
    expect(file.lineOf(['lease'])).toBe(2);
    expect(file.lineOf(['lease', 'durationSeconds'])).toBe(4);
    expect(file.lineOf(['namespaces', 1])).toBe(7);
    expect(file.lineOf(['lease', 'missing'])).toBe(2);
  });

  it('names the line of a syntax error and of a duplicate key', () => {
    expect(errors('lease:\n  name: [unclosed\n')).toEqual([expect.stringMatching(/^c\.yaml:\d+: /)]);
    const duplicate = errors('listen: a\nlisten: b\n');
    expect(duplicate).toHaveLength(1);
    expect(duplicate[0]).toMatch(/^c\.yaml:2: Map keys must be unique/);
  });

  it('refuses __proto__ keys at any depth, naming their lines', () => {
    expect(errors('lease:\n  __proto__:\n    polluted: true\n')).toEqual([
      'c.yaml:2: __proto__: refused (a prototype-pollution key)',
    ]);
    expect(errors('{"__proto__": {"polluted": true}}')).toEqual([
      'c.yaml:1: __proto__: refused (a prototype-pollution key)',
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses an alias bomb in one line', () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (const name of ['b', 'c', 'd', 'e', 'f', 'g']) {
      const previous = String.fromCharCode(name.charCodeAt(0) - 1);
      levels.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(',')}]`);
    }
    expect(errors(levels.join('\n'))).toEqual([
      'c.yaml: refused: YAML aliases expand beyond 100 nodes (an alias bomb?)',
    ]);
  });

  it('allows a few aliases', () => {
    expect(parsed('base: &b {zone: a}\nother: *b\n').value).toEqual({
      base: { zone: 'a' },
      other: { zone: 'a' },
    });
  });

  it.each([
    ['a list', '- a\n- b\n'],
    ['a scalar', 'just text\n'],
  ])('refuses %s at the top level', (_name, text) => {
    expect(errors(text)).toEqual(['c.yaml:1: expected a mapping of settings (key: value)']);
  });
});

import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { EXCERPT_LENGTH, ParseError, excerpt, quoted } from './errors.js';

describe('excerpt', () => {
  it('keeps short printable text as it is', () => {
    expect(excerpt('| 0  910B3 | OK |')).toBe('| 0  910B3 | OK |');
    expect(quoted('hot!')).toBe("'hot!'");
  });

  it('cuts long text to EXCERPT_LENGTH characters and an ellipsis', () => {
    const line = `| NPU  Name | Health |${' '.repeat(80_000)}x`;
    const short = excerpt(line);
    expect(short).toHaveLength(EXCERPT_LENGTH + 1);
    expect(short.endsWith('…')).toBe(true);
    expect(short.startsWith('| NPU  Name | Health |')).toBe(true);
    expect(excerpt('abcdef', 3)).toBe('abc…');
    expect(excerpt('abc', 3)).toBe('abc');
  });

  it.each([
    ['a\rb', 'a\\rb'],
    ['a\tb\nc', 'a\\tb\\nc'],
    ['\b\f', '\\b\\f'],
    ['\u0000\u001b[2J', '\\u0000\\u001b[2J'],
    ['x\u007fy\u0085z', 'x\\u007fy\\u0085z'],
    ['\u2028\u2029', '\\u2028\\u2029'],
    ['\u202eevil', '\\u202eevil'],
    ['\ufeffbom', '\\ufeffbom'],
    ['\ud800lone', '\\ud800lone'],
    ['back\\slash', 'back\\\\slash'],
    ['emoji 🚀 and 中文', 'emoji 🚀 and 中文'],
  ])('escapes %j as JSON would, and the invisible too', (text, expected) => {
    expect(excerpt(text)).toBe(expected);
  });

  it('never cuts an escape or a surrogate pair in half', () => {
    expect(excerpt('ab\r', 3)).toBe('ab…');
    expect(excerpt('a🚀', 2)).toBe('a…');
  });

  it('is one printable line of bounded length, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        const out = excerpt(text);
        expect(out.length).toBeLessThanOrEqual(EXCERPT_LENGTH + 1);
        // No control, line-separator, bidi or lone surrogate character survives.
        const invisible = [...out].filter((char) => {
          const code = char.codePointAt(0) ?? 0;
          return (
            code < 0x20 ||
            (code >= 0x7f && code <= 0x9f) ||
            (code >= 0x2028 && code <= 0x202e) ||
            code === 0xfeff ||
            (char.length === 1 && code >= 0xd800 && code <= 0xdfff)
          );
        });
        expect(invisible).toEqual([]);
      }),
    );
  });

  it('makes a ParseError a single line naming its line', () => {
    const error = new ParseError(`found ${quoted('a\r\nb')}`, 3);
    expect(error.message).toBe("line 3: found 'a\\r\\nb'");
  });
});

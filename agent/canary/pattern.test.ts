import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { MAX_PATTERN_LENGTH, PatternError, answerPatternProblem, compileAnswerPattern } from './pattern.js';

/** Whether the pattern and JavaScript's own engine (flag i) agree on `text`. */
function agrees(source: string, text: string): boolean {
  return compileAnswerPattern(source).test(text) === new RegExp(source, 'i').test(text);
}

describe('answer patterns', () => {
  it.each([
    [String.raw`\b5\b`, ['5', 'The answer is 5.', '2 + 3 = 5', '5\n'], ['15', '25', '6', '55', '']],
    ['paris', ['Paris', 'The capital is PARIS!'], ['Pari s', 'London']],
    [String.raw`^\s*5\s*$`, ['5', '  5\n'], ['5.', 'a 5']],
    ['^(yes|ok)[.!]?$', ['Yes', 'OK!', 'ok.'], ['okay', 'yes yes']],
    [String.raw`\d{2,3}`, ['42', 'x123y'], ['4', 'a b']],
    ['[^a-z0-9 ]', ['a-b', 'é'], ['abc 123', 'ABC']],
    ['[A-F]+x', ['ccx', 'DEADx'], ['gx', 'x']],
    [String.raw`a.c`, ['abc', 'a c'], ['a\nc', 'ac']],
    [String.raw`\Bb\B`, ['abc'], ['b', 'a b c']],
    [String.raw`(?:ab)*c$`, ['c', 'ababc', 'xc'], ['cx', '']],
    [String.raw`\.\*\[\]\(\)\?`, ['.*[]()?'], ['x*[]()?']],
    ['a{0}b', ['b', 'ab'], ['a']],
    ['x?', ['', 'anything'], []],
  ])('%s matches what JavaScript matches', (source, yes, no) => {
    const pattern = compileAnswerPattern(source);
    for (const text of yes) {
      expect([text, pattern.test(text)]).toEqual([text, true]);
      expect(agrees(source, text)).toBe(true);
    }
    for (const text of no) {
      expect([text, pattern.test(text)]).toEqual([text, false]);
      expect(agrees(source, text)).toBe(true);
    }
  });

  it('agrees with JavaScript on random patterns of the subset and random answers', () => {
    const atom = fc.constantFrom(
      'a',
      'b',
      '5',
      ' ',
      '.',
      '[ab]',
      '[^a]',
      String.raw`\d`,
      String.raw`\w`,
      String.raw`\s`,
      'A',
    );
    const quantifier = fc.constantFrom('', '', '*', '+', '?', '{2}', '{1,3}', '{0,}', '*?');
    const assertion = fc.constantFrom(String.raw`\b`, String.raw`\B`, '^', '$');
    const piece: fc.Arbitrary<string> = fc.letrec<{ piece: string; seq: string }>((tie) => ({
      piece: fc.oneof(
        { weight: 4, arbitrary: fc.tuple(atom, quantifier).map(([a, q]) => a + q) },
        { weight: 1, arbitrary: assertion },
        {
          weight: 1,
          arbitrary: fc
            .tuple(tie('seq'), tie('seq'), quantifier)
            .map(([left, right, q]) => `(${left}|${right})${q}`),
        },
      ),
      seq: fc.array(tie('piece'), { minLength: 1, maxLength: 3 }).map((items) => items.join('')),
    })).seq;
    const text = fc
      .array(fc.constantFrom('a', 'b', 'A', 'B', '5', ' ', '\n', '_'), { maxLength: 12 })
      .map((c) => c.join(''));
    fc.assert(
      fc.property(piece, text, (source, subject) => {
        // Generated nesting can grow past the size limits; those are refused, tested below.
        fc.pre(answerPatternProblem(source) === undefined);
        expect([source, subject, compileAnswerPattern(source).test(subject)]).toEqual([
          source,
          subject,
          new RegExp(source, 'i').test(subject),
        ]);
      }),
      { numRuns: 3000 },
    );
  });

  it.each([
    ['(a+)+b', 'a'],
    [String.raw`(\d+|\d+\s*)*x`, '1 '],
    [String.raw`\s*\s*\s*$x`, ' '],
    ['(a|a)*(a|a)*c', 'a'],
    [String.raw`(\w+\s?)+$z`, 'ab '],
  ])('%s ends on a hostile answer where backtracking explodes', (source, unit) => {
    // V8 would try exponentially (or polynomially) many splits of these answers; RE2 reads
    // each character once per state, so this returns (a backtracking engine would hang here).
    expect(compileAnswerPattern(source).test(unit.repeat(100_000))).toBe(false);
  });

  it.each([
    '(a',
    'a)',
    '*a',
    'a**',
    String.raw`(a)\1`,
    '(?=a)b',
    String.raw`\u0041`,
    '[z-a]',
    '[ab',
    'a{3,1}',
    'a{1001}',
    '[]',
  ])('refuses %j in one line, saying what RE2 refuses', (source) => {
    const problem = answerPatternProblem(source);
    expect(problem).toMatch(/^RE2 refuses it: .+/);
    expect(problem).not.toContain('(?i)');
    expect(problem).not.toContain('\n');
    expect(() => compileAnswerPattern(source)).toThrow(PatternError);
  });

  it('refuses a pattern too long', () => {
    expect(answerPatternProblem('a'.repeat(MAX_PATTERN_LENGTH + 1))).toBe(
      `is ${MAX_PATTERN_LENGTH + 1} characters long; at most ${MAX_PATTERN_LENGTH}`,
    );
    expect(answerPatternProblem('((((a))))')).toBeUndefined();
  });
});

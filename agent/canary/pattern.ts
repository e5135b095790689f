/**
 * The canary's answer pattern (`expectPattern`), matched by RE2 (re2js, the JavaScript port of
 * Google's RE2), never by V8's backtracking engine. The answer comes from the inference server,
 * a tenant's pod, and the pattern from a person who may write `(\d+)+` without noticing; a
 * backtracking engine would take exponential time on that pair, RE2 takes time linear in the
 * answer whatever the pattern (and the answer is bounded: the canary's answer cap).
 *
 * The syntax is RE2's (close to JavaScript's; no backreferences, no lookarounds): a pattern it
 * refuses is a one-line error at config load. Matching is case-insensitive and searches
 * anywhere in the answer (anchor with `^`/`$`).
 */
import { RE2JS } from 're2js';

/** The longest pattern taken (a canary pattern checks a few words). */
export const MAX_PATTERN_LENGTH = 200;

/** A compiled answer pattern. */
export interface AnswerPattern {
  /** The pattern as written. */
  readonly source: string;
  /** Whether the pattern matches somewhere in `text`. */
  test(text: string): boolean;
}

/** A pattern RE2 refuses, or one too long: `message` is one line. */
export class PatternError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PatternError';
  }
}

/** What is wrong with `source` as an answer pattern, or undefined when it compiles. */
export function answerPatternProblem(source: string): string | undefined {
  try {
    compileAnswerPattern(source);
    return undefined;
  } catch (error) {
    if (error instanceof PatternError) return error.message;
    throw error;
  }
}

/** Compiles `source`; throws PatternError saying what RE2 refuses. */
export function compileAnswerPattern(source: string): AnswerPattern {
  if (source.length > MAX_PATTERN_LENGTH)
    throw new PatternError(`is ${source.length} characters long; at most ${MAX_PATTERN_LENGTH}`);
  let re: RE2JS;
  try {
    re = RE2JS.compile(source, RE2JS.CASE_INSENSITIVE);
  } catch (error) {
    // RE2's words, less its prefix and the case flag it was compiled with.
    const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
    throw new PatternError(
      `RE2 refuses it: ${message.replace(/^error parsing regexp: /, '').replace('(?i)', '')}`,
    );
  }
  return { source, test: (text) => re.test(text) };
}

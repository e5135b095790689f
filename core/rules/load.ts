/**
 * Rules-file loading from text (YAML or JSON), validated against contracts/rules.ts. Every
 * refusal is a RulesError: one line naming the line and, where one is at fault, the field
 * (`rules.yaml:7: high_temp.threshold_c: Invalid input: expected number, received string`).
 *
 * `reloadRules` is the hot-reload door: an invalid text never replaces valid rules.
 */
import type { z } from 'zod';
import { DEFAULT_RULES, rulesSchema, type Rules } from '../../contracts/index.js';
import { readDocument, type RulesDocument } from './read-document.js';
import { RulesError, fieldPath } from './rules-error.js';

/**
 * Parses and validates a rules text. A text with no content (empty, only comments, `~`)
 * yields the defaults. Throws RulesError, and only RulesError.
 */
export function parseRules(text: string): Rules {
  const document = readDocument(text);
  const result = rulesSchema.safeParse(document.value ?? {});
  if (result.success) return result.data;
  throw fromIssue(result.error.issues[0], document);
}

/** The outcome of a reload: the rules to use, and why the new text was refused (if it was). */
export interface ReloadResult {
  rules: Rules;
  /** Set when the new text was invalid; `rules` is then the previous value, unchanged. */
  error?: RulesError;
}

/** Parses `text`; on any error keeps `previous` (an invalid file never replaces a valid one). */
export function reloadRules(previous: Rules, text: string): ReloadResult {
  try {
    return { rules: parseRules(text) };
  } catch (error) {
    // parseRules throws only RulesError; anything else is a bug, but still must not replace the rules.
    const refused =
      error instanceof RulesError ? error : new RulesError('', String(error), 1, { cause: error });
    return { rules: previous, error: refused };
  }
}

/** The defaults (CONTRACT §2), for callers without a rules file. */
export function defaultRules(): Rules {
  return DEFAULT_RULES;
}

/** The first schema issue as a RulesError at the field and line where it was written. */
function fromIssue(issue: z.core.$ZodIssue | undefined, document: RulesDocument): RulesError {
  if (!issue) return new RulesError('', 'invalid rules', document.lineOf([]));
  const path: PropertyKey[] = [...issue.path];
  let detail = issue.message;
  if (issue.code === 'unrecognized_keys' && issue.keys[0] !== undefined) {
    // Reported at the unknown field itself, not at the object holding it.
    path.push(issue.keys[0]);
    detail = 'unknown field';
  } else if (issue.code === 'invalid_key') {
    // zod's own message is 'Invalid key in record'; the key schema's says what a key must be.
    detail = issue.issues[0]?.message ?? detail;
  }
  return new RulesError(fieldPath(path), detail, document.lineOf(path));
}

/**
 * Kubernetes label selectors (k8s.io/apimachinery labels.Parse), matched on our side: which
 * nodes are accelerator nodes is decided from all nodes (capacity or labels), so the selector
 * cannot go to the server. Terms are separated by commas and all must hold:
 *
 * | term            | matches a node whose labels…                  |
 * |-----------------|-----------------------------------------------|
 * | `k=v`, `k==v`   | have k, equal to v                            |
 * | `k!=v`          | lack k, or have it with another value         |
 * | `k`             | have k                                        |
 * | `!k`            | lack k                                        |
 * | `k in (a,b)`    | have k, equal to a or b                       |
 * | `k notin (a,b)` | lack k, or have it with neither value         |
 *
 * Keys and values are checked as the API checks labels; an error is one line naming the term.
 */

/** One parsed term. */
export type SelectorTerm =
  | { readonly key: string; readonly op: 'exists' | 'not-exists' }
  | { readonly key: string; readonly op: 'in' | 'notin'; readonly values: readonly string[] };

/** A parsed selector: all terms must hold. No terms matches everything. */
export interface LabelSelector {
  readonly terms: readonly SelectorTerm[];
  /** The selector as given, trimmed. */
  readonly text: string;
}

/** The text of a selector could not be read. */
export class LabelSelectorError extends Error {
  override readonly name = 'LabelSelectorError';
}

/** A label name part: 63 characters at most, alphanumeric at both ends, `-_.` inside. */
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** A key's optional prefix: a DNS subdomain. */
const PREFIX = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const KEY = String.raw`[A-Za-z0-9][-A-Za-z0-9_./]*`;
const VALUE = String.raw`[-A-Za-z0-9_.]*`;
const NOT_EXISTS = new RegExp(String.raw`^!\s*(${KEY})$`);
const COMPARE = new RegExp(String.raw`^(${KEY})\s*(==|=|!=)\s*(${VALUE})$`);
const SET = new RegExp(String.raw`^(${KEY})\s+(in|notin)\s*\(([^()]*)\)$`);
const EXISTS = new RegExp(String.raw`^(${KEY})$`);

/** Parses `text`; throws LabelSelectorError naming the first bad term. Empty text has no terms. */
export function parseLabelSelector(text: string): LabelSelector {
  const trimmed = text.trim();
  if (trimmed === '') return { terms: [], text: '' };
  const terms = splitTerms(trimmed).map((term, index) => parseTerm(term.trim(), index + 1));
  return { terms, text: trimmed };
}

/** Whether `labels` satisfy every term of `selector`. */
export function matchesLabels(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  return selector.terms.every((term) => {
    const has = Object.hasOwn(labels, term.key);
    switch (term.op) {
      case 'exists':
        return has;
      case 'not-exists':
        return !has;
      case 'in':
        return has && term.values.includes(labels[term.key] as string);
      case 'notin':
        return !has || !term.values.includes(labels[term.key] as string);
    }
  });
}

/** Splits on the commas outside parentheses; an unbalanced parenthesis is an error. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '(') depth += 1;
    else if (char === ')') depth -= 1;
    if (depth < 0 || depth > 1) throw fail(terms.length + 1, text.slice(start), 'unbalanced parentheses');
    if (char === ',' && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) throw fail(terms.length + 1, text.slice(start), 'missing ")"');
  terms.push(text.slice(start));
  return terms;
}

function parseTerm(term: string, index: number): SelectorTerm {
  if (term === '') throw fail(index, term, 'empty term');
  let match = NOT_EXISTS.exec(term);
  if (match) return { key: checkKey(match[1] as string, index, term), op: 'not-exists' };
  match = SET.exec(term);
  if (match) {
    const values = (match[3] as string).split(',').map((value) => value.trim());
    if (values.length === 1 && values[0] === '')
      throw fail(index, term, `"${match[2]}" needs at least one value`);
    for (const value of values) checkValue(value, index, term);
    return { key: checkKey(match[1] as string, index, term), op: match[2] === 'in' ? 'in' : 'notin', values };
  }
  match = COMPARE.exec(term);
  if (match) {
    const value = checkValue(match[3] as string, index, term);
    return {
      key: checkKey(match[1] as string, index, term),
      op: match[2] === '!=' ? 'notin' : 'in',
      values: [value],
    };
  }
  match = EXISTS.exec(term);
  if (match) return { key: checkKey(match[1] as string, index, term), op: 'exists' };
  throw fail(index, term, 'expected k=v, k==v, k!=v, k, !k, k in (a,b) or k notin (a,b)');
}

function checkKey(key: string, index: number, term: string): string {
  const parts = key.split('/');
  const name = parts.at(-1) as string;
  if (parts.length > 2) throw fail(index, term, `key "${key}" has more than one "/"`);
  if (parts.length === 2 && !PREFIX.test(parts[0] as string))
    throw fail(index, term, `key prefix "${parts[0]}" must be a DNS subdomain`);
  if (!NAME.test(name))
    throw fail(
      index,
      term,
      `key name "${name}" must be 1-63 characters, alphanumeric at both ends, with -_. inside`,
    );
  return key;
}

function checkValue(value: string, index: number, term: string): string {
  if (value !== '' && !NAME.test(value))
    throw fail(
      index,
      term,
      `value "${value}" must be empty or 1-63 characters, alphanumeric at both ends, with -_. inside`,
    );
  return value;
}

function fail(index: number, term: string, why: string): LabelSelectorError {
  const shown = term.trim().length > 80 ? `${term.trim().slice(0, 80)}…` : term.trim();
  return new LabelSelectorError(`label selector term ${index} "${shown}": ${why}`);
}

/**
 * Rules-file loading from text (YAML or JSON: JSON is read as YAML, its superset), validated
 * against contracts/rules.ts. Errors are one line naming the field and, when the text says
 * where, its line: `line 7: high_temp.threshold_c: Invalid input: expected number`.
 *
 * `reloadRules` is the hot-reload door: an invalid text never replaces valid rules.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import { NpuFaultError, formatPath } from '../errors.js';
import { DEFAULT_RULES, rulesSchema, type Rules } from '../../contracts/rules.js';

/** A rules file that could not be parsed or validated; `line` is 1-based when known. */
export class RulesError extends NpuFaultError {
  /** The field at fault (`high_temp.threshold_c`), or '' for a syntax error. */
  readonly path: string;
  /** The 1-based line of the text, when known. */
  readonly line: number | undefined;
  /** What is wrong, without the location. */
  readonly detail: string;
  constructor(path: string, detail: string, line: number | undefined) {
    const where = line === undefined ? '' : `line ${line}: `;
    super('rules_error', `${where}${path ? `${path}: ` : ''}${detail}`);
    this.path = path;
    this.line = line;
    this.detail = detail;
  }

  /** The one-line report for a rules file: `<file>:<line>: <field>: <message>`. */
  describe(file: string): string {
    const where = this.line === undefined ? file : `${file}:${this.line}`;
    return `${where}: ${this.path ? `${this.path}: ` : ''}${this.detail}`;
  }
}

/** Parses and validates a rules text; throws RulesError. Empty text yields the defaults. */
export function parseRules(text: string): Rules {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const syntax = doc.errors[0];
  if (syntax) {
    const line = syntax.pos[0] >= 0 ? lines.linePos(syntax.pos[0]).line : undefined;
    throw new RulesError('', syntax.message.split('\n')[0] ?? 'invalid YAML', line);
  }
  const value: unknown = doc.toJS({ maxAliasCount: 100 }) ?? {};
  const result = rulesSchema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw new RulesError('', 'invalid rules', undefined);
  const path: PropertyKey[] = [...issue.path];
  // An unknown field is reported at the field itself, not at its parent object.
  if (issue.code === 'unrecognized_keys' && issue.keys[0] !== undefined) path.push(issue.keys[0]);
  throw new RulesError(formatPath(path), issue.message, lineOf(doc, lines, path));
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
    const refused = error instanceof RulesError ? error : new RulesError('', String(error), undefined);
    return { rules: previous, error: refused };
  }
}

/** The defaults (CONTRACT §2), for callers without a rules file. */
export function defaultRules(): Rules {
  return DEFAULT_RULES;
}

/** The 1-based line of the node at `path` (the key of a map entry), or undefined. */
function lineOf(doc: Document, lines: LineCounter, path: ReadonlyArray<PropertyKey>): number | undefined {
  let node: unknown = doc.contents;
  let offset: number | undefined = rangeStart(node);
  for (const part of path) {
    if (isMap(node)) {
      const pair = node.items.find(
        (item) => isPair(item) && isScalar(item.key) && String(item.key.value) === String(part),
      );
      if (!pair) break;
      offset = rangeStart(pair.key) ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof part === 'number') {
      node = node.items[part];
      offset = rangeStart(node) ?? offset;
    } else {
      break;
    }
  }
  return offset === undefined ? undefined : lines.linePos(offset).line;
}

function rangeStart(node: unknown): number | undefined {
  if (node && typeof node === 'object' && 'range' in node) {
    const range = (node as { range?: [number, number, number] | null }).range;
    return range ? range[0] : undefined;
  }
  return undefined;
}

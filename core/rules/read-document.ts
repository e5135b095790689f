/**
 * Reads a rules text (YAML, or JSON, which YAML reads too) into plain data, remembering the
 * line where each field was written. Every refusal is a RulesError with a line.
 *
 * Mapping keys are the text written (`stringKeys`): YAML would otherwise read the plain key
 * `00001234` as the number 1234, `0x80E0` as 32992 and `80E01801` as Infinity, so a fault
 * code would silently change. Values are still typed (`threshold_c: 80` is a number).
 *
 * The text is untrusted (a ConfigMap anyone with edit rights can change), so its cost is
 * bounded before and while it is read: its length, its nesting, and the number of values
 * it expands to through aliases ("billion laughs"). `__proto__`, `constructor` and
 * `prototype` are refused as keys at any depth.
 */
import {
  CST,
  Lexer,
  LineCounter,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  parseDocument,
  visit,
  type Alias,
  type Document,
  type Node,
  type YAMLError,
} from 'yaml';
import { RulesError, fieldPath, quote } from './rules-error.js';

/**
 * The longest rules text read, in characters. A real rules file is a few KiB (the full default
 * file is 2.4 KiB; 256 KiB holds some 10 000 fault codes), and YAML parsing is slow on dense
 * text: 256 KiB of `[a,a,a,…]` costs about half a second of one idle core.
 */
export const MAX_RULES_CHARS = 256 * 1024;
/** The deepest nesting read; valid rules need 3 (`xids.watched[0]`). */
export const MAX_NESTING = 32;
/** The most values (scalars, lists, mappings) a text may expand to, each use of an alias counted. */
export const MAX_VALUES = 50_000;

/** Keys refused at any depth: they would reach or fake an object's prototype. */
const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** A rules text read as plain data. */
export interface RulesDocument {
  /** The top-level mapping, or undefined for a text with no content (empty, comments, `~`). */
  readonly value: Record<string, unknown> | undefined;
  /** The line where `path` (or the longest part of it that was written) was written. */
  lineOf(path: ReadonlyArray<PropertyKey>): number;
}

/** Reads `text`; throws RulesError. */
export function readDocument(text: string): RulesDocument {
  if (text.length > MAX_RULES_CHARS) {
    throw new RulesError(
      '',
      `longer than ${MAX_RULES_CHARS} characters, the most a rules file may hold (this line crosses it)`,
      lineAtOffset(text, MAX_RULES_CHARS),
    );
  }
  refuseDeepNesting(text);
  const lines = new LineCounter();
  const doc = parseDocument(text, {
    lineCounter: lines,
    prettyErrors: false,
    stringKeys: true,
    // The library compares each key with every earlier one (40 000 keys: 47 s); Reader uses a Set.
    uniqueKeys: false,
    merge: false,
  });
  const problem: YAMLError | undefined = doc.errors[0] ?? doc.warnings[0];
  if (problem) throw syntaxError(doc, lines, problem);

  const top = doc.contents;
  const lineOfNode = (node: unknown): number | undefined => {
    const start = rangeOf(node)?.[0];
    return start === undefined ? undefined : lines.linePos(start).line;
  };
  const firstLine = lineOfNode(top) ?? 1;
  if (top === null || (isScalar(top) && top.value === null)) {
    return { value: undefined, lineOf: () => firstLine };
  }
  if (!isMap(top)) {
    throw new RulesError('', `the rules must be a mapping of field: value, not ${kindOf(top)}`, firstLine);
  }
  const reader = new Reader(doc, lineOfNode, firstLine);
  const value = reader.read(top, []) as Record<string, unknown>;
  return { value, lineOf: (path) => reader.lineOf(path) };
}

/** Converts the parsed document to plain data, enforcing MAX_NESTING, MAX_VALUES and FORBIDDEN_KEYS. */
class Reader {
  readonly #anchors: ReadonlyMap<Alias, Node | undefined>;
  readonly #lineOfNode: (node: unknown) => number | undefined;
  readonly #firstLine: number;
  /** The line of each field and list item read, by JSON.stringify(path). */
  readonly #lines = new Map<string, number>();
  /** Collections being read: an alias to one of them would never end. */
  readonly #open = new Set<Node>();
  #values = 0;
  /** The outermost alias being expanded, where an alias bomb is reported. */
  #alias: { path: ReadonlyArray<string | number>; line: number } | undefined;

  constructor(doc: Document.Parsed, lineOfNode: (node: unknown) => number | undefined, firstLine: number) {
    this.#anchors = resolveAliases(doc);
    this.#lineOfNode = lineOfNode;
    this.#firstLine = firstLine;
  }

  lineOf(path: ReadonlyArray<PropertyKey>): number {
    for (let length = path.length; length > 0; length--) {
      const line = this.#lines.get(JSON.stringify(path.slice(0, length)));
      if (line !== undefined) return line;
    }
    return this.#firstLine;
  }

  read(node: unknown, path: ReadonlyArray<string | number>): unknown {
    const line = this.#lineOfNode(node) ?? this.lineOf(path);
    this.#values += 1;
    if (this.#values > MAX_VALUES) {
      if (this.#alias) {
        const { path: at, line: aliasLine } = this.#alias;
        throw new RulesError(fieldPath(at), `aliases expand to more than ${MAX_VALUES} values`, aliasLine);
      }
      throw new RulesError(fieldPath(path), `the text holds more than ${MAX_VALUES} values`, line);
    }
    if (path.length > MAX_NESTING) {
      throw new RulesError(fieldPath(path), `nested deeper than ${MAX_NESTING} levels`, line);
    }
    if (node === null || node === undefined) return null;
    if (isScalar(node)) return node.value;
    if (isAlias(node)) return this.#readAlias(node, path, line);
    if (isMap(node) || isSeq(node)) {
      this.#open.add(node);
      const value = isMap(node) ? this.#readMap(node.items, path) : this.#readList(node.items, path);
      this.#open.delete(node);
      return value;
    }
    throw new RulesError(fieldPath(path), 'unsupported YAML node', line);
  }

  #readMap(pairs: readonly unknown[], path: ReadonlyArray<string | number>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const pair of pairs) {
      if (!isPair(pair)) continue;
      // stringKeys made every key a string scalar (anything else was a syntax error).
      const key = isScalar(pair.key) ? String(pair.key.value) : '';
      const keyPath = [...path, key];
      const line = this.#lineOfNode(pair.key) ?? this.#lineOfNode(pair.value) ?? this.lineOf(path);
      if (FORBIDDEN_KEYS.has(key)) {
        throw new RulesError(fieldPath(keyPath), `'${key}' is not allowed as a key`, line);
      }
      if (Object.hasOwn(out, key)) {
        throw new RulesError(fieldPath(keyPath), 'written twice in the same mapping', line);
      }
      this.#lines.set(JSON.stringify(keyPath), line);
      out[key] = this.read(pair.value, keyPath);
    }
    return out;
  }

  #readList(items: readonly unknown[], path: ReadonlyArray<string | number>): unknown[] {
    return items.map((item, index) => {
      const itemPath = [...path, index];
      const line = this.#lineOfNode(item) ?? this.lineOf(path);
      this.#lines.set(JSON.stringify(itemPath), line);
      // A `key: value` pair as a list item (YAML 1.1 !!omap, !!pairs) has no plain-data form here.
      if (isPair(item))
        throw new RulesError(fieldPath(itemPath), 'a list item must be a value, not key: value', line);
      return this.read(item, itemPath);
    });
  }

  #readAlias(alias: Alias, path: ReadonlyArray<string | number>, line: number): unknown {
    const target = this.#anchors.get(alias);
    if (target === undefined) {
      throw new RulesError(
        fieldPath(path),
        `alias ${quote(`*${alias.source}`)} names no anchor before it`,
        line,
      );
    }
    if (this.#open.has(target)) {
      throw new RulesError(
        fieldPath(path),
        `alias ${quote(`*${alias.source}`)} lies inside its own anchor`,
        line,
      );
    }
    const outermost = this.#alias === undefined;
    if (outermost) this.#alias = { path, line };
    try {
      return this.read(target, path);
    } finally {
      if (outermost) this.#alias = undefined;
    }
  }
}

/** Each alias's node: the last node before it with its anchor (YAML's rule), found in one pass. */
function resolveAliases(doc: Document.Parsed): Map<Alias, Node | undefined> {
  const latest = new Map<string, Node>();
  const resolved = new Map<Alias, Node | undefined>();
  visit(doc, {
    Node(_key, node) {
      if (isAlias(node)) resolved.set(node, latest.get(node.source));
      else if (node.anchor) latest.set(node.anchor, node);
    },
  });
  return resolved;
}

/**
 * Refuses nesting beyond MAX_NESTING from the tokens, before the parser sees it: the parser
 * recurses, and 256 KiB of `[` or `- ` takes it seconds to give up on. Counts open flow
 * brackets plus the block indicators (`-`, `?`, `:`) on one line, an over-estimate only for
 * texts far from valid rules.
 */
function refuseDeepNesting(text: string): void {
  let offset = 0;
  let flowDepth = 0;
  let blockOnLine = 0;
  let afterScalarMarker = false;
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    if (type === 'flow-seq-start' || type === 'flow-map-start') flowDepth += 1;
    else if (type === 'flow-seq-end' || type === 'flow-map-end') flowDepth = Math.max(0, flowDepth - 1);
    else if (flowDepth === 0 && !afterScalarMarker && isBlockIndicator(type)) blockOnLine += 1;
    if (flowDepth + blockOnLine > MAX_NESTING) {
      throw new RulesError('', `nested deeper than ${MAX_NESTING} levels`, lineAtOffset(text, offset));
    }
    if (token.includes('\n')) blockOnLine = 0;
    afterScalarMarker = type === 'scalar';
    // The lexer's marker tokens (document start, scalar, flow error) are not in the text.
    if (type !== 'doc-mode' && type !== 'scalar' && type !== 'flow-error-end') offset += token.length;
  }
}

function isBlockIndicator(type: string | null): boolean {
  return type === 'seq-item-ind' || type === 'explicit-key-ind' || type === 'map-value-ind';
}

/**
 * A YAML error or warning as a RulesError at its line, naming the value the error lies in
 * (not a key it lies on: after a syntax error the parser's guess at a key, such as
 * `80 min_samples`, is no field anyone wrote).
 */
function syntaxError(doc: Document.Parsed, lines: LineCounter, problem: YAMLError): RulesError {
  const offset = Math.max(0, problem.pos[0]);
  const { path, onKey } = pathAt(doc.contents, offset);
  if (onKey) path.pop();
  return new RulesError(fieldPath(path), explain(problem), lines.linePos(offset).line);
}

/** The yaml library's message, reworded where the rules file gives it a plainer meaning. */
function explain(problem: YAMLError): string {
  switch (problem.code) {
    case 'NON_STRING_KEY':
      return 'a key must be plain text, not a list, mapping, alias or tagged value';
    case 'MULTIPLE_DOCS':
      return 'more than one YAML document (a rules file holds one)';
    case 'RESOURCE_EXHAUSTION':
      return 'too deeply nested or too large to read';
    default:
      return problem.message;
  }
}

/** The keys and indexes leading to the node at `offset`, as far as they go; `onKey` when it is a key. */
function pathAt(top: unknown, offset: number): { path: Array<string | number>; onKey: boolean } {
  const path: Array<string | number> = [];
  let node = top;
  while (path.length <= MAX_NESTING) {
    if (isMap(node)) {
      // A pair spans from its key to the end of its value (a tag or anchor between them included).
      const pair = node.items.find((item) =>
        within(offset, rangeOf(item.key)?.[0], rangeOf(item.value ?? item.key)?.[2]),
      );
      if (!pair || !isScalar(pair.key) || typeof pair.key.value !== 'string') break;
      path.push(pair.key.value);
      if (within(offset, rangeOf(pair.key)?.[0], rangeOf(pair.key)?.[2])) return { path, onKey: true };
      node = pair.value;
    } else if (isSeq(node)) {
      const index = node.items.findIndex((item) => within(offset, rangeOf(item)?.[0], rangeOf(item)?.[2]));
      if (index < 0) break;
      path.push(index);
      node = node.items[index];
    } else {
      break;
    }
  }
  return { path, onKey: false };
}

/** Whether `offset` lies in [start, end). */
function within(offset: number, start: number | undefined, end: number | undefined): boolean {
  return start !== undefined && end !== undefined && start <= offset && offset < end;
}

function rangeOf(node: unknown): readonly [number, number, number] | undefined {
  if (node === null || typeof node !== 'object' || !('range' in node)) return undefined;
  const range = (node as { range?: [number, number, number] | null }).range;
  return range ?? undefined;
}

function kindOf(node: unknown): string {
  if (isSeq(node)) return 'a list';
  if (isAlias(node)) return 'an alias';
  if (isScalar(node) && typeof node.value === 'string') return 'text';
  if (isScalar(node) && typeof node.value === 'number') return 'a number';
  if (isScalar(node) && typeof node.value === 'boolean') return 'true or false';
  return 'a single value';
}

/** The 1-based line of character `offset` of `text`. */
function lineAtOffset(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line += 1;
  return line;
}

/**
 * Reading a config file: YAML or JSON (JSON is read as YAML, its superset), keeping where
 * each value stands so errors can name `file:line`. Refused: syntax errors, duplicate keys,
 * `__proto__` keys (prototype pollution), alias bombs (a few anchors expanding to millions
 * of nodes), and a top level that is not a mapping.
 */
import { createRequire } from 'node:module';
import type { Document, LineCounter } from 'yaml';

/**
 * The yaml package, required on first use rather than imported: every component loads this
 * module, and one started without a config file (an agent, usually) need not carry the YAML
 * parser in memory. Synchronous, so parsing stays synchronous; Node caches it after the first.
 */
const requireYaml = (): typeof import('yaml') =>
  createRequire(import.meta.url)('yaml') as typeof import('yaml');

/** A file's text, and the name its errors go by (usually its path). */
export interface ConfigFile {
  path: string;
  text: string;
}

/** A parsed file: its value, and the line of any path in it. */
export interface ParsedConfigFile {
  value: Record<string, unknown>;
  /** The 1-based line of the key (or item) at `path`, or of its nearest ancestor in the file. */
  lineOf(path: readonly PropertyKey[]): number | undefined;
}

/**
 * More alias expansions than this and the file is refused: config files need few if any,
 * and the limit keeps a billion-laughs document from exhausting memory.
 */
const MAX_ALIAS_COUNT = 100;

/** Parses a config file; returns its value or the error lines (`file:line: message`). */
export function parseConfigFile(file: ConfigFile): ParsedConfigFile | { errors: string[] } {
  const { LineCounter, parseDocument, visit, isScalar } = requireYaml();
  const lines = new LineCounter();
  const doc = parseDocument(file.text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number | undefined): string =>
    offset === undefined || offset < 0 ? file.path : `${file.path}:${lines.linePos(offset).line}`;
  const errors = doc.errors.map((e) => `${at(e.pos[0])}: ${e.message.split('\n')[0] ?? 'invalid YAML'}`);
  if (errors.length > 0) return { errors };
  visit(doc, {
    Pair(_key, pair) {
      if (isScalar(pair.key) && pair.key.value === '__proto__') {
        errors.push(`${at(pair.key.range?.[0])}: __proto__: refused (a prototype-pollution key)`);
      }
    },
  });
  if (errors.length > 0) return { errors };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    if (error instanceof ReferenceError && /alias/i.test(error.message)) {
      return {
        errors: [
          `${file.path}: refused: YAML aliases expand beyond ${MAX_ALIAS_COUNT} nodes (an alias bomb?)`,
        ],
      };
    }
    return { errors: [`${file.path}: ${error instanceof Error ? error.message : String(error)}`] };
  }
  value ??= {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    return { errors: [`${at(doc.contents?.range?.[0])}: expected a mapping of settings (key: value)`] };
  }
  return { value: value as Record<string, unknown>, lineOf: (path) => lineOf(doc, lines, path) };
}

function lineOf(doc: Document, lines: LineCounter, path: readonly PropertyKey[]): number | undefined {
  const { isMap, isPair, isScalar, isSeq } = requireYaml();
  let node: unknown = doc.contents;
  let offset = rangeStart(node);
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
    const range = (node as { range?: readonly number[] | null }).range;
    return range?.[0];
  }
  return undefined;
}

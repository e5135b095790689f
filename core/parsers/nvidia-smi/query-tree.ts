/**
 * The tree both `-q` forms are read into (the text by indentation, the XML by elements), and
 * the lookups that find a field under either spelling of its key.
 */
import { requireNumber, type Units } from '../common.js';

/** One node of the `-q` tree (a section or a `key : value`), or of the XML document. */
export interface QNode {
  key: string;
  /** `key` as lookups compare it (keyOf), computed once: a key may be a 5 MB line. */
  id: string;
  value: string | null;
  attrs: Record<string, string>;
  line: number;
  children: QNode[];
}

/** Keys compared case- and separator-insensitively, so `GPU Current Temp` ~ `gpu_current_temp`. */
export function keyOf(text: string): string {
  return text
    .toLowerCase()
    .split(/[\s_]/)
    .filter((word) => word !== '')
    .join(' ');
}

export function child(node: QNode | undefined, ...aliases: string[]): QNode | undefined {
  if (!node) return undefined;
  for (const alias of aliases) {
    const found = node.children.find((c) => c.id === alias);
    if (found) return found;
  }
  return undefined;
}

/** Follows a path of alias lists to a node. */
function nodeAt(node: QNode | undefined, ...path: string[][]): QNode | undefined {
  let current = node;
  for (const aliases of path) current = child(current, ...aliases);
  return current;
}

/** Follows a path of alias lists; returns the node's value or undefined. */
export function at(node: QNode | undefined, ...path: string[][]): string | undefined {
  return nodeAt(node, ...path)?.value ?? undefined;
}

/**
 * A numeric value in one of `units`: absent or NA is null; anything else that is not such a
 * number names its line (a decimal comma, a value in another unit).
 */
export function numAt(node: QNode | undefined, units: Units, ...path: string[][]): number | null {
  const found = nodeAt(node, ...path);
  return found?.value == null ? null : requireNumber(found.value, found.key, found.line, units);
}

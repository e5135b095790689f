/**
 * Helpers for JSON request bodies that every HTTP boundary shares (the controller's
 * observation endpoint, the ingest function): RFC 6901 pointers for one-line errors, a refusal
 * of prototype-polluting keys (with a byte search that clears most raw bodies before any walk),
 * and short zod messages.
 *
 * JSON.parse never pollutes a prototype (it defines `__proto__` as an own key) and schemas
 * strip unknown keys, but a body carrying `__proto__` (or `constructor.prototype`) is an
 * attack or a bug, so the boundaries refuse it outright, as the rules loader does.
 */
import type { z } from 'zod';

/** RFC 6901: `/`-separated segments, `~` as `~0` and `/` as `~1`; '' is the whole document. */
export function jsonPointer(path: readonly PropertyKey[]): string {
  return path.map((part) => `/${String(part).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/** A container still to be searched, with the way back to the root (built only when needed). */
interface Frame {
  value: object;
  key: string | number | undefined;
  parent: Frame | undefined;
}

/**
 * The pointer of the first key that could pollute a prototype if the body were ever merged
 * into an object: `__proto__` anywhere, or `constructor` holding `prototype` (the rule of
 * secure-json-parse); undefined when there is none. Iterative, so nesting as deep as
 * JSON.parse accepts cannot overflow the stack.
 */
export function findPollutingKey(root: unknown): string | undefined {
  if (root === null || typeof root !== 'object') return undefined;
  const stack: Frame[] = [{ value: root, key: undefined, parent: undefined }];
  for (let parent = stack.pop(); parent; parent = stack.pop()) {
    const children: Frame[] = [];
    const entries: [string | number, unknown][] = Array.isArray(parent.value)
      ? parent.value.map((item: unknown, index) => [index, item])
      : Object.entries(parent.value);
    for (const [key, item] of entries) {
      if (
        key === '__proto__' ||
        (key === 'constructor' && isContainer(item) && Object.hasOwn(item, 'prototype'))
      ) {
        return jsonPointer(pathOf({ value: parent.value, key, parent }));
      }
      if (isContainer(item)) children.push({ value: item, key, parent });
    }
    // Reversed, so the first offending key in document order is the one reported.
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as Frame);
  }
  return undefined;
}

function pathOf(frame: Frame): (string | number)[] {
  const path: (string | number)[] = [];
  for (let at: Frame | undefined = frame; at?.key !== undefined; at = at.parent) path.push(at.key);
  return path.reverse();
}

function isContainer(value: unknown): value is object {
  return value !== null && typeof value === 'object';
}

/** A JSON object (not an array, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return isContainer(value) && !Array.isArray(value);
}

/**
 * Shorter messages than zod's defaults for the common issues; undefined keeps zod's own
 * (and a schema's own messages, such as the node-name rule, always win).
 */
export function describeZodIssue(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return `required (expected ${issue.expected})`;
    if (issue.expected === 'int') return 'expected an integer';
    return `expected ${issue.expected}, got ${kindOf(issue.input)}`;
  }
  if (issue.code === 'invalid_value' && issue.input === undefined) {
    return `required (expected ${issue.values.map((value) => JSON.stringify(value)).join(' or ')})`;
  }
  if (issue.code === 'too_big' && issue.origin === 'array') return `expected at most ${issue.maximum} items`;
  if (issue.code === 'too_small' && issue.origin === 'array') {
    return `expected at least ${issue.minimum} item${issue.minimum === 1 ? '' : 's'}`;
  }
  return undefined;
}

/** The JSON kind of a value, for "expected X, got Y". */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** What mayHoldPollutingKey searches for, encoded once. */
const RISKY_BYTES = ['__proto__', 'prototype', '\\u'].map((text) => Buffer.from(text));

/**
 * False when a JSON body, as raw bytes in `charset`, cannot hold a prototype-polluting key
 * (findPollutingKey's `__proto__`, or `constructor` holding `prototype`): in UTF-8 such a key
 * is spelled either literally or with a `\u` escape, so a body containing neither
 * `__proto__`, `prototype` nor `\u` has none, and a byte search (memmem) over it costs a
 * fraction of walking the parsed value. True (walk it) otherwise, and for any other charset.
 */
export function mayHoldPollutingKey(raw: Buffer, charset: string | null | undefined): boolean {
  if (charset !== 'utf-8' && charset !== 'utf8') return true;
  return RISKY_BYTES.some((bytes) => raw.includes(bytes));
}

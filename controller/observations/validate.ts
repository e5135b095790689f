/**
 * Validation of a parsed request body, all of it before any observation is accepted, with
 * one-line errors that name the field as a JSON pointer (RFC 6901):
 * `/observations/3/snapshot/payload/npus/0/temp_c: expected number, got string`.
 *
 * JSON.parse never pollutes a prototype (it defines `__proto__` as an own key) and the
 * schemas strip unknown keys, but a body carrying `__proto__` (or `constructor.prototype`)
 * is an attack or a bug, so it is refused outright, as the rules loader does.
 */
import type { z } from 'zod';
import { excerpt } from '../../core/errors.js';
import { AppError } from '../../platform/index.js';
import type { ObservationsRequest, ObservationsRequestSchema } from '../../contracts/index.js';

/** Longest error message, so a pointer through long unknown keys stays one readable line. */
const MAX_MESSAGE = 300;

/** The body is not a valid observations request: answer 400 with this message. */
export class InvalidBodyError extends AppError {
  /** The JSON pointer of the offending field ('' for the whole body). */
  readonly pointer: string;
  constructor(pointer: string, problem: string) {
    super('invalid_body', excerpt(`${pointer || 'body'}: ${problem}`, MAX_MESSAGE), { status: 400 });
    this.pointer = pointer;
  }
}

/**
 * The validated request (snapshot defaults filled in), or InvalidBodyError naming the first
 * offending field. Costs one pass over the body plus the schema's own.
 */
export function parseObservationsBody(body: unknown, schema: ObservationsRequestSchema): ObservationsRequest {
  const polluting = findPollutingKey(body);
  if (polluting !== undefined) throw new InvalidBodyError(polluting, 'forbidden key');
  const result = schema.safeParse(body, { error: describeIssue });
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw new InvalidBodyError(jsonPointer(issue?.path ?? []), issue?.message ?? 'invalid');
}

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

/**
 * Shorter messages than zod's defaults for the common issues; undefined keeps zod's own
 * (and a schema's own messages, such as the node-name rule, always win).
 */
function describeIssue(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return `required (expected ${issue.expected})`;
    if (issue.expected === 'int') return 'expected an integer';
    return `expected ${issue.expected}, got ${kindOf(issue.input)}`;
  }
  if (issue.code === 'too_big' && issue.origin === 'array') return `expected at most ${issue.maximum} items`;
  if (issue.code === 'too_small' && issue.origin === 'array') {
    return `expected at least ${issue.minimum} item${issue.minimum === 1 ? '' : 's'}`;
  }
  return undefined;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

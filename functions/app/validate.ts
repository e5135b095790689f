/**
 * Validation of what an agent sent, all of it before anything is forwarded, with one-line
 * errors that name the field as a JSON pointer (RFC 6901) from the root of the body:
 * `/snapshots/3/payload/gpus/0/temperature_gpu: expected number, got string` (a structured
 * CloudEvent's data sits under `/data`).
 *
 * JSON.parse never pollutes a prototype (it defines `__proto__` as an own key), but a body
 * carrying `__proto__` (or `constructor.prototype`) is an attack or a bug, and the CloudEvents
 * SDK copies envelope keys by assignment, so such a body is refused before anything reads it.
 * (The controller's observations/validate.ts has the same checks; functions/ may not import
 * controller/, so they are kept here too.)
 */
import type { z } from 'zod';
import { excerpt } from '../../core/errors.js';
import { AppError } from '../../platform/index.js';
import { snapshotSchema, type Snapshot, type SnapshotBatchSchema } from '../../contracts/index.js';

/** Longest error message, so a pointer through long unknown keys stays one readable line. */
const MAX_MESSAGE = 300;

/** Why a body was refused with 400 (the `code` of the answer and the metric's `reason`). */
export type InvalidReason = 'invalid_body' | 'forbidden_key' | 'invalid_cloudevent';

/** The body is not valid: answer 400 with this message. */
export class InvalidBodyError extends AppError {
  /** The JSON pointer (or `ce-*` header) of the offending field ('' for the whole body). */
  readonly pointer: string;
  declare readonly code: InvalidReason;
  constructor(pointer: string, problem: string, code: InvalidReason = 'invalid_body') {
    super(code, excerpt(`${pointer || 'body'}: ${problem}`, MAX_MESSAGE), { status: 400 });
    this.pointer = pointer;
  }
}

/**
 * The snapshots of `data`, which is one snapshot or a batch `{ "snapshots": [ … ] }` (told
 * apart by an own `snapshots` key), validated with defaults filled in; InvalidBodyError
 * naming the first offending field, its pointer prefixed with `at` (where `data` sits in the
 * body). Prototype keys are checked on the whole body beforehand (findPollutingKey).
 */
export function parseSnapshots(data: unknown, at: string, batchSchema: SnapshotBatchSchema): Snapshot[] {
  if (isPlainObject(data) && Object.hasOwn(data, 'snapshots')) {
    const result = batchSchema.safeParse(data, { error: describeIssue });
    if (result.success) return result.data.snapshots;
    throw invalid(result.error, at);
  }
  const result = snapshotSchema.safeParse(data, { error: describeIssue });
  if (result.success) return [result.data];
  throw invalid(result.error, at);
}

/** How many snapshots `data` claims to carry (for counting refused ones): a batch's length, else 1. */
export function claimedCount(data: unknown): number {
  const snapshots = isPlainObject(data) ? (data as { snapshots?: unknown }).snapshots : undefined;
  return Array.isArray(snapshots) ? Math.max(snapshots.length, 1) : 1;
}

function invalid(error: z.ZodError, at: string): InvalidBodyError {
  const issue = error.issues[0];
  return new InvalidBodyError(at + jsonPointer(issue?.path ?? []), issue?.message ?? 'invalid');
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

/** Throws InvalidBodyError (`forbidden_key`) when `body` holds a prototype-polluting key. */
export function refusePollutingKeys(body: unknown): void {
  const polluting = findPollutingKey(body);
  if (polluting !== undefined) throw new InvalidBodyError(polluting, 'forbidden key', 'forbidden_key');
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

/** The JSON kind of a value, for "expected X, got Y". */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

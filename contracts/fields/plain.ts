/**
 * The hot path's readers of plainly valid values (contracts/snapshot-fast-path.ts, and each
 * family's `readDevices`): each returns what the schema would for a value that is plainly
 * valid, and throws NOT_PLAIN at the first doubt, leaving the schema to decide and word the
 * error. Stricter than the schema is allowed, never looser: string bounds are counted in
 * UTF-16 units, where zod counts code points.
 */
import { z } from 'zod';
import { SNAPSHOT_LIMITS } from './limits.js';
import { FAULT_CODE_PATTERN, isPrintableText } from './text.js';
import type { ReadingBound } from './readings.js';

/** What z.iso.datetime({ offset: true }) matches (zod's own pattern). */
const DATETIME = z.core.regexes.datetime({ offset: true });

/**
 * Thrown inside at the first doubt and caught at the door: not plainly valid. One instance,
 * made once, so giving up costs no stack trace.
 */
export const NOT_PLAIN = new Error('not plainly valid');

/** An object as JSON.parse gives it. */
export type Fields = Record<string, unknown>;
/** What a reader builds: the schema's output, key for key. */
export type Out = Record<string, unknown>;

/** `read` of each item of an array of at most `max`. */
export function items(value: unknown, max: number, read: (item: unknown) => Out): Out[] {
  const items = array(value, max);
  const out: Out[] = [];
  for (const item of items) out.push(read(item));
  return out;
}

/** Fault codes (the schema's errorCodes); none when left out. */
export function errorCodes(value: unknown): string[] {
  if (value === undefined) return [];
  const items = array(value, SNAPSHOT_LIMITS.errorCodes);
  const out: string[] = [];
  for (const item of items) {
    if (typeof item !== 'string' || !FAULT_CODE_PATTERN.test(item)) throw NOT_PLAIN;
    out.push(item);
  }
  return out;
}

export function object(value: unknown): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw NOT_PLAIN;
  return value as Fields;
}

/** A sub-object the schema prefaults to `{}` when left out. */
export function objectOrEmpty(value: unknown): Fields {
  return value === undefined ? {} : object(value);
}

export function array(value: unknown, max: number): unknown[] {
  if (!Array.isArray(value) || value.length > max) throw NOT_PLAIN;
  return value;
}

export function string(value: unknown, min: number, max: number): string {
  if (typeof value !== 'string' || value.length < min || value.length > max || !isPrintableText(value))
    throw NOT_PLAIN;
  return value;
}

export function stringOr(value: unknown, max: number, absent: string): string {
  return value === undefined ? absent : string(value, 0, max);
}

/** A bus id, or null (also when left out). */
export function busId(value: unknown): string | null {
  return value === undefined || value === null ? null : string(value, 1, SNAPSHOT_LIMITS.busId);
}

export function datetime(value: unknown): string {
  if (typeof value !== 'string' || !DATETIME.test(value)) throw NOT_PLAIN;
  return value;
}

export function boolean(value: unknown): boolean {
  if (typeof value !== 'boolean') throw NOT_PLAIN;
  return value;
}

export function booleanOr(value: unknown, absent: boolean): boolean {
  return value === undefined ? absent : boolean(value);
}

/** A non-negative safe integer. */
export function count(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw NOT_PLAIN;
  return value;
}

/** A number within `bound` (which NaN and ±Infinity never are), or null (also when left out). */
export function reading(value: unknown, bound: ReadingBound): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !(value >= bound.min && value <= bound.max)) throw NOT_PLAIN;
  return value;
}

/**
 * Validation of a parsed request body, all of it before any observation is accepted, with
 * one-line errors that name the field as a JSON pointer (RFC 6901):
 * `/observations/3/snapshot/payload/npus/0/temp_c: expected number, got string`.
 *
 * JSON.parse never pollutes a prototype (it defines `__proto__` as an own key) and the
 * schemas strip unknown keys, but a body carrying `__proto__` (or `constructor.prototype`)
 * is an attack or a bug, so it is refused outright, as the rules loader does.
 */
import { excerpt } from '../../core/errors.js';
import { AppError, describeZodIssue, findPollutingKey, jsonPointer } from '../../platform/index.js';
import {
  fastParseObservationsRequest,
  observationsRequestSchema,
  type ObservationsRequest,
  type ObservationsRequestSchema,
} from '../../contracts/index.js';

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

/** The most observations a request may hold, and the request schema that says so. */
export interface ObservationsLimit {
  readonly max: number;
  readonly schema: ObservationsRequestSchema;
}

/** The limit of requests of 1 to `max` observations. */
export function observationsLimit(max: number): ObservationsLimit {
  return { max, schema: observationsRequestSchema(max) };
}

/**
 * The validated request (snapshot defaults filled in), or InvalidBodyError naming the first
 * offending field. A valid body is read by the contract's fast path
 * (contracts/snapshot-fast-path.ts, the schema's result at a fraction of its CPU), anything
 * else by the schema, which decides and names the field. `mayPollute` false: the raw body was
 * searched already (mayHoldPollutingKey) and cannot hold a polluting key, so it is not walked.
 */
export function parseObservationsBody(
  body: unknown,
  limit: ObservationsLimit,
  mayPollute = true,
): ObservationsRequest {
  const polluting = mayPollute ? findPollutingKey(body) : undefined;
  if (polluting !== undefined) throw new InvalidBodyError(polluting, 'forbidden key');
  const fast = fastParseObservationsRequest(body, limit.max);
  if (fast !== undefined) return fast;
  const result = limit.schema.safeParse(body, { error: describeZodIssue });
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw new InvalidBodyError(jsonPointer(issue?.path ?? []), issue?.message ?? 'invalid');
}

export { findPollutingKey, jsonPointer };

/**
 * The three ways a snapshot (or batch) arrives, told apart by headers before the body is read,
 * and the CloudEvents decoding (through the `cloudevents` SDK, HTTP binding):
 *
 * - `application/json` without `ce-*` attributes: the body is the snapshot or batch;
 * - `application/json` with `ce-specversion`, `ce-id`, `ce-source` or `ce-type`: a binary-mode
 *   CloudEvent; the body is its data, the attributes are headers;
 * - `application/cloudevents+json`: a structured-mode CloudEvent; the data is its `data`
 *   member (as JSON: `data_base64` is refused).
 *
 * Anything else is 415, including batched CloudEvents (`application/cloudevents-batch+json`):
 * a batch of snapshots is one event whose data is `{ "snapshots": [ … ] }`.
 *
 * The SDK fills in a missing `id` and `specversion` and builds events unvalidated, so the
 * attributes are checked here: specversion 1.0 as sent, the SDK's own schema (`validate()`),
 * and `type` among the accepted ones.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { CloudEvent, HTTP, ValidationError } from 'cloudevents';
import { excerpt } from '../../core/errors.js';
import { AppError } from '../../platform/index.js';
import { InvalidBodyError, isPlainObject, kindOf } from './validate.js';

/** How the request carries its snapshots. */
export type Transport = 'json' | 'cloudevent-binary' | 'cloudevent-structured';

/** The CloudEvents attributes a sender must set (ids in logs, never in answers). */
export interface EventAttributes {
  id: string;
  source: string;
  type: string;
}

/** A decoded body: the snapshot or batch, and where it sits in the body (a JSON pointer). */
export interface Decoded {
  data: unknown;
  /** '' for JSON and binary CloudEvents, '/data' for structured ones. */
  at: string;
  /** Set for a CloudEvent. */
  event?: EventAttributes;
}

const JSON_TYPE = 'application/json';
const STRUCTURED_TYPE = 'application/cloudevents+json';
/** Headers that make an application/json request a binary-mode CloudEvent. */
const BINARY_MARKERS = ['ce-specversion', 'ce-id', 'ce-source', 'ce-type'];

/** The transport of a request by its headers; AppError 415 for a media type not accepted. */
export function transportOf(headers: IncomingHttpHeaders): Transport {
  const mediaType = headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase();
  if (mediaType === STRUCTURED_TYPE) return 'cloudevent-structured';
  if (mediaType === JSON_TYPE) {
    return BINARY_MARKERS.some((name) => headers[name] !== undefined) ? 'cloudevent-binary' : 'json';
  }
  throw new AppError('unsupported_media_type', `Content-Type must be ${JSON_TYPE} or ${STRUCTURED_TYPE}`, {
    status: 415,
  });
}

/**
 * The snapshot or batch of a parsed body sent over `transport`; InvalidBodyError
 * (`invalid_cloudevent`) naming the attribute (`/type`, or `ce-type` in binary mode) when the
 * event is not one this function accepts.
 */
export function decodeBody(
  transport: Transport,
  headers: IncomingHttpHeaders,
  body: unknown,
  eventTypes: ReadonlySet<string>,
): Decoded {
  if (transport === 'json') return { data: body, at: '' };
  if (transport === 'cloudevent-structured') {
    checkEnvelope(body);
    const event = toEvent(headers, body, transport);
    return { data: event.data, at: '/data', event: attributesOf(event, transport, eventTypes) };
  }
  const event = toEvent(headers, body, transport);
  if (headers['ce-specversion'] === undefined) throw attributeError('specversion', 'required', transport);
  return { data: body, at: '', event: attributesOf(event, transport, eventTypes) };
}

/** What the SDK does not check in a structured envelope (it fills defaults in instead). */
function checkEnvelope(body: unknown): void {
  if (!isPlainObject(body)) {
    throw new InvalidBodyError('', `expected a CloudEvent object, got ${kindOf(body)}`, 'invalid_cloudevent');
  }
  for (const name of ['specversion', 'id']) {
    if (body[name] === undefined) throw attributeError(name, 'required', 'cloudevent-structured');
  }
  if (body.data_base64 !== undefined) {
    throw attributeError(
      'data_base64',
      'not accepted: send the snapshot as JSON data',
      'cloudevent-structured',
    );
  }
  if (body.data === undefined)
    throw attributeError('data', 'required (expected object)', 'cloudevent-structured');
  const contentType = body.datacontenttype;
  if (contentType !== undefined && (typeof contentType !== 'string' || !isJson(contentType))) {
    throw attributeError('datacontenttype', `expected ${JSON_TYPE}`, 'cloudevent-structured');
  }
}

function toEvent(headers: IncomingHttpHeaders, body: unknown, transport: Transport): CloudEvent<unknown> {
  let event: CloudEvent<unknown>;
  try {
    const decoded = HTTP.toEvent<unknown>({ headers, body });
    // Only batch mode yields several, and its media type is refused before the body is read.
    if (Array.isArray(decoded)) throw new ValidationError('batched CloudEvents are not accepted');
    event = decoded as CloudEvent<unknown>;
  } catch (error) {
    throw sdkError(error, transport);
  }
  if (event.specversion !== '1.0') {
    throw attributeError('specversion', `expected 1.0, got "${String(event.specversion)}"`, transport);
  }
  try {
    event.validate();
  } catch (error) {
    throw sdkError(error, transport);
  }
  return event;
}

function attributesOf(
  event: CloudEvent<unknown>,
  transport: Transport,
  eventTypes: ReadonlySet<string>,
): EventAttributes {
  if (!eventTypes.has(event.type)) {
    const expected = [...eventTypes].join(' or ');
    throw attributeError('type', `expected ${expected}, got "${event.type}"`, transport);
  }
  return { id: event.id, source: event.source, type: event.type };
}

/** An error naming the attribute as the sender wrote it: `ce-<name>` header or `/<name>`. */
function attributeError(name: string, problem: string, transport: Transport): InvalidBodyError {
  const where = transport === 'cloudevent-binary' ? `ce-${name}` : `/${name}`;
  return new InvalidBodyError(where, problem, 'invalid_cloudevent');
}

/** The SDK's ValidationError (its `errors` are ajv's) as one line naming the attribute. */
function sdkError(error: unknown, transport: Transport): InvalidBodyError {
  if (!(error instanceof TypeError)) throw error;
  const detail = (error as ValidationError).errors?.[0];
  if (detail && typeof detail === 'object') {
    const missing = (detail.params as { missingProperty?: unknown } | undefined)?.missingProperty;
    const name = typeof missing === 'string' ? missing : detail.instancePath.replace(/^\//, '');
    return attributeError(
      name,
      typeof missing === 'string' ? 'required' : (detail.message ?? 'invalid'),
      transport,
    );
  }
  const message = error.message.split('\n', 1)[0] ?? '';
  if (message === 'no cloud event detected') return attributeError('id', 'required', transport);
  return new InvalidBodyError('', `invalid CloudEvent: ${excerpt(message, 160)}`, 'invalid_cloudevent');
}

function isJson(contentType: string): boolean {
  return contentType.split(';', 1)[0]?.trim().toLowerCase() === JSON_TYPE;
}

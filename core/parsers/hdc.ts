/**
 * `hdc health -j`: the seed's health tool already prints the snapshot as JSON, either the
 * whole `hdc.health/v1` envelope or only its payload. This reads either, with JSON syntax
 * errors located by line and column, and recognises MindCluster ConfigMap JSON (a related
 * but different format) so that it gets a clear refusal instead of a schema error.
 *
 * A reading outside what hardware can report (READING_BOUNDS) is read as null before the
 * schema sees it, as the other tools' parsers read it: one glitching sensor makes one metric
 * unreadable, not the whole output refused.
 */
import {
  snapshotSchema,
  payloadSchema,
  type Payload,
  type ReadingField,
  type Snapshot,
} from '../../contracts/index.js';
import { FAMILIES } from '../../families/index.js';
import { ParseError, excerpt, parseWith } from '../errors.js';
import { NotSnapshotError, boundDeviceReadings, type OnOutOfRange, type ReadingOptions } from './common.js';

/** What `parse --from hdc` accepts, for error messages. */
export const HDC_EXPECTED =
  'parse --from hdc expects the JSON of `hdc health -j` (an hdc.health/v1 snapshot or its payload)';

/** Envelope fields used when the JSON holds only a payload. */
export interface EnvelopeDefaults {
  node: string;
  collectedAt: string;
  seq: number;
  bootId: string;
  collector: string;
}

/** 1-based line and column of a character offset. */
function position(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = (before.match(/\n/g) ?? []).length + 1;
  return { line, column: offset - before.lastIndexOf('\n') };
}

/** JSON's four blanks. */
const JSON_BLANKS = new Set([' ', '\t', '\n', '\r']);

/**
 * Offset of the first JSON syntax error, found by a small scanner: V8's own message gives a
 * position only for some errors (`Unexpected token` carries none in Node 24). It keeps the
 * open containers on a stack of its own, not on the call stack, so that 100,000 unclosed
 * `[` are an error at the end of the text rather than a stack overflow.
 */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const closers: string[] = [];
  const skipBlanks = (): void => {
    while (i < text.length && JSON_BLANKS.has(text[i] ?? '')) i++;
  };
  const readString = (): boolean => {
    if (text[i] !== '"') return false;
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text.charCodeAt(i) < 0x20) return false;
      i += text[i] === '\\' ? 2 : 1;
    }
    if (i >= text.length) return false;
    i++;
    return true;
  };
  const readLiteral = (): boolean => {
    const match = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(
      text.slice(i, i + 400),
    );
    if (!match || match[0] === '') return false;
    i += match[0].length;
    return true;
  };
  const readKey = (): boolean => {
    skipBlanks();
    if (!readString()) return false;
    skipBlanks();
    if (text[i] !== ':') return false;
    i++;
    return true;
  };
  for (;;) {
    // Here a value must begin.
    skipBlanks();
    const c = text[i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      i++;
      skipBlanks();
      if (text[i] !== close) {
        closers.push(close);
        if (close === '}' && !readKey()) return Math.min(i, text.length);
        continue;
      }
      i++;
    } else if (!(c === '"' ? readString() : readLiteral())) return Math.min(i, text.length);
    // A value ended: close containers, or go on to the next element after a comma.
    for (;;) {
      skipBlanks();
      const close = closers[closers.length - 1];
      if (close === undefined) return i;
      if (text[i] === close) {
        closers.pop();
        i++;
        continue;
      }
      if (text[i] !== ',') return Math.min(i, text.length);
      i++;
      if (close === '}' && !readKey()) return Math.min(i, text.length);
      break;
    }
  }
}

/** Where V8's JSON message starts repeating the location or quoting the text. */
const V8_LOCATION_MARKERS = [' in JSON at position ', ' (line ', ', "', ', ..."'];

/**
 * V8's reason without its own location and its quote of the text (which may span lines or be
 * long): `Expected ',' or '}' after property value`, `Unexpected token 'x'`. Cut with indexOf,
 * never a `.*$` pattern, and escaped: the token V8 names may be a control character.
 */
function jsonReason(message: string): string {
  let reason = message.split('\n')[0] ?? '';
  for (const marker of V8_LOCATION_MARKERS) {
    const at = reason.indexOf(marker);
    if (at >= 0) reason = reason.slice(0, at);
  }
  return excerpt(reason.trim());
}

/** JSON.parse with the error located: a ParseError naming line and column, on one line. */
export function parseJsonText(text: string): unknown {
  if (text.trim() === '') throw new ParseError('empty input: expected JSON', 1);
  // A UTF-8 byte-order mark (Windows editors) is not JSON but says nothing wrong about it.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const offset = jsonErrorOffset(text);
    // At the end of the text the cause is a cut-off document: point at its last character.
    const where = position(text, offset >= text.length ? text.trimEnd().length : offset);
    throw new ParseError(`invalid JSON at column ${where.column}: ${jsonReason(message)}`, where.line, {
      cause: error,
    });
  }
}

/** Names MindCluster's ConfigMap JSON shapes, which carry faults but are not snapshots. */
function mindClusterFormat(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const keys = Object.keys(value);
  if (keys.includes('DeviceInfo'))
    return 'a MindCluster device-info ConfigMap (DeviceInfoCfg of mindx-dl-deviceinfo-<node>)';
  if (keys.includes('NodeInfo'))
    return 'a MindCluster node-info ConfigMap (NodeInfo of mindx-dl-nodeinfo-<node>)';
  if (keys.length > 0 && keys.every((k) => k.startsWith('mindx-dl-')))
    return 'a MindCluster cluster-info ConfigMap (ClusterD cluster-info-device-*)';
  return null;
}

function isEnvelope(value: object): boolean {
  return 'schema' in value || 'payload' in value;
}

/** A field of `value` when it is an object. */
function fieldOf(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

/**
 * Sets every reading of a payload as JSON gave it (not yet validated) that is a number out of
 * range to null, telling `onOutOfRange`: each family walks its own device records
 * (`boundJsonReadings`). A GPU every reading of which is then null, one or more of them for
 * being out of range, is marked `readable: false` (unless it says otherwise): nothing of it
 * could be read, which is not a GPU off the bus.
 */
function boundPayloadReadings(payload: unknown, onOutOfRange?: OnOutOfRange): void {
  const family = FAMILIES.get(fieldOf(payload, 'family'));
  family?.boundJsonReadings(payload as Record<string, unknown>, (device, fields) =>
    boundDeviceReadings(device, fields as readonly ReadingField[], onOutOfRange),
  );
}

/**
 * Parses `hdc health -j` JSON into a validated snapshot. A whole envelope is validated as it
 * is; a bare payload (`{"family": ...}`) is wrapped in an envelope made from `defaults`.
 * Readings out of range read as null, told to `options.onOutOfRange` (boundPayloadReadings).
 * Validation errors are ValidationErrors naming the field (`payload.npus[3].temp_c`).
 */
export function parseHdcJson(
  text: string,
  defaults: EnvelopeDefaults,
  options: ReadingOptions = {},
): Snapshot {
  const value = parseJsonText(text);
  const mind = mindClusterFormat(value);
  if (mind !== null) throw new NotSnapshotError(mind, HDC_EXPECTED, 1);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ParseError(
      `expected a JSON object, found ${Array.isArray(value) ? 'an array' : typeof value}; ${HDC_EXPECTED}`,
      1,
    );
  }
  if (isEnvelope(value)) {
    boundPayloadReadings(fieldOf(value, 'payload'), options.onOutOfRange);
    return parseWith(snapshotSchema, value);
  }
  if ('family' in value) {
    boundPayloadReadings(value, options.onOutOfRange);
    return wrapPayload(parseWith(payloadSchema, value, 'payload'), defaults);
  }
  throw new ParseError(`JSON object without 'schema', 'payload' or 'family'; ${HDC_EXPECTED}`, 1);
}

/** Builds and validates the envelope around a payload. */
export function wrapPayload(payload: Payload | object, defaults: EnvelopeDefaults): Snapshot {
  return parseWith(snapshotSchema, {
    schema: 'hdc.health/v1',
    node: defaults.node,
    boot_id: defaults.bootId,
    seq: defaults.seq,
    collected_at: defaults.collectedAt,
    collector: defaults.collector,
    cached: false,
    payload,
  });
}

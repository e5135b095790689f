/**
 * `hdc health -j`: the seed's health tool already prints the snapshot as JSON, either the
 * whole `hdc.health/v1` envelope or only its payload. This reads either, with JSON syntax
 * errors located by line and column, and recognises MindCluster ConfigMap JSON (a related
 * but different format) so that it gets a clear refusal instead of a schema error.
 */
import { snapshotSchema, payloadSchema, type Payload, type Snapshot } from '../../contracts/snapshot.js';
import { ParseError, parseWith } from '../errors.js';
import { NotSnapshotError } from './common.js';

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

/**
 * Offset of the first JSON syntax error, found by a small recursive-descent scan: V8's own
 * message gives a position only for some errors (`Unexpected token` carries none in Node 24).
 */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const fail = (): never => {
    throw i;
  };
  const ws = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i] ?? '')) i++;
  };
  const literal = (): void => {
    const match = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(
      text.slice(i, i + 400),
    );
    if (!match || match[0] === '') fail();
    i += (match as RegExpExecArray)[0].length;
  };
  const string = (): void => {
    if (text[i] !== '"') fail();
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text.charCodeAt(i) < 0x20) fail();
      i += text[i] === '\\' ? 2 : 1;
    }
    if (i >= text.length) fail();
    i++;
  };
  const list = (close: string, item: () => void): void => {
    i++;
    ws();
    if (text[i] === close) {
      i++;
      return;
    }
    for (;;) {
      item();
      ws();
      if (text[i] === close) {
        i++;
        return;
      }
      if (text[i] !== ',') fail();
      i++;
    }
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      list('}', () => {
        ws();
        string();
        ws();
        if (text[i] !== ':') fail();
        i++;
        value();
      });
    } else if (c === '[') list(']', value);
    else if (c === '"') string();
    else literal();
  };
  try {
    value();
    ws();
    if (i < text.length) fail();
  } catch (offset) {
    if (typeof offset === 'number') return Math.min(offset, text.length);
    throw offset;
  }
  return text.length;
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
    const where = position(text, offset >= text.length ? text.replace(/\s+$/, '').length : offset);
    // Drop V8's own location and its quote of the text (which may span lines).
    const reason = (message.split('\n')[0] ?? '')
      .replace(/\s*\(line \d+ column \d+\)/, '')
      .replace(/\s+in JSON at position \d+.*$/, '')
      .replace(/, (\.\.\.)?".*$/, '');
    throw new ParseError(`invalid JSON at column ${where.column}: ${reason}`, where.line, { cause: error });
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

/**
 * Parses `hdc health -j` JSON into a validated snapshot. A whole envelope is validated as it
 * is; a bare payload (`{"family": ...}`) is wrapped in an envelope made from `defaults`.
 * Validation errors are ValidationErrors naming the field (`payload.npus[3].temp_c`).
 */
export function parseHdcJson(text: string, defaults: EnvelopeDefaults): Snapshot {
  const value = parseJsonText(text);
  const mind = mindClusterFormat(value);
  if (mind !== null) throw new NotSnapshotError(mind, HDC_EXPECTED, 1);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ParseError(
      `expected a JSON object, found ${Array.isArray(value) ? 'an array' : typeof value}; ${HDC_EXPECTED}`,
      1,
    );
  }
  if (isEnvelope(value)) return parseWith(snapshotSchema, value);
  if ('family' in value) return wrapPayload(parseWith(payloadSchema, value, 'payload'), defaults);
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

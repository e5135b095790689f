import { describe, expect, it } from '@jest/globals';
import { snapshotSchema } from '../../contracts/index.js';
import { ParseError, ValidationError } from '../errors.js';
import { NotSnapshotError } from './common.js';
import { jsonErrorOffset, parseHdcJson, parseJsonText } from './hdc.js';
import { HDC_ENVELOPE } from './testing.js';
import { readExampleJson } from '../../test/fixtures.js';
const DEFAULTS = {
  node: 'n1',
  collectedAt: '2026-01-01T00:00:00.000Z',
  seq: 1,
  bootId: '',
  collector: 'hdc',
};

describe('parseHdcJson', () => {
  it('validates a whole envelope as it is, ignoring the defaults', () => {
    const snapshot = parseHdcJson(HDC_ENVELOPE, DEFAULTS);
    expect(snapshot).toMatchObject({ node: 'hdc-node-1', seq: 4, collector: 'hdc' });
    expect(snapshot.payload.family === '910B' && snapshot.payload.npus[0]?.temp_c).toBe(52);
  });

  it.each(['snapshot-910b.json', 'snapshot-310p.json', 'snapshot-nvidia.json'])(
    'reads the example %s as the schema does',
    (name) => {
      const example = readExampleJson(name);
      expect(parseHdcJson(JSON.stringify(example, null, 2), DEFAULTS)).toEqual(snapshotSchema.parse(example));
    },
  );

  it('wraps a bare payload with the defaults', () => {
    const snapshot = parseHdcJson('{"family":"nvidia","gpus":[{"index":0,"temperature_gpu":40}]}', DEFAULTS);
    expect(snapshot).toMatchObject({
      node: 'n1',
      seq: 1,
      collector: 'hdc',
      payload: { gpus: [{ index: 0, temperature_gpu: 40, power_draw_w: null }] },
    });
  });

  it('a schema violation names the field', () => {
    const error = (() => {
      try {
        parseHdcJson('{"family":"910B","npus":[{"npu":0,"temp_c":"hot"}]}', DEFAULTS);
      } catch (e) {
        return e as ValidationError;
      }
      throw new Error('no error');
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.path).toBe('payload.npus[0].temp_c');
  });

  it('MindCluster ConfigMap JSON is refused with what it is', () => {
    expect(() => parseHdcJson('{"DeviceInfo":{"DeviceList":{}},"CheckCode":"x"}', DEFAULTS)).toThrow(
      NotSnapshotError,
    );
  });

  it('an object of another shape is a clear error', () => {
    expect(() => parseHdcJson('{"hello":1}', DEFAULTS)).toThrow(/without 'schema', 'payload' or 'family'/);
    expect(() => parseHdcJson('[1]', DEFAULTS)).toThrow(/found an array/);
  });
});

describe('parseJsonText', () => {
  it.each([
    ['{\n  "a": 1,\n  "b": }\n', 3, 8],
    ['{\n  "a": 1,\n', 2, 10],
    ['{"a" 1}', 1, 6],
  ])('locates the syntax error in %j', (text, line, column) => {
    let error: ParseError | undefined;
    try {
      parseJsonText(text);
    } catch (e) {
      error = e as ParseError;
    }
    expect(error).toBeInstanceOf(ParseError);
    expect(error?.line).toBe(line);
    expect(error?.message).toContain(`at column ${column}:`);
    expect(error?.message).not.toContain('\n');
  });

  it('an unterminated string padded with 80,000 blanks is located at the cut, quoting nothing', () => {
    const text = `{"a": "${' '.repeat(80_000)}x`;
    expect(() => parseJsonText(text)).toThrow(/^line 1: invalid JSON at column 80009: Unterminated string$/);
  });

  it('100,000 unclosed brackets are an error at the end, not a stack overflow', () => {
    const text = '['.repeat(100_000);
    expect(jsonErrorOffset(text)).toBe(100_000);
    expect(() => parseJsonText(text)).toThrow(ParseError);
  });

  it('a control character V8 names is escaped in the message', () => {
    expect(() => parseJsonText('{"a": \u0001}')).toThrow(/Unexpected token '\\u0001'/);
  });
});

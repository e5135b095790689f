import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { ParseError, ValidationError } from '../errors.js';
import { NotSnapshotError } from './common.js';
import { parseHdcJson, parseJsonText } from './hdc.js';
import { SHARED_FIXTURES_DIR } from '../../test/fixtures.js';

const FIXTURES = SHARED_FIXTURES_DIR;
const DEFAULTS = {
  node: 'n1',
  collectedAt: '2026-01-01T00:00:00.000Z',
  seq: 1,
  bootId: '',
  collector: 'hdc',
};

describe('parseHdcJson', () => {
  it('validates a whole envelope as it is', () => {
    const snapshot = parseHdcJson(readFileSync(`${FIXTURES}snapshot-310p.json`, 'utf8'), DEFAULTS);
    expect(snapshot.node).toBe('atlas300-node-007');
    expect(snapshot.payload.family === '310P' && snapshot.payload.cards[0]?.mcu_power_w).toBe(72.5);
  });

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
});

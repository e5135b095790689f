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

describe('parseHdcJson: readings outside what hardware can report', () => {
  /** The parse's out-of-range readings, as `onOutOfRange` is told them. */
  const told = (): { readings: unknown[]; onOutOfRange: (reading: unknown) => void } => {
    const readings: unknown[] = [];
    return { readings, onOutOfRange: (reading) => readings.push(reading) };
  };

  it('an envelope: a 1e300 °C NPU and a 1e300 °C HBM read as null, told by field (issue 26)', () => {
    const text = HDC_ENVELOPE.replace('"temp_c": 52', '"temp_c": 1e300').replace(
      '"temp_c": 40',
      '"temp_c": -1e300',
    );
    const { readings, onOutOfRange } = told();
    const snapshot = parseHdcJson(text, DEFAULTS, { onOutOfRange });
    const npu = snapshot.payload.family === '910B' ? snapshot.payload.npus[0] : undefined;
    expect(npu).toMatchObject({ temp_c: null, power_w: 98.5, hbm: { temp_c: null, used_mb: 100 } });
    expect(readings).toEqual([
      { field: 'temp_c', value: 1e300 },
      { field: 'hbm.temp_c', value: -1e300 },
    ]);
  });

  it('a bare 310P payload: a card at 65535 W and a chip counting -1 ECC errors', () => {
    const payload = {
      family: '310P',
      cards: [
        {
          card: 1,
          mcu_power_w: 65535,
          chips: [{ chip: 0, device_id: 0, temperature: 44, ddr: { ecc_sbe: -1, ecc_dbe: 0 } }],
        },
      ],
    };
    const { readings, onOutOfRange } = told();
    const snapshot = parseHdcJson(JSON.stringify(payload), DEFAULTS, { onOutOfRange });
    const card = snapshot.payload.family === '310P' ? snapshot.payload.cards[0] : undefined;
    expect(card).toMatchObject({
      mcu_power_w: null,
      chips: [{ temperature: 44, ddr: { ecc_sbe: null, ecc_dbe: 0 } }],
    });
    expect(readings).toEqual([
      { field: 'mcu_power_w', value: 65535 },
      { field: 'ddr.ecc_sbe', value: -1 },
    ]);
  });

  it('a GPU whose every reading was out of range is unreadable, not off the bus; one reading keeps it readable', () => {
    const gpus = [
      { index: 0, uuid: 'GPU-0', temperature_gpu: 1e300, power_draw_w: -1 },
      { index: 1, uuid: 'GPU-1', temperature_gpu: 1e300, power_draw_w: 300 },
      { index: 2, uuid: 'GPU-2', temperature_gpu: 1e300, readable: true },
    ];
    const snapshot = parseHdcJson(JSON.stringify({ family: 'nvidia', gpus }), DEFAULTS);
    const parsed = snapshot.payload.family === 'nvidia' ? snapshot.payload.gpus : [];
    expect(parsed.map((gpu) => [gpu.temperature_gpu, gpu.power_draw_w, gpu.readable])).toEqual([
      [null, null, false],
      [null, 300, undefined],
      [null, null, true],
    ]);
  });

  it('leaves what is not a number to the schema, which names the field', () => {
    const text = HDC_ENVELOPE.replace('"temp_c": 52', '"temp_c": "hot"');
    expect(() => parseHdcJson(text, DEFAULTS)).toThrow(ValidationError);
    expect(() => parseHdcJson(text, DEFAULTS)).toThrow(/payload\.npus\[0\]\.temp_c/);
  });
});

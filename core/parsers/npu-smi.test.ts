import { describe, expect, it } from '@jest/globals';
import { ParseError } from '../errors.js';
import { ToolError } from './common.js';
import { parseNpuSmiInfo, parseNpuSmiMapping, parseNpuSmiTable } from './npu-smi.js';
import {
  NPU_SMI_310P_TABLE,
  NPU_SMI_910B_TABLE,
  NPU_SMI_A3_TABLE,
  NPU_SMI_MAPPING,
  NPU_SMI_T_ECC,
  NPU_SMI_T_HEALTH,
  NPU_SMI_T_POWER,
} from './testing.js';
import { describeWithRealFixtures, readRealFixture } from '../../test/fixtures.js';

const read = readRealFixture;

const HEAD_910 = [
  '+------------------------------------------------------------------------------------------------+',
  '| npu-smi 24.1.0                   Version: 24.1.0                                               |',
  '+---------------------------+---------------+----------------------------------------------------+',
  '| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|',
  '| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |',
  '+===========================+===============+====================================================+',
];
const ROW_0 = [
  '| 0     910B3               | Critical      | NA          91                0    / 0             |',
  '| 0                         | 0000:C1:00.0  | -           0    / 0          NA   / 65536         |',
];
const ROW_1 = [
  '| 1     910B3               | OK            | 98.0        40                0    / 0             |',
  '| 0                         | 0000:C2:00.0  | 3           0    / 0          100/ 65536           |',
];
const BORDER =
  '+===========================+===============+====================================================+';

describe('parseNpuSmiTable (synthetic tables)', () => {
  it('910B: one entry per NPU with its values, the process section ignored', () => {
    const p = parseNpuSmiTable(NPU_SMI_910B_TABLE);
    if (p.family !== '910B') throw new Error('family');
    expect(p.driver_version).toBe('24.1.0');
    expect(p.npus.map((n) => [n.npu, n.health, n.temp_c, n.power_w, n.aicore_pct])).toEqual([
      [0, 'OK', 41, 124.9, 27],
      [1, 'Critical', 91, null, null],
    ]);
    expect(p.npus[0]).toMatchObject({
      hbm: { used_mb: 59718, total_mb: 65536 },
      pcie: { bus_id: '0000:C1:00.0' },
    });
  });

  it('A3: two chips per NPU with their phy ids, "-" power is null', () => {
    const p = parseNpuSmiTable(NPU_SMI_A3_TABLE);
    if (p.family !== '910B') throw new Error('family');
    expect(p.npus.map((n) => [n.npu, n.chip, n.phy_id, n.power_w])).toEqual([
      [0, 0, 0, 162.8],
      [0, 1, 1, null],
    ]);
  });

  it('310P Duo: chips grouped into a card, DDR usage, no card power', () => {
    const p = parseNpuSmiTable(NPU_SMI_310P_TABLE);
    if (p.family !== '310P') throw new Error('family');
    expect(p.cards).toHaveLength(1);
    expect(p.cards[0]).toMatchObject({
      card: 2944,
      name: '310P3',
      bus_id: '0000:0C:00.0',
      mcu_power_w: null,
    });
    expect(
      p.cards[0]?.chips.map((c) => [c.chip, c.device_id, c.health, c.temperature, c.ddr.used_mb]),
    ).toEqual([
      [0, 0, 'OK', 45, 1255],
      [1, 1, 'Alarm', 47, 1472],
    ]);
  });

  it('points at the NPU whose second (Chip, Bus-Id) row is missing', () => {
    const lines = NPU_SMI_910B_TABLE.split('\n');
    expect(lines[7]).toMatch(/0000:C1:00\.0/); // NPU 0's second row, line 8
    lines.splice(7, 1);
    expect(() => parseNpuSmiTable(lines.join('\n'))).toThrow(/^line 8: NPU row '0 +910B3' has no second row/);
  });

  it('dcmi failures are ToolErrors', () => {
    expect(() =>
      parseNpuSmiTable('DrvMngGetConsoleLogLevel failed.\ndcmi module initialize failed. ret is -8005\n'),
    ).toThrow(new ToolError('npu-smi failed: dcmi module initialize failed. ret is -8005', 2));
  });

  it('a header row padded with 80,000 blanks fails at once, quoting an excerpt', () => {
    const error = (() => {
      try {
        parseNpuSmiTable(`| NPU  Name | Health |${' '.repeat(80_000)}x`);
      } catch (e) {
        return e as ParseError;
      }
      throw new Error('no error');
    })();
    expect(error.message).toMatch(
      /^line 1: table row is cut short \(no closing '\|'\): '\| NPU {2}Name \| Health \| +…'$/,
    );
    expect(error.message.length).toBeLessThan(150);
  });

  it('a control character in a cell is quoted escaped', () => {
    const bad = (ROW_1[0] ?? '').replace('98.0', '9\u00078');
    expect(() => parseNpuSmiTable([...HEAD_910, bad, ROW_1[1], BORDER].join('\n'))).toThrow(
      /^line 7: power: expected a number or NA, found '9\\u00078'$/,
    );
  });

  it('a header whose unit differs from the value read is refused (another layout, never misread)', () => {
    const head = HEAD_910.map((line) => line.replace('Temp(C)', 'Temp(F)'));
    expect(() => parseNpuSmiTable([...head, ...ROW_1, BORDER].join('\n'))).toThrow(
      /^line 4: header 'Temp\(F\)' is in 'F'; expected C$/,
    );
  });

  it('a value printed with a unit in a bare-number column is refused', () => {
    const bad = (ROW_1[0] ?? '').replace('40 ', '40C');
    expect(() => parseNpuSmiTable([...HEAD_910, bad, ROW_1[1], BORDER].join('\n'))).toThrow(
      /^line 7: temp: '40C' is in C; expected no unit$/,
    );
  });

  it('reads NA and "-" as null, and "100/ 65536" without a space', () => {
    const p = parseNpuSmiTable([...HEAD_910, ...ROW_0, BORDER, ...ROW_1, BORDER].join('\n'));
    if (p.family !== '910B') throw new Error('family');
    expect(p.npus[0]).toMatchObject({
      health: 'Critical',
      power_w: null,
      temp_c: 91,
      aicore_pct: null,
      hbm: { used_mb: null, total_mb: 65536 },
    });
    expect(p.npus[1]?.hbm).toMatchObject({ used_mb: 100, total_mb: 65536 });
    expect(p.npus[1]?.phy_id).toBeUndefined();
  });

  it('tolerates trailing spaces and CRLF line endings', () => {
    const text = [...HEAD_910, ...ROW_1, BORDER].map((l) => `${l}   `).join('\r\n');
    const p = parseNpuSmiTable(text);
    expect(p.family === '910B' && p.npus[0]?.power_w).toBe(98);
  });

  it('parses a table whose closing border was cut, when the last NPU is complete', () => {
    const p = parseNpuSmiTable([...HEAD_910, ...ROW_0, BORDER, ...ROW_1].join('\n'));
    expect(p.family === '910B' && p.npus).toHaveLength(2);
  });

  it('a row cut mid-way is an error naming its line', () => {
    const cut = (ROW_1[1] ?? '').slice(0, 40);
    expect(() => parseNpuSmiTable([...HEAD_910, ...ROW_0, BORDER, ROW_1[0], cut].join('\n'))).toThrow(
      new ParseError(`table row is cut short (no closing '|'): '${cut.trim()}'`, 11),
    );
  });

  it('a first row without its second row is an error naming the first row', () => {
    const error = (() => {
      try {
        parseNpuSmiTable([...HEAD_910, ...ROW_0, BORDER, ROW_1[0]].join('\n'));
      } catch (e) {
        return e as ParseError;
      }
      throw new Error('no error');
    })();
    expect(error.line).toBe(10);
    expect(error.message).toMatch(/second row \(Chip, Bus-Id\) is missing/);
  });

  it('a value that is not a number is an error naming the cell', () => {
    const bad = (ROW_1[0] ?? '').replace('98.0', 'hot!');
    expect(() => parseNpuSmiTable([...HEAD_910, bad, ROW_1[1], BORDER].join('\n'))).toThrow(
      /^line 7: power: expected a number or NA, found 'hot!'$/,
    );
  });

  it('a missing value (cell with too few values) is an error', () => {
    const bad = (ROW_1[0] ?? '').replace('40 ', '   ');
    expect(() => parseNpuSmiTable([...HEAD_910, bad, ROW_1[1], BORDER].join('\n'))).toThrow(
      /^line 7: expected 3 values under/,
    );
  });

  it('a table with a header and no NPU row is an error, not an empty payload', () => {
    expect(() => parseNpuSmiTable([...HEAD_910, BORDER].join('\n'))).toThrow(/lists no NPU/);
  });
});

describe('parseNpuSmiInfo (-t key : value)', () => {
  it('health Alarm: error codes, a two-line Error Information', () => {
    const r = parseNpuSmiInfo(NPU_SMI_T_HEALTH);
    expect(r).toMatchObject({ type: 'health', health: 'Alarm', errorCodes: ['A4025021', '8C03A000'] });
    expect(r.errorInformation).toBe('heart beat lost; node type=adda, event state=Heartbeat Lost.');
  });

  it('ecc counters of the sample', () => {
    expect(parseNpuSmiInfo(NPU_SMI_T_ECC).ecc).toEqual({
      ddrSingleBit: 2,
      ddrDoubleBit: null,
      hbmSingleBit: 7,
      hbmDoubleBit: 1,
    });
  });

  it('310P MCU card power from -t power', () => {
    expect(parseNpuSmiInfo(NPU_SMI_T_POWER)).toMatchObject({
      type: 'power',
      npu: 2944,
      chipCount: 2,
      mcuPowerW: 42.9,
    });
  });

  it('a numeric value with a unit or text names its line', () => {
    expect(() => parseNpuSmiInfo('\tNPU ID : 3\n\tHBM Single Bit Error Count : 7 MB\n')).toThrow(
      /^line 2: HBM Single Bit Error Count: '7 MB' is in MB; expected no unit$/,
    );
    expect(() => parseNpuSmiInfo('\tNPU ID : three\n')).toThrow(
      /^line 1: NPU ID: expected a number or NA, found 'three'$/,
    );
  });

  it('a line of 80,000 blanks and a letter is an error at once', () => {
    expect(() => parseNpuSmiInfo(`\tHealth Status : OK\n\t${' '.repeat(80_000)}x`)).toThrow(
      /^line 2: expected 'key : value', found 'x'$/,
    );
  });

  it('ecc counters', () => {
    const r = parseNpuSmiInfo(
      '\tNPU ID : 3\n\tChip Count : 1\n\n\tDDR Single Bit Error Count : 2\n\tDDR Double Bit Error Count : NA\n\tHBM Single Bit Error Count : 7\n\tHBM Double Bit Error Count : 1\n\tChip ID : 0\n',
    );
    expect(r.npu).toBe(3);
    expect(r.ecc).toEqual({ ddrSingleBit: 2, ddrDoubleBit: null, hbmSingleBit: 7, hbmDoubleBit: 1 });
    expect(r.sections[1]?.chip).toBe(0);
  });

  it('a line that is not key : value is an error naming the line', () => {
    expect(() => parseNpuSmiInfo('\tHealth Status : OK\nwhat is this\n')).toThrow(
      /^line 2: expected 'key : value'/,
    );
  });

  it('a non-hex error code is an error', () => {
    expect(() => parseNpuSmiInfo('\tHealth Status : Alarm\n\tError Code : 80E01801 oops!\n')).toThrow(
      /^line 2: Error Code: 'oops!'/,
    );
  });
});

describe('parseNpuSmiMapping (-m)', () => {
  it('reads the TAB-indented mapping with its MCU row', () => {
    expect(parseNpuSmiMapping(NPU_SMI_MAPPING)).toEqual([
      { npu: 0, chip: 0, logicId: 0, name: 'Ascend 310P3' },
      { npu: 0, chip: 1, logicId: null, name: 'Mcu' },
    ]);
  });

  it('a broken row is an error naming it', () => {
    expect(() => parseNpuSmiMapping('NPU ID   Chip ID   Chip Logic ID   Chip Name\n0 0 x Ascend\n')).toThrow(
      /^line 2:/,
    );
  });
});

describeWithRealFixtures('npu-smi on real outputs', () => {
  it('points at the NPU whose second (Chip, Bus-Id) row is missing', () => {
    const lines = read('npu-smi-910b3-8npu-1.txt').split('\n');
    expect(lines[16]).toMatch(/0000:82:00\.0/); // NPU 3's second row, line 17
    lines.splice(16, 1);
    expect(() => parseNpuSmiTable(lines.join('\n'))).toThrow(
      /^line 17: NPU row '3 +910B3' has no second row/,
    );
  });
  it('dcmi failures are ToolErrors', () => {
    expect(() => parseNpuSmiTable(read('npu-smi-error-8020-2.txt'))).toThrow(ToolError);
  });

  it('process sections are ignored (910A with four processes per NPU)', () => {
    const p = parseNpuSmiTable(read('npu-smi-910a-8npu-procs-5.txt'));
    expect(p.family === '910B' && p.npus.map((n) => n.health)).toEqual([
      'OK',
      'OK',
      'OK',
      'Warning',
      'OK',
      'OK',
      'OK',
      'Warning',
    ]);
  });

  it('the 26.x wide layout reads like the narrow one', () => {
    const p = parseNpuSmiTable(read('npu-smi-910b3-8npu-wide-26x-2.txt'));
    expect(p.family === '910B' && p.npus[0]).toMatchObject({
      temp_c: 50,
      power_w: 100,
      hbm: { used_mb: 8676, total_mb: 65536 },
    });
  });

  it('the oldest 80-column 310 layout (no Hugepages column)', () => {
    const p = parseNpuSmiTable(read('npu-smi-310-4chip-2.txt'));
    if (p.family !== '310P') throw new Error('family');
    expect(p.cards[0]).toMatchObject({ card: 215, bus_id: '0000:DA:00.0' });
    expect(p.cards[0]?.chips.map((c) => c.ddr.used_mb)).toEqual([2703, 2703, 2703, 2703]);
  });
  it('health Alarm: error codes, multi-line error information', () => {
    const r = parseNpuSmiInfo(read('npu-smi-t-health-910a-alarm-2.txt'));
    expect(r.type).toBe('health');
    expect(r.health).toBe('Alarm');
    expect(r.errorCodes).toEqual(['A4025021', '8C03A000', '8C084E00']);
    expect(r.errorInformation).toMatch(
      /^ascend_monitor adda heart beat lost error; node type=process-manager/,
    );
    expect(r.errorInformation).toMatch(/Heartbeat Lost\.$/);
  });

  it('health OK, space-indented doc sample: NA error code is no code', () => {
    const r = parseNpuSmiInfo(read('npu-smi-t-health-910a-1.txt'));
    expect(r).toMatchObject({
      type: 'health',
      health: 'OK',
      errorCodes: [],
      errorInformation: null,
      npu: null,
    });
  });

  it('310P MCU card power from -t power and -t common; per-chip temperatures', () => {
    expect(parseNpuSmiInfo(read('npu-smi-t-power-310p3-duo-1.txt'))).toMatchObject({
      type: 'power',
      npu: 2944,
      mcuPowerW: 42.9,
    });
    const common = parseNpuSmiInfo(read('npu-smi-t-common-310p3-duo-1.txt'));
    expect(common).toMatchObject({
      type: 'common',
      chipCount: 2,
      mcuPowerW: 42.8,
      chipTemperatures: { 0: 45, 1: 47 },
    });
    expect(common.sections.find((s) => s.chipName === 'mcu')?.fields['Temperature(C)']).toBe('48');
  });

  it('usages: Chip ID printed at the end of each block still names it', () => {
    const r = parseNpuSmiInfo(read('npu-smi-t-usages-310p3-duo-2.txt'));
    expect(r.sections.map((s) => [s.chip, s.fields['DDR Capacity(MB)']])).toEqual([
      [null, undefined],
      [0, '44278'],
      [1, '43693'],
    ]);
  });

  it('board and product', () => {
    expect(parseNpuSmiInfo(read('npu-smi-t-board-910a-3.txt'))).toMatchObject({
      type: 'board',
      npu: 0,
      busId: '0000:61:00.0',
    });
    expect(parseNpuSmiInfo(read('npu-smi-t-product-310p3-duo-1.txt')).type).toBe('product');
  });

  it('reads the 310 mapping with the MCU row', () => {
    const rows = parseNpuSmiMapping(read('npu-smi-info-m-310-1.txt'));
    expect(rows).toHaveLength(5);
    expect(rows[4]).toEqual({ npu: 6, chip: 4, logicId: null, name: 'Mcu' });
  });

  it('reads the TAB-indented 910A mapping', () => {
    const rows = parseNpuSmiMapping(read('npu-smi-info-m-910a-3.txt'));
    expect(rows.map((r) => r.logicId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(rows[0]?.name).toBe('Ascend 910A');
  });
});

describe('npu-smi readings outside what hardware can report', () => {
  /** The parse's out-of-range readings, as `onOutOfRange` is told them. */
  const told = (): { readings: unknown[]; onOutOfRange: (reading: unknown) => void } => {
    const readings: unknown[] = [];
    return { readings, onOutOfRange: (reading) => readings.push(reading) };
  };

  it('910B table: 65535 °C, 6553.5 % AI core and 4294967295 MB HBM (unread sensors) read as null', () => {
    const glitching = [
      '| 0     910B3               | OK            | 96.1        65535             0    / 0             |',
      '| 0                         | 0000:C1:00.0  | 6553.5      0    / 0          4294967295/ 65536    |',
    ];
    const { readings, onOutOfRange } = told();
    const p = parseNpuSmiTable([...HEAD_910, ...glitching, BORDER, ...ROW_1, BORDER].join('\n'), {
      onOutOfRange,
    });
    if (p.family !== '910B') throw new Error('family');
    expect(p.npus[0]).toMatchObject({
      temp_c: null,
      power_w: 96.1,
      aicore_pct: null,
      hbm: { used_mb: null, total_mb: 65536 },
    });
    // The other NPU reads as it is.
    expect(p.npus[1]).toMatchObject({ temp_c: 40, power_w: 98, aicore_pct: 3 });
    expect(readings).toEqual([
      { field: 'temp_c', value: 65535 },
      { field: 'aicore_pct', value: 6553.5 },
      { field: 'hbm.used_mb', value: 4294967295 },
    ]);
  });

  it('310P table: a chip printing -1 W and 255 °C, the values just inside kept', () => {
    const table = NPU_SMI_310P_TABLE.replace('| NA           45  ', '| -1           255 ').replace(
      '| NA           47  ',
      '| 0            200 ',
    );
    const { readings, onOutOfRange } = told();
    const p = parseNpuSmiTable(table, { onOutOfRange });
    if (p.family !== '310P') throw new Error('family');
    expect(p.cards[0]?.chips.map((c) => [c.temperature, c.power_w])).toEqual([
      [null, null],
      [200, 0],
    ]);
    expect(readings).toEqual([
      { field: 'temperature', value: 255 },
      { field: 'power_w', value: -1 },
    ]);
  });

  it('reads out-of-range values as null without a listener too (parse of a saved output)', () => {
    const p = parseNpuSmiTable(NPU_SMI_910B_TABLE.replace('| 124.9       41  ', '| 124.9       9999'));
    if (p.family !== '910B') throw new Error('family');
    expect(p.npus[0]?.temp_c).toBeNull();
  });

  it('-t ecc: -1 and 2^53 counts are null, told by their snapshot field', () => {
    const ecc = NPU_SMI_T_ECC.replace(
      'DDR Single Bit Error Count     : 2',
      'DDR Single Bit Error Count     : -1',
    ).replace('HBM Double Bit Error Count     : 1', 'HBM Double Bit Error Count     : 9007199254740992');
    const { readings, onOutOfRange } = told();
    expect(parseNpuSmiInfo(ecc, { onOutOfRange }).ecc).toEqual({
      ddrSingleBit: null,
      ddrDoubleBit: null,
      hbmSingleBit: 7,
      hbmDoubleBit: null,
    });
    expect(readings).toEqual([
      { field: 'ddr.ecc_sbe', value: -1 },
      { field: 'hbm.ecc.double_bit', value: 9007199254740992 },
    ]);
  });

  it('-t power 65535 W is null; -t common gives way to the other power key and drops a 65535 °C chip', () => {
    const { readings, onOutOfRange } = told();
    const power = NPU_SMI_T_POWER.replace(': 42.9', ': 65535');
    expect(parseNpuSmiInfo(power, { onOutOfRange }).mcuPowerW).toBeNull();
    const common = [
      '\tNPU ID                         : 2944',
      '\tChip Count                     : 2',
      '',
      '\tChip ID                        : 0',
      '\tAicore Freq(MHZ)               : 1080',
      '\tTemperature(C)                 : 65535',
      '',
      '\tChip ID                        : 1',
      '\tTemperature(C)                 : 47',
      '',
      '\tChip Name                      : mcu',
      '\tNPU Real-time Power(W)         : 65535',
      '\tPower Dissipation(W)           : 42.8',
      '',
    ].join('\n');
    const record = parseNpuSmiInfo(common, { onOutOfRange });
    expect(record.chipTemperatures).toEqual({ 0: null, 1: 47 });
    expect(record.mcuPowerW).toBe(42.8);
    expect(readings).toEqual([
      { field: 'mcu_power_w', value: 65535 },
      { field: 'temperature', value: 65535 },
      { field: 'mcu_power_w', value: 65535 },
    ]);
  });
});

import { describe, expect, it } from '@jest/globals';
import { ParseError } from '../../errors.js';
import { NotSnapshotError } from '../common.js';
import { DEFAULT_QUERY_FIELDS, parseNvidiaCsv } from './csv.js';

function caught(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('parseNvidiaCsv', () => {
  it('maps columns by header name, strips units, reads N/A spellings as null', () => {
    const text = [
      'name, index, temperature.gpu, power.draw [W], pci.bus_id, ecc.errors.uncorrected.volatile.total, pcie.link.width.current',
      'NVIDIA H100, 3, 41, 120.50 W, 00000000:1B:00.0, [N/A], [Not Supported]',
      'NVIDIA H100, 4, ERR!, N/A, 00000000:1C:00.0, 2, 16',
    ].join('\n');
    const { payload } = parseNvidiaCsv(text);
    expect(payload.gpus[0]).toMatchObject({
      index: 3,
      name: 'NVIDIA H100',
      temperature_gpu: 41,
      power_draw_w: 120.5,
      bus_id: '0000:1B:00.0',
      ecc_uncorrected_volatile: null,
      pcie_link_width: null,
    });
    expect(payload.gpus[1]).toMatchObject({
      index: 4,
      temperature_gpu: null,
      power_draw_w: null,
      ecc_uncorrected_volatile: 2,
      pcie_link_width: 16,
    });
  });

  it('reads a noheader,nounits file with DEFAULT_QUERY_FIELDS (what the agent runs), count last', () => {
    expect(DEFAULT_QUERY_FIELDS).toHaveLength(11);
    expect(DEFAULT_QUERY_FIELDS.at(-1)).toBe('count');
    const line = '0, GPU-abc, 00000000:19:00.0, NVIDIA H100 80GB HBM3, 34, 71.20, 0, 1, 5, 16, 1';
    const { payload, driverCount } = parseNvidiaCsv(`${line}\n`);
    expect(driverCount).toBe(1);
    expect(payload.gpus[0]).toEqual(
      expect.objectContaining({
        index: 0,
        uuid: 'GPU-abc',
        bus_id: '0000:19:00.0',
        temperature_gpu: 34,
        power_draw_w: 71.2,
        ecc_corrected_volatile: 0,
        ecc_uncorrected_volatile: 1,
        pcie_link_gen: 5,
        pcie_link_width: 16,
      }),
    );
  });

  it("still reads an older agent's noheader file, without count, when no field list is given", () => {
    const line = '0, GPU-abc, 00000000:19:00.0, NVIDIA H100 80GB HBM3, 34, 71.20, 0, 1, 5, 16';
    const { payload, driverCount } = parseNvidiaCsv(`${line}\n`);
    expect(driverCount).toBeNull();
    expect(payload.gpus[0]).toMatchObject({ uuid: 'GPU-abc', temperature_gpu: 34, pcie_link_width: 16 });
    // An explicit list is the list: the same row against the current fields is refused.
    expect(() => parseNvidiaCsv(`${line}\n`, DEFAULT_QUERY_FIELDS)).toThrow(/^line 1: row has 10 columns/);
  });

  it('takes an explicit field list for other noheader files', () => {
    const { payload } = parseNvidiaCsv('0, NVIDIA L20, 46068 MiB, 3 MiB, 0 %, 49, 00000000:16:00.0', [
      'index',
      'name',
      'memory.total',
      'memory.used',
      'utilization.gpu',
      'temperature.gpu',
      'pci.bus_id',
    ]);
    expect(payload.gpus[0]).toMatchObject({
      name: 'NVIDIA L20',
      temperature_gpu: 49,
      bus_id: '0000:16:00.0',
    });
  });

  it('a row that does not match the field list is a ParseError naming its line', () => {
    const line = '0, GPU-abc, 00000000:19:00.0, NVIDIA H100, 34, 71.20, 0, 1, 5, 16';
    const error = caught(() => parseNvidiaCsv(`${line}\n${line}\n0, GPU-x, 34\n`));
    expect(error).toBeInstanceOf(ParseError);
    expect((error as ParseError).line).toBe(3);
  });

  it('a non-numeric metric is a ParseError naming its line and field', () => {
    expect(() => parseNvidiaCsv('index, temperature.gpu\n0, hot')).toThrow(
      /^line 2: temperature\.gpu: expected a number or NA, found 'hot'$/,
    );
  });

  it('--query-compute-apps is recognised and refused', () => {
    const error = caught(() =>
      parseNvidiaCsv('pid, process_name, used_gpu_memory [MiB]\n12, python, 100 MiB\n'),
    );
    expect(error).toBeInstanceOf(NotSnapshotError);
    expect((error as NotSnapshotError).format).toMatch(/query-compute-apps/);
  });

  it('a header without rows is an error, not an empty snapshot', () => {
    expect(() => parseNvidiaCsv('index, name, temperature.gpu\n')).toThrow(/no GPU rows/);
  });

  it('refuses a CSV without any health field (its GPUs would read as off the bus)', () => {
    const text =
      '0, NVIDIA A100-SXM4-80GB, 81920 MiB, 60000 MiB, 100 %\n1, NVIDIA A100-SXM4-80GB, 81920 MiB, 3 MiB, 0 %\n';
    const fields = ['index', 'name', 'memory.total', 'memory.used', 'utilization.gpu'];
    expect(() => parseNvidiaCsv(text, fields)).toThrow(/^line 1: the CSV has no health field/);
  });
});

describe('units say which field a value belongs to', () => {
  const fields = ['index', 'name', 'temperature.gpu', 'memory.total', 'memory.used'];

  it('a noheader row whose memory lands in temperature.gpu is refused, naming line and field', () => {
    expect(() => parseNvidiaCsv('0, NVIDIA A100, 81920 MiB, 3 MiB, 41\n', fields)).toThrow(
      /^line 1: temperature\.gpu: '81920 MiB' is in MiB; expected C or no unit$/,
    );
  });

  it('a unit that does not belong in a column the snapshot does not read is refused too', () => {
    expect(() => parseNvidiaCsv('0, NVIDIA A100, 41, 81920 MiB, 87 %\n', fields)).toThrow(
      /^line 1: memory\.used: '87 %' is in %; expected MiB or no unit$/,
    );
  });

  it('the headed CSV checks its header units and its values', () => {
    expect(() => parseNvidiaCsv('index, temperature.gpu [MiB]\n0, 41\n')).toThrow(
      /^line 1: temperature\.gpu: the header gives the unit 'MiB'; expected C$/,
    );
    expect(() => parseNvidiaCsv('index, power.draw [W]\n0, 41 MHz\n')).toThrow(
      /^line 2: power\.draw: '41 MHz' is in MHz; expected W or no unit$/,
    );
  });

  it('a number followed by 80,000 blanks and a letter is not a number with a unit', () => {
    expect(() => parseNvidiaCsv(`index, temperature.gpu\n0, 1${' '.repeat(80_000)}x`)).toThrow(
      /^line 2: temperature\.gpu: '1 +…' is in x; expected C or no unit$/,
    );
  });
});

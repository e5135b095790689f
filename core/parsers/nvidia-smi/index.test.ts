/** What every layout shares (counts, unreadable GPUs, bounds), checked through the folder's door. */
import { describe, expect, it } from '@jest/globals';
import type { ToolError } from '../common.js';
import {
  DEFAULT_QUERY_FIELDS,
  parseNvidiaCsv,
  parseNvidiaQuery,
  parseNvidiaSmi,
  parseNvidiaTable,
  parseNvidiaXml,
} from './index.js';
import {
  NVIDIA_CSV,
  NVIDIA_CSV_NOHEADER,
  NVIDIA_Q,
  NVIDIA_Q_ONE_GPU,
  NVIDIA_TABLE,
  NVIDIA_XML,
} from '../testing.js';
import { describeWithRealFixtures, readRealFixture } from '../../../test/fixtures.js';

function caught(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

/** The pre-525 table of one V100 with `ERR!` temperature and power and ECC count 3. */
const OLD_TABLE = [
  '+-----------------------------------------------------------------------------+',
  '| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |',
  '|-------------------------------+----------------------+----------------------+',
  '| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |',
  '| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |',
  '|===============================+======================+======================|',
  '|   0  Tesla V100-SXM2...  On   | 00000000:00:1E.0 Off |                    3 |',
  '| N/A   ERR!   P0    ERR! / 300W |      0MiB / 16160MiB |      0%      Default |',
  '+-------------------------------+----------------------+----------------------+',
];

describe('a GPU missing from the output is refused, never a smaller healthy node', () => {
  it('-q cut after its first GPU block names the count', () => {
    const cut = NVIDIA_Q.slice(0, NVIDIA_Q.indexOf('GPU 00000000:3B:00.0'));
    expect(() => parseNvidiaQuery(cut)).toThrow(
      /^line 8: Attached GPUs says 2 but 1 GPU block found: the output is cut short or was taken with -i/,
    );
  });

  it('-q without its Attached GPUs line is refused: a cut could not be noticed', () => {
    const headless = NVIDIA_Q.replace(/^Attached GPUs.*$/m, '');
    expect(() => parseNvidiaQuery(headless)).toThrow(
      /^line \d+: no 'Attached GPUs' count before the GPU blocks/,
    );
  });

  it('-q -x with fewer <gpu> than <attached_gpus> names the count', () => {
    const start = NVIDIA_XML.indexOf('  <gpu id="00000000:02:00.0">');
    const end = NVIDIA_XML.indexOf('</nvidia_smi_log>');
    const oneGpu = NVIDIA_XML.slice(0, start) + NVIDIA_XML.slice(end);
    expect(() => parseNvidiaXml(oneGpu)).toThrow(/^line 6: Attached GPUs says 2 but 1 GPU element found/);
  });

  it('a CSV with the count field and fewer rows is refused', () => {
    const cut = NVIDIA_CSV.split('\n').slice(0, 2).join('\n');
    expect(() => parseNvidiaCsv(cut)).toThrow(
      /^line 2: count says 2 GPUs but 1 GPU row found: the output is cut short$/,
    );
  });
});

describe("the driver's GPU count (driverCount)", () => {
  it('comes from count, Attached GPUs, or nowhere (the table)', () => {
    expect(parseNvidiaCsv(NVIDIA_CSV).driverCount).toBe(2);
    expect(parseNvidiaCsv('index, temperature.gpu\n0, 40\n').driverCount).toBeNull();
    expect(parseNvidiaQuery(NVIDIA_Q).driverCount).toBe(2);
    expect(parseNvidiaXml(NVIDIA_XML).driverCount).toBe(2);
    expect(parseNvidiaTable(NVIDIA_TABLE).driverCount).toBeNull();
  });

  it('with allowMissingGpus, says how many GPUs the rows lack instead of refusing', () => {
    const csv = parseNvidiaSmi(NVIDIA_CSV.split('\n').slice(0, 2).join('\n'), undefined, {
      allowMissingGpus: true,
    });
    expect([csv.payload.gpus.length, csv.driverCount]).toEqual([1, 2]);
    const cutQ = NVIDIA_Q.slice(0, NVIDIA_Q.indexOf('GPU 00000000:3B:00.0'));
    const q = parseNvidiaSmi(cutQ, undefined, { allowMissingGpus: true });
    expect([q.payload.gpus.length, q.driverCount]).toEqual([1, 2]);
    const start = NVIDIA_XML.indexOf('  <gpu id="00000000:02:00.0">');
    const oneGpu = NVIDIA_XML.slice(0, start) + NVIDIA_XML.slice(NVIDIA_XML.indexOf('</nvidia_smi_log>'));
    const xml = parseNvidiaSmi(oneGpu, undefined, { allowMissingGpus: true });
    expect([xml.payload.gpus.length, xml.driverCount]).toEqual([1, 2]);
  });

  it('never accepts more rows than the count', () => {
    const rows = NVIDIA_CSV.replace(/, 2$/gm, ', 1');
    for (const allowMissingGpus of [false, true]) {
      expect(() => parseNvidiaCsv(rows, undefined, { allowMissingGpus })).toThrow(
        /^line 2: count says 1 GPUs but 2 GPU rows found: the rows are not one per GPU$/,
      );
    }
    expect(() =>
      parseNvidiaQuery(NVIDIA_Q.replace(/^(Attached GPUs\s+): 2$/m, '$1: 1'), { allowMissingGpus: true }),
    ).toThrow(/Attached GPUs says 1 but 2 GPU blocks found/);
  });
});

describe('a GPU the tool lists but cannot read (readable: false)', () => {
  const header =
    'index, uuid, pci.bus_id, name, temperature.gpu, power.draw [W], ecc.errors.corrected.volatile.total, ecc.errors.uncorrected.volatile.total, pcie.link.gen.current, pcie.link.width.current';
  const row = (index: number, cell: string): string =>
    `${index}, GPU-${index}, 00000000:1${index}:00.0, NVIDIA A100, ${Array(6).fill(cell).join(', ')}`;

  it.each(['[N/A]', 'N/A', '[Not Supported]'])('CSV: a row of %s is listed but unreadable', (cell) => {
    const { payload } = parseNvidiaCsv([header, row(0, cell), row(1, '40')].join('\n'));
    expect(payload.gpus.map((g) => g.readable)).toEqual([false, undefined]);
    expect(payload.gpus[0]).toMatchObject({ uuid: 'GPU-0', bus_id: '0000:10:00.0', temperature_gpu: null });
  });

  it.each(['ERR!', '[Unknown Error]', 'Unknown Error'])(
    'CSV: a row of %s is a GPU in trouble, not flagged (it reads as off the bus)',
    (cell) => {
      const gpu = parseNvidiaCsv([header, row(0, cell)].join('\n')).payload.gpus[0];
      expect(gpu).not.toHaveProperty('readable');
      expect(gpu?.temperature_gpu).toBeNull();
    },
  );

  it('CSV: one error among the N/A cells, or a row naming no GPU, is not flagged', () => {
    const mixed = row(0, '[N/A]').replace(/\[N\/A\]$/, 'ERR!');
    const anonymous = `0, [N/A], [N/A], NVIDIA A100, ${Array(6).fill('[N/A]').join(', ')}`;
    for (const line of [mixed, anonymous])
      expect(parseNvidiaCsv([header, line].join('\n')).payload.gpus[0]).not.toHaveProperty('readable');
  });

  it('-q and -q -x: every metric N/A is listed but unreadable; ERR! is not', () => {
    const na = (text: string): string =>
      text
        .replace(/(GPU Current Temp\s+:) 44 C/, '$1 N/A')
        .replace(/(Power Draw\s+:) [\d.]+ W/, '$1 N/A')
        .replace(/(S|D)RAM (Correctable|Uncorrectable)(\s+:) \d+/g, '$1RAM $2$3 N/A')
        .replace(/(Current\s+:) (4|8x)$/gm, '$1 N/A');
    const unreadable = parseNvidiaQuery(na(NVIDIA_Q_ONE_GPU)).payload.gpus[0];
    expect(unreadable).toMatchObject({
      readable: false,
      uuid: 'GPU-1',
      temperature_gpu: null,
      pcie_link_width: null,
    });
    const inTrouble = parseNvidiaQuery(na(NVIDIA_Q_ONE_GPU).replace(/(GPU Current Temp\s+:) N\/A/, '$1 ERR!'))
      .payload.gpus[0];
    expect(inTrouble).not.toHaveProperty('readable');
    const xml = NVIDIA_XML.replace(/<gpu_temp>[^<]*<\/gpu_temp>/g, '<gpu_temp>N/A</gpu_temp>')
      .replace(/<power_draw>[^<]*<\/power_draw>/g, '<power_draw>N/A</power_draw>')
      .replace(/<(current_link_gen|current_link_width)>[^<]*</g, '<$1>N/A<')
      .replace(/<total>[^<]*<\/total>/g, '<total>N/A</total>')
      .replace(/<(sram|dram)_(correctable|uncorrectable)>[^<]*</g, '<$1_$2>N/A<');
    expect(parseNvidiaXml(xml).payload.gpus.map((g) => g.readable)).toEqual([false, false]);
  });

  it('table: N/A temperature, power and ECC is unreadable; ERR! or ECC Off alone is not', () => {
    const table = (temp: string, power: string, ecc: string): string =>
      OLD_TABLE.join('\n')
        .replace('ERR!   P0    ERR!', `${temp}   P0    ${power}`)
        .replace(/\|\s+3 \|$/m, `| ${ecc} |`);
    expect(parseNvidiaTable(table('N/A', 'N/A', 'N/A')).payload.gpus[0]?.readable).toBe(false);
    // What a vGPU guest prints: power N/A on both sides of the slash.
    const guest = table('N/A', 'N/A', 'N/A').replace('N/A / 300W', 'N/A /  N/A');
    expect(parseNvidiaTable(guest).payload.gpus[0]).toMatchObject({ readable: false, power_draw_w: null });
    expect(parseNvidiaTable(table('N/A', 'N/A', 'Off')).payload.gpus[0]?.readable).toBe(false);
    expect(parseNvidiaTable(table('ERR!', 'N/A', 'N/A')).payload.gpus[0]).not.toHaveProperty('readable');
    expect(parseNvidiaTable(table('N/A', 'N/A', '0')).payload.gpus[0]).not.toHaveProperty('readable');
  });

  it('the readings of every synthetic sample are untouched (none is flagged)', () => {
    for (const text of [NVIDIA_CSV, NVIDIA_CSV_NOHEADER, NVIDIA_Q, NVIDIA_XML, NVIDIA_TABLE])
      for (const gpu of parseNvidiaSmi(text).payload.gpus) expect(gpu).not.toHaveProperty('readable');
  });
});

describeWithRealFixtures('real nvidia-smi outputs: listed, lost, counted', () => {
  it('keeps every real GPU readable, and a lost GPU a tool error naming its bus', () => {
    for (const name of [
      'nvidia-smi-q-h100-8gpu-1.txt',
      'nvidia-smi-query-csv-1.txt',
      'nvidia-smi-a100-table-1.txt',
    ]) {
      for (const gpu of parseNvidiaSmi(readRealFixture(name)).payload.gpus)
        expect(gpu).not.toHaveProperty('readable');
    }
    const error = caught(() => parseNvidiaSmi(readRealFixture('nvidia-smi-gpu-lost-1.txt')));
    expect((error as ToolError).lostBusIds).toEqual(['0000:03:00.0']);
  });

  it('reads a -q -x taken for one GPU of four with allowMissingGpus, saying the driver has four', () => {
    const text = readRealFixture('nvidia-smi-q-x-a100-mig-1.xml');
    expect(() => parseNvidiaXml(text)).toThrow(/Attached GPUs says 4 but 1 GPU element found/);
    const parsed = parseNvidiaXml(text, { allowMissingGpus: true });
    expect([parsed.payload.gpus.length, parsed.driverCount]).toEqual([1, 4]);
  });
});

describe('nvidia-smi readings outside what hardware can report', () => {
  /** The parse's out-of-range readings, as `onOutOfRange` is told them. */
  const told = (): { readings: unknown[]; onOutOfRange: (reading: unknown) => void } => {
    const readings: unknown[] = [];
    return { readings, onOutOfRange: (reading) => readings.push(reading) };
  };
  /** A row of the agent's query (DEFAULT_QUERY_FIELDS) of a node of `count` GPUs. */
  const agentRow = (index: number, metrics: string, count = 1): string =>
    `${index}, GPU-${index}, 00000000:1${index}:00.0, NVIDIA H100 80GB HBM3, ${metrics}, ${count}`;

  it('the agent query: a huge temperature and a -1 ECC count are null, the GPU still read', () => {
    const text = [
      agentRow(0, '4294967295, 71.20, -1, 0, 5, 16', 2),
      agentRow(1, '35, 69.85, 2, 1, 5, 16', 2),
    ].join('\n');
    const { readings, onOutOfRange } = told();
    const { payload } = parseNvidiaCsv(text, DEFAULT_QUERY_FIELDS, { onOutOfRange });
    expect(payload.gpus[0]).toMatchObject({
      temperature_gpu: null,
      power_draw_w: 71.2,
      ecc_corrected_volatile: null,
      ecc_uncorrected_volatile: 0,
    });
    expect(payload.gpus[0]).not.toHaveProperty('readable');
    expect(payload.gpus[1]).toMatchObject({ temperature_gpu: 35, ecc_corrected_volatile: 2 });
    expect(readings).toEqual([
      { field: 'temperature_gpu', value: 4294967295 },
      { field: 'ecc_corrected_volatile', value: -1 },
    ]);
  });

  it('keeps the values just inside the bounds: 200 °C, 10 kW, PCIe gen 16 x32', () => {
    const gpu = parseNvidiaCsv(agentRow(0, '200, 10000, 0, 0, 16, 32'), DEFAULT_QUERY_FIELDS).payload.gpus[0];
    expect(gpu).toMatchObject({
      temperature_gpu: 200,
      power_draw_w: 10000,
      pcie_link_gen: 16,
      pcie_link_width: 32,
    });
  });

  it('a GPU whose every number is out of range, the rest N/A, is listed but unreadable, not off the bus', () => {
    const { readings, onOutOfRange } = told();
    const { payload } = parseNvidiaCsv(
      agentRow(0, '65535, 65535, [N/A], [N/A], 255, 255'),
      DEFAULT_QUERY_FIELDS,
      { onOutOfRange },
    );
    expect(payload.gpus[0]).toMatchObject({ readable: false, temperature_gpu: null, power_draw_w: null });
    expect(readings).toHaveLength(4);
    // An error spelling among them is a GPU in trouble: the contract's off-the-bus rule applies.
    const inTrouble = parseNvidiaCsv(
      agentRow(0, '65535, ERR!, [N/A], [N/A], N/A, N/A'),
      DEFAULT_QUERY_FIELDS,
    );
    expect(inTrouble.payload.gpus[0]).not.toHaveProperty('readable');
  });

  it('-q: a 65535 W draw gives way to the average draw; 65535 °C is no temperature', () => {
    const text = NVIDIA_Q.replace(/(GPU Current Temp\s+:) 44 C/, '$1 65535 C').replace(
      /(Power Draw\s+:) 61.50 W/,
      '$1 65535.00 W\n        Average Power Draw                : 60.00 W',
    );
    const { readings, onOutOfRange } = told();
    const gpu = parseNvidiaQuery(text, { onOutOfRange }).payload.gpus[0];
    expect(gpu).toMatchObject({ temperature_gpu: null, power_draw_w: 60, ecc_corrected_volatile: 5 });
    expect(readings).toEqual([
      { field: 'power_draw_w', value: 65535 },
      { field: 'temperature_gpu', value: 65535 },
    ]);
  });

  it('-q -x and the table read an out-of-range temperature as null', () => {
    const xml = NVIDIA_XML.replace('<gpu_temp>27 C</gpu_temp>', '<gpu_temp>-128 C</gpu_temp>');
    expect(parseNvidiaXml(xml).payload.gpus.map((g) => g.temperature_gpu)).toEqual([null, 28]);
    const { readings, onOutOfRange } = told();
    const table = parseNvidiaTable(NVIDIA_TABLE.replace('| N/A   49C ', '| N/A  999C '), { onOutOfRange });
    expect(table.payload.gpus.map((g) => g.temperature_gpu)).toEqual([null, 51]);
    expect(readings).toEqual([{ field: 'temperature_gpu', value: 999 }]);
    // parseNvidiaSmi passes the listener on to the table.
    const viaDetect = told();
    parseNvidiaSmi(NVIDIA_TABLE.replace('| N/A   49C ', '| N/A  999C '), undefined, {
      onOutOfRange: viaDetect.onOutOfRange,
    });
    expect(viaDetect.readings).toHaveLength(1);
  });
});

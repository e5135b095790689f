import { describe, expect, it } from '@jest/globals';
import { ParseError } from '../errors.js';
import { NotSnapshotError, ToolError } from './common.js';
import {
  DEFAULT_QUERY_FIELDS,
  detectNvidiaSmiKind,
  parseNvidiaCsv,
  parseNvidiaQuery,
  parseNvidiaSmi,
  parseNvidiaTable,
  parseNvidiaXml,
} from './nvidia-smi.js';
import { NVIDIA_CSV, NVIDIA_CSV_NOHEADER, NVIDIA_Q, NVIDIA_TABLE, NVIDIA_XML } from './testing.js';
import { describeWithRealFixtures, readRealFixture } from '../../test/fixtures.js';

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

  it('names the line of a value in -q text that is not a number (a decimal comma, say)', () => {
    const q = [
      '==============NVSMI LOG==============',
      'Attached GPUs                             : 1',
      'GPU 00000000:19:00.0',
      '    Product Name                          : NVIDIA H100',
      '    Temperature',
      '        GPU Current Temp                  : 29,5 C',
      '    Processes                             : None',
    ].join('\n');
    expect(() => parseNvidiaQuery(q)).toThrow(
      /^line 6: GPU Current Temp: expected a number or NA, found '29,5 C'/,
    );
  });

  it('reads a Windows table (TCC/WDDM driver model) with CRLF line ends', () => {
    const table = [
      '+-----------------------------------------------------------------------------+',
      '| NVIDIA-SMI 471.11       Driver Version: 471.11       CUDA Version: 11.4     |',
      '|-------------------------------+----------------------+----------------------+',
      '| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |',
      '| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |',
      '|===============================+======================+======================|',
      '|   0  NVIDIA GeForce ... WDDM  | 00000000:01:00.0  On |                  N/A |',
      '| 30%   41C    P8    14W / 250W |    513MiB /  8192MiB |      4%      Default |',
      '+-------------------------------+----------------------+----------------------+',
    ].join('\r\n');
    const { payload } = parseNvidiaTable(table);
    expect(payload.gpus).toEqual([
      expect.objectContaining({ index: 0, bus_id: '0000:01:00.0', temperature_gpu: 41, power_draw_w: 14 }),
    ]);
  });
});

describe('tool errors', () => {
  it.each([
    [
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
      [],
    ],
    [
      'Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU\nUnable to determine the device handle for GPU 0000:5E:00.0: GPU is lost.  Reboot the system to recover this GPU',
      ['0000:3B:00.0', '0000:5E:00.0'],
    ],
    ['Unknown Error', []],
    ['No devices were found', []],
  ])('%s', (text, lost) => {
    const error = caught(() => parseNvidiaSmi(text));
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).line).toBe(1);
    expect((error as ToolError).lostBusIds).toEqual(lost);
  });
});

const Q = `
==============NVSMI LOG==============

Timestamp                                 : Mon Jan  6 10:00:00 2025
Driver Version                            : 550.54.15

Attached GPUs                             : 1
GPU 00000000:19:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    GPU UUID                              : GPU-1
    PCI
        Bus Id                            : 00000000:19:00.0
        GPU Link Info
            PCIe Generation
                Max                       : 4
                Current                   : 4
            Link Width
                Max                       : 16x
                Current                   : 8x
    ECC Errors
        Volatile
            SRAM Correctable              : 2
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 3
            DRAM Uncorrectable            : 1
    Temperature
        GPU Current Temp                  : 44 C
    GPU Power Readings
        Power Draw                        : 61.50 W
    Processes                             : None
`;

describe('parseNvidiaQuery (-q)', () => {
  it('reads the fields and sums SRAM+DRAM volatile counters', () => {
    const { payload, timestamp } = parseNvidiaQuery(Q);
    expect(timestamp).toBe('2025-01-06T10:00:00.000Z');
    expect(payload.driver_version).toBe('550.54.15');
    expect(payload.gpus).toEqual([
      expect.objectContaining({
        index: 0,
        uuid: 'GPU-1',
        bus_id: '0000:19:00.0',
        name: 'NVIDIA A100-SXM4-80GB',
        temperature_gpu: 44,
        power_draw_w: 61.5,
        ecc_corrected_volatile: 5,
        ecc_uncorrected_volatile: 1,
        pcie_link_gen: 4,
        pcie_link_width: 8,
      }),
    ]);
  });

  it('an output cut before the Processes entry is a truncation error', () => {
    const cut = Q.split('\n').slice(0, 22).join('\n');
    expect(() => parseNvidiaQuery(cut)).toThrow(
      /^line 22: the output ends inside the block of GPU 00000000:19:00\.0 \(line 8\)/,
    );
  });
});

const XML = `<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
  <timestamp>Mon Jan  6 10:00:00 2025</timestamp>
  <driver_version>535.54.03</driver_version>
  <attached_gpus>1</attached_gpus>
  <gpu id="00000000:01:00.0">
    <product_name>NVIDIA A&amp;B</product_name>
    <uuid>GPU-x</uuid>
    <pci><pci_gpu_link_info><pcie_gen><current_link_gen>4</current_link_gen></pcie_gen>
      <link_widths><current_link_width>16x</current_link_width></link_widths></pci_gpu_link_info></pci>
    <ecc_errors><volatile><single_bit><total>4</total></single_bit><double_bit><total>N/A</total></double_bit></volatile></ecc_errors>
    <temperature><gpu_temp>27 C</gpu_temp></temperature>
    <gpu_power_readings><power_draw>67.03 W</power_draw></gpu_power_readings>
    <empty/>
  </gpu>
</nvidia_smi_log>
`;

describe('parseNvidiaXml (-q -x)', () => {
  it('reads the fields, entities, single/double bit totals', () => {
    const { payload } = parseNvidiaXml(XML);
    expect(payload.gpus[0]).toMatchObject({
      bus_id: '0000:01:00.0',
      name: 'NVIDIA A&B',
      uuid: 'GPU-x',
      pcie_link_gen: 4,
      pcie_link_width: 16,
      ecc_corrected_volatile: 4,
      ecc_uncorrected_volatile: null,
      temperature_gpu: 27,
      power_draw_w: 67.03,
    });
  });

  it('a truncated document is an error naming where the open element began', () => {
    const cut = XML.split('\n').slice(0, 10).join('\n');
    expect(() => parseNvidiaXml(cut)).toThrow(
      /XML ends inside <pci_gpu_link_info> opened at line 10: the output is truncated/,
    );
  });

  it('a mismatched closing tag names its line', () => {
    expect(() => parseNvidiaXml('<nvidia_smi_log>\n<gpu id="0:1:0.0">\n</pci>\n</nvidia_smi_log>')).toThrow(
      /^line 3: XML: <\/pci> closes <gpu>$/,
    );
  });
});

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

describe('parseNvidiaTable', () => {
  const OLD = [
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

  it('reads the pre-525 two-line layout with ERR! cells', () => {
    const { payload, timestamp } = parseNvidiaTable(OLD.join('\n'));
    expect(timestamp).toBeNull();
    expect(payload.driver_version).toBe('470.82.01');
    expect(payload.gpus[0]).toMatchObject({
      index: 0,
      name: 'Tesla V100-SXM2...',
      bus_id: '0000:00:1E.0',
      temperature_gpu: null,
      power_draw_w: null,
      ecc_uncorrected_volatile: 3,
    });
  });

  it('a GPU row whose metric row is missing is an error naming the line', () => {
    expect(() => parseNvidiaTable(OLD.slice(0, 7).join('\n'))).toThrow(
      /^line 8: GPU 0: the row 'Fan Temp Perf Pwr:Usage\/Cap' is missing or cut$/,
    );
  });
});

describe('detectNvidiaSmiKind', () => {
  it.each([
    ['<?xml version="1.0" ?>\n<nvidia_smi_log/>', 'xml'],
    [Q, 'query'],
    ['index, name\n0, x', 'csv'],
    ['0, GPU-1', 'csv'],
    ['| NVIDIA-SMI 550 |', 'table'],
    ['hello', 'unknown'],
  ])('%#', (text, kind) => {
    expect(detectNvidiaSmiKind(text)).toBe(kind);
  });
});

describe('the synthetic samples of every sub-format', () => {
  it.each([
    ['csv', NVIDIA_CSV, [34, 36]],
    ['csv noheader', NVIDIA_CSV_NOHEADER, [34, 35]],
    ['-q', NVIDIA_Q, [44, 45]],
    ['-q -x', NVIDIA_XML, [27, 28]],
    ['table', NVIDIA_TABLE, [49, 51]],
  ] as const)('%s gives both GPUs with their temperatures', (_kind, text, temps) => {
    expect(parseNvidiaSmi(text).payload.gpus.map((g) => g.temperature_gpu)).toEqual(temps);
  });

  it('the table: bus ids, power (ERR! is null) and the ECC column', () => {
    const { payload, timestamp } = parseNvidiaTable(NVIDIA_TABLE);
    expect(timestamp).toBe('2025-01-06T10:00:00.000Z');
    expect(payload.gpus.map((g) => [g.index, g.bus_id, g.power_draw_w, g.ecc_uncorrected_volatile])).toEqual([
      [0, '0000:27:00.0', 114, 0],
      [1, '0000:2A:00.0', null, 3],
    ]);
  });
});

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
    const unreadable = parseNvidiaQuery(na(Q)).payload.gpus[0];
    expect(unreadable).toMatchObject({
      readable: false,
      uuid: 'GPU-1',
      temperature_gpu: null,
      pcie_link_width: null,
    });
    const inTrouble = parseNvidiaQuery(na(Q).replace(/(GPU Current Temp\s+:) N\/A/, '$1 ERR!')).payload
      .gpus[0];
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

  it('-q and the table check their units', () => {
    expect(() => parseNvidiaQuery(NVIDIA_Q.replace('44 C', '44 W'))).toThrow(
      /^line 28: GPU Current Temp: '44 W' is in W; expected C or no unit$/,
    );
    expect(() => parseNvidiaTable(NVIDIA_TABLE.replace('114W', '114C'))).toThrow(
      /^line 9: power draw: '114C' is in C; expected W or no unit$/,
    );
  });
});

describe('hostile lines end quickly, quoting an excerpt', () => {
  it.each([
    ['a table row of blanks', `| NPU  Name | Health |${' '.repeat(80_000)}x`],
    [
      'a GPU row of blanks',
      `|   0  A${' '.repeat(80_000)}On | 00000000:01:00.0 Off |  0${' '.repeat(80_000)}x`,
    ],
    [
      'a -q key of blanks',
      `==============NVSMI LOG==============\nGPU 00000000:19:00.0\n    Product Name${' '.repeat(80_000)}x\n`,
    ],
  ])('%s', (_name, text) => {
    const error = caught(() => parseNvidiaSmi(text));
    expect(error).toBeInstanceOf(ParseError);
    expect(error.message.length).toBeLessThan(400);
  });

  it('a lost-GPU message keeps its bus id without a pattern', () => {
    const error = caught(() =>
      parseNvidiaSmi('Unable to determine the device handle for GPU0000:07:00.0: Unknown Error'),
    );
    expect((error as ToolError).lostBusIds).toEqual(['0000:07:00.0']);
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

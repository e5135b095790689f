import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ParseError } from '../../core/errors.js';
import { DEFAULT_QUERY_FIELDS, ToolError } from '../../core/parsers/index.js';
import { FakeClock } from '../../platform/index.js';
import { ExecToolError, createExecTool } from '../probe/index.js';
import { createFakeTool, fakeExecTool, tempDir, type FakeTool } from '../probe/testing.js';
import { describeWithRealFixtures, readRealFixture } from '../../test/fixtures.js';
import { createNvidiaSmiCollector, nvidiaSmiArgs, readNvidiaQuery } from './nvidia-smi.js';
import { gpuBusId, gpuRowValues, lostGpuLine, nvidiaQueryRow } from './testing.js';

const fields = DEFAULT_QUERY_FIELDS;
const never = (): AbortSignal => new AbortController().signal;
/** The rows of GPUs `indexes` on a node of `total` GPUs (the driver's count). */
const rows = (total: number, ...indexes: number[]): string =>
  indexes.map((i) => `${nvidiaQueryRow(fields, gpuRowValues(i, { count: String(total) }))}\n`).join('');
/** nvidia-smi's exit when a GPU is lost (15), with what it printed. */
const lostExit = (stdout: string, stderr = ''): ExecToolError =>
  new ExecToolError('exit', 'nvidia-smi exited with code 15', { exitCode: 15, stdout, stderr });

describe('createNvidiaSmiCollector (real exec, fake nvidia-smi)', () => {
  let dir: ReturnType<typeof tempDir>;
  let tool: FakeTool;
  beforeAll(() => {
    dir = tempDir('npu-fault-nvidia-');
    tool = createFakeTool(dir.path, 'nvidia-smi');
  });
  afterAll(() => dir.remove());

  it('queries DEFAULT_QUERY_FIELDS as noheader,nounits CSV and reads every GPU', async () => {
    tool.respondAll({ stdout: rows(3, 0, 1, 2) });
    const collector = createNvidiaSmiCollector(
      { command: tool.path },
      { exec: createExecTool(), clock: new FakeClock() },
    );
    const payload = await collector.collect(never());
    expect(tool.calls().at(-1)).toBe(nvidiaSmiArgs(fields).join(' '));
    expect(nvidiaSmiArgs(fields)[0]).toBe(`--query-gpu=${fields.join(',')}`);
    if (payload.family !== 'nvidia') throw new Error('expected the nvidia family');
    expect(payload.gpus.map((g) => [g.index, g.bus_id, g.temperature_gpu, g.present])).toEqual([
      [0, gpuBusId(0), 34, true],
      [1, gpuBusId(1), 35, true],
      [2, gpuBusId(2), 36, true],
    ]);
  });

  it('maps a GPU named lost among good rows (exit 15) to that GPU with present:false, keeping the others', async () => {
    tool.respondAll({ stdout: `${rows(3, 0)}${lostGpuLine('0000:3B:00.0')}\n${rows(3, 2)}`, exitCode: 15 });
    const collector = createNvidiaSmiCollector(
      { command: tool.path },
      { exec: createExecTool(), clock: new FakeClock() },
    );
    const payload = await collector.collect(never());
    if (payload.family !== 'nvidia') throw new Error('expected the nvidia family');
    expect(payload.gpus.map((g) => [g.index, g.bus_id, g.present])).toEqual([
      [0, gpuBusId(0), true],
      [1, '0000:3B:00.0', false],
      [2, gpuBusId(2), true],
    ]);
    expect(payload.gpus[1]).toMatchObject({ temperature_gpu: null, power_draw_w: null, uuid: null });
  });
});

describe('createNvidiaSmiCollector (fake exec)', () => {
  const collectorFor = (answers: Array<string | Error>) => {
    let call = 0;
    const exec = fakeExecTool(() => answers[Math.min(call++, answers.length - 1)] ?? '');
    return createNvidiaSmiCollector({ command: 'nvidia-smi' }, { exec, clock: new FakeClock() });
  };

  it('gives a lost GPU the index, uuid and name it had when last read, so it stays the same device', async () => {
    const collector = collectorFor([
      rows(3, 0, 1, 2),
      lostExit(`${rows(3, 0)}${rows(3, 2)}`, `${lostGpuLine(gpuBusId(1))}\n`),
    ]);
    await collector.collect(never());
    const payload = await collector.collect(never());
    if (payload.family !== 'nvidia') throw new Error('expected the nvidia family');
    expect(payload.gpus[1]).toMatchObject({
      index: 1,
      uuid: 'GPU-1a',
      name: 'NVIDIA H100 80GB HBM3',
      bus_id: gpuBusId(1),
      present: false,
    });
  });

  it('reads an output that is only the lost GPUs as those GPUs off the bus', async () => {
    const payload = await collectorFor([
      lostExit(`${lostGpuLine('0000:03:00.0')}\n${lostGpuLine('0000:04:00.0')}\n`),
    ]).collect(never());
    if (payload.family !== 'nvidia') throw new Error('expected the nvidia family');
    expect(payload.gpus.map((g) => [g.index, g.bus_id, g.present])).toEqual([
      [0, '0000:03:00.0', false],
      [1, '0000:04:00.0', false],
    ]);
  });

  it('fails on a non-zero exit that names no GPU (NVML down), and on the same message with exit 0', async () => {
    const nvml = 'Failed to initialize NVML: Driver/library version mismatch\n';
    const exit = new ExecToolError('exit', 'nvidia-smi exited with code 9: Failed to initialize NVML', {
      exitCode: 9,
      stdout: nvml,
    });
    await expect(collectorFor([exit]).collect(never())).rejects.toBe(exit);
    await expect(collectorFor([nvml]).collect(never())).rejects.toThrow(ToolError);
    // A lost GPU beside a failure naming none is still the failure.
    await expect(
      collectorFor([lostExit(`${lostGpuLine('0000:03:00.0')}\n${nvml}`)]).collect(never()),
    ).rejects.toThrow('Failed to initialize NVML');
  });

  it('fails on garbage output as the parser does (a ParseError naming the line)', async () => {
    await expect(collectorFor(['\u0007Segmentation fault (core dumped)\n']).collect(never())).rejects.toThrow(
      ParseError,
    );
    await expect(collectorFor([rows(1, 0).replace('34', '81920 MiB')]).collect(never())).rejects.toThrow(
      'line 1',
    );
  });
});

describe('readNvidiaQuery', () => {
  it('ignores stderr lines that are neither rows nor tool errors (warnings)', () => {
    const payload = readNvidiaQuery(
      rows(2, 0, 1),
      'WARNING: infoROM is corrupted at gpu 0000:19:00.0\n',
      fields,
    );
    expect(payload.gpus).toHaveLength(2);
  });

  it('reads the rows beside lost GPUs whether or not the driver count includes them, never more rows than it says', () => {
    const withCount = fields.includes('count') ? fields : [...fields, 'count'];
    const row = (i: number, count: number): string =>
      nvidiaQueryRow(withCount, gpuRowValues(i, { count: String(count) }));
    const lost = lostGpuLine(gpuBusId(1));
    expect(readNvidiaQuery(`${row(0, 3)}\n${lost}\n${row(2, 3)}\n`, '', withCount).gpus).toHaveLength(3);
    // GPUs counted that no line names are the inventory's to find.
    expect(readNvidiaQuery(`${row(0, 5)}\n${lost}\n${row(2, 5)}\n`, '', withCount).gpus).toHaveLength(3);
    expect(() => readNvidiaQuery(`${row(0, 1)}\n${lost}\n${row(2, 1)}\n`, '', withCount)).toThrow(ParseError);
  });

  it("keeps the parser's readable:false on a GPU with every health cell not available, not on one printing errors", () => {
    const health = [
      'temperature.gpu',
      'power.draw',
      'ecc.errors.corrected.volatile.total',
      'ecc.errors.uncorrected.volatile.total',
      'pcie.link.gen.current',
      'pcie.link.width.current',
    ];
    const na = Object.fromEntries(health.map((f, i) => [f, i % 2 === 0 ? '[N/A]' : '[Not Supported]']));
    const err = Object.fromEntries(health.map((f) => [f, 'ERR!']));
    const count = { count: '3' };
    const text = [
      gpuRowValues(0, count),
      gpuRowValues(1, { ...na, ...count }),
      gpuRowValues(2, { ...err, ...count }),
    ]
      .map((v) => nvidiaQueryRow(fields, v))
      .join('\n');
    const gpus = readNvidiaQuery(text, '', fields).gpus;
    expect(gpus.map((g) => g.readable)).toEqual([undefined, false, undefined]);
    expect(gpus.map((g) => g.temperature_gpu)).toEqual([34, null, null]);
  });
});

describeWithRealFixtures('readNvidiaQuery (real nvidia-smi failure outputs)', () => {
  it.each([
    ['nvidia-smi-gpu-lost-1.txt', '0000:03:00.0'],
    ['nvidia-smi-gpu-lost-2.txt', '0000:09:00.0'],
    ['nvidia-smi-gpu-lost-3.txt', '0000:07:00.0'],
  ])('%s names GPU %s, sent off the bus', (file, bus) => {
    const gpus = readNvidiaQuery(readRealFixture(file), '', fields).gpus;
    expect(gpus.map((g) => [g.bus_id, g.present])).toEqual([[bus, false]]);
  });

  it('the same lost-GPU line beside good rows keeps the rows', () => {
    const gpus = readNvidiaQuery(
      `${rows(2, 0)}${readRealFixture('nvidia-smi-gpu-lost-1.txt')}`,
      '',
      fields,
    ).gpus;
    expect(gpus.map((g) => g.present)).toEqual([true, false]);
  });

  it('an NVML version mismatch is a failure, not a lost GPU', () => {
    expect(() =>
      readNvidiaQuery(readRealFixture('nvidia-smi-error-nvml-mismatch-1.txt'), '', fields),
    ).toThrow(ToolError);
  });
});

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ParseError } from '../../core/errors.js';
import { DEFAULT_QUERY_FIELDS, ToolError } from '../../core/parsers/index.js';
import { FakeClock } from '../../platform/index.js';
import { ExecToolError, ProbeTimeoutError, createExecTool, createStreamTool } from '../probe/index.js';
import { createFakeTool, fakeExecTool, fakeStreamTool, tempDir, type FakeTool } from '../probe/testing.js';
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
      { command: tool.path, loop: false, loopCooldownSeconds: 60 },
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
      { command: tool.path, loop: false, loopCooldownSeconds: 60 },
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
    return createNvidiaSmiCollector(
      { command: 'nvidia-smi', loop: false, loopCooldownSeconds: 60 },
      { exec, clock: new FakeClock() },
    );
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

describe('createNvidiaSmiCollector (loop mode: fake stream, fake exec)', () => {
  const setup = (oneShot: Array<string | Error> = [rows(2, 0, 1)]) => {
    let call = 0;
    const exec = fakeExecTool(() => oneShot[Math.min(call++, oneShot.length - 1)] ?? '');
    const stream = fakeStreamTool();
    const clock = new FakeClock();
    const collector = createNvidiaSmiCollector(
      { command: 'nvidia-smi', loop: true, loopCooldownSeconds: 60 },
      { exec, stream, clock, periodMs: 1000 },
    );
    const lines = (text: string): string[] => text.split('\n').filter((l) => l !== '');
    return { exec, stream, clock, collector, lines };
  };

  it('reads each sample from the one loop, with the time its rows arrived, running no one-shot', async () => {
    const { exec, stream, clock, collector, lines } = setup();
    for (let i = 0; i < 3; i++) {
      const reading = collector.read!(never());
      await clock.advance(250);
      stream.streams[0]!.print(...lines(rows(2, 0, 1)));
      await expect(reading).resolves.toMatchObject({
        collectedAt: Date.UTC(2026, 0, 1) + 250 * (i + 1),
        payload: {
          family: 'nvidia',
          gpus: [
            { index: 0, present: true },
            { index: 1, present: true },
          ],
        },
      });
    }
    expect(stream.streams).toHaveLength(1);
    expect(stream.streams[0]!.args.slice(-2)).toEqual(['-lms', '1000']);
    expect(exec.calls).toHaveLength(0);
  });

  it('lets a stderr warning be, and reads a lost GPU with a one-shot run in the same call', async () => {
    const { exec, stream, collector, lines } = setup([
      lostExit(`${rows(2, 0)}`, `${lostGpuLine(gpuBusId(1))}\n`),
    ]);
    const first = collector.collect(never());
    stream.streams[0]!.handlers.onStderr('WARNING: infoROM is corrupted at gpu 0000:19:00.0');
    stream.streams[0]!.print(...lines(rows(2, 0, 1)));
    await first;
    expect(stream.streams[0]!.stopped).toBe(false);

    const second = collector.collect(never());
    stream.streams[0]!.handlers.onStderr(lostGpuLine(gpuBusId(1)));
    const payload = await second;
    expect(stream.streams[0]!.stopped).toBe(true);
    expect(exec.calls).toHaveLength(1);
    expect(exec.calls[0]!.args).not.toContain('-lms');
    if (payload.family !== 'nvidia') throw new Error('expected the nvidia family');
    // The identity it had in the loop's last sample.
    expect(payload.gpus[1]).toMatchObject({ index: 1, uuid: 'GPU-1a', bus_id: gpuBusId(1), present: false });
    // One-shot until the cooldown passes.
    await collector.collect(never());
    expect(exec.calls).toHaveLength(2);
    expect(stream.streams).toHaveLength(1);
  });

  it('gives the loop up when its rows do not read, and the one-shot run decides', async () => {
    const { exec, stream, collector, lines } = setup();
    const reading = collector.collect(never());
    stream.streams[0]!.print(...lines(rows(1, 0).replace('34', '81920 MiB')));
    await expect(reading).resolves.toMatchObject({ gpus: [{ index: 0 }, { index: 1 }] });
    expect(stream.streams[0]!.stopped).toBe(true);
    expect(exec.calls).toHaveLength(1);
  });

  it('gives a loop that misses the probe deadline up, but not one whose wait ends for a shutdown', async () => {
    const { stream, collector } = setup();
    const shutdown = new AbortController();
    const stopped = collector.collect(shutdown.signal);
    shutdown.abort(new Error('agent stopping'));
    await expect(stopped).rejects.toThrow('agent stopping');
    expect(stream.streams[0]!.stopped).toBe(false);

    const deadline = new AbortController();
    const late = collector.collect(deadline.signal);
    deadline.abort(new ProbeTimeoutError('nvidia-smi', 3000));
    await expect(late).rejects.toThrow(ProbeTimeoutError);
    expect(stream.streams[0]!.stopped).toBe(true);
  });

  it('runs one-shot every sample when no stream tool is given, and close() is harmless', async () => {
    const exec = fakeExecTool(() => rows(1, 0));
    const collector = createNvidiaSmiCollector(
      { command: 'nvidia-smi', loop: true, loopCooldownSeconds: 60 },
      { exec, clock: new FakeClock() },
    );
    await collector.collect(never());
    await collector.collect(never());
    collector.close?.();
    expect(exec.calls).toHaveLength(2);
  });
});

describe('createNvidiaSmiCollector (loop mode, real processes)', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeAll(() => {
    dir = tempDir('npu-fault-nvidia-loop-');
  });
  afterAll(() => dir.remove());

  it('keeps one nvidia-smi running across samples, and falls back to a one-shot run when it reports a GPU lost', async () => {
    const state = join(dir.path, 'state');
    writeFileSync(`${state}.rows`, rows(2, 0, 1));
    // A stand-in for nvidia-smi: with -lms it prints the rows file every period, and a lost
    // GPU's line on stderr once the file `lost` exists; without it, one answer and exit 15/0.
    const tool = join(dir.path, 'nvidia-smi');
    writeFileSync(
      tool,
      `#!/bin/bash
echo "$*" >> '${state}.calls'
lost='${lostGpuLine(gpuBusId(1))}'
if [ "$3" = "-lms" ]; then
  while :; do
    if [ -e '${state}.lost' ]; then echo "$lost" >&2; else cat '${state}.rows'; fi
    sleep 0.05
  done
fi
if [ -e '${state}.lost' ]; then head -1 '${state}.rows'; echo "$lost"; exit 15; fi
cat '${state}.rows'
`,
      { mode: 0o755 },
    );
    const collector = createNvidiaSmiCollector(
      { command: tool, loop: true, loopCooldownSeconds: 60 },
      { exec: createExecTool(), stream: createStreamTool(), clock: new FakeClock(), periodMs: 50 },
    );
    try {
      for (let i = 0; i < 3; i++) {
        const payload = await collector.collect(AbortSignal.timeout(3000));
        if (payload.family !== 'nvidia') throw new Error('expected the nvidia family');
        expect(payload.gpus.map((g) => g.present)).toEqual([true, true]);
      }
      const calls = (): string[] => readFileSync(`${state}.calls`, 'utf8').trim().split('\n');
      expect(calls()).toEqual([`${nvidiaSmiArgs(fields).join(' ')} -lms 50`]);
      writeFileSync(`${state}.lost`, '');
      const payload = await collector.collect(AbortSignal.timeout(3000));
      if (payload.family !== 'nvidia') throw new Error('expected the nvidia family');
      expect(payload.gpus.map((g) => [g.index, g.present])).toEqual([
        [0, true],
        [1, false],
      ]);
      expect(calls().slice(1)).toEqual([nvidiaSmiArgs(fields).join(' ')]);
    } finally {
      collector.close?.();
    }
  });
});

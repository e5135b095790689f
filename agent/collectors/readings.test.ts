import { describe, expect, it } from '@jest/globals';
import type { Payload } from '../../contracts/index.js';
import { DEFAULT_QUERY_FIELDS } from '../../core/parsers/index.js';
import { HDC_ENVELOPE, NPU_SMI_910B_TABLE } from '../../core/parsers/testing.js';
import { FakeClock, createRegistry, type Registry } from '../../platform/index.js';
import { ExecToolError } from '../probe/index.js';
import { fakeExecTool, memoryLogger } from '../probe/testing.js';
import { createHdcCollector } from './hdc.js';
import { createNpuSmiCollector, npuSmiCollectorConfigSchema } from './npu-smi.js';
import { createNvidiaSmiCollector, readNvidiaQuery } from './nvidia-smi.js';
import {
  READINGS_OUT_OF_RANGE_METRIC,
  createOutOfRangeHandler,
  reportOnceRead,
  type OutOfRangeReading,
} from './readings.js';
import { gpuBusId, gpuRowValues, lostGpuLine, nvidiaQueryRow } from './testing.js';

const never = (): AbortSignal => new AbortController().signal;

/** The counter's value for `field` (NaN when it has no such series). */
async function outOfRange(registry: Registry, field: string): Promise<number> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === READINGS_OUT_OF_RANGE_METRIC);
  const values = found?.values as Array<{ value: number; labels: Record<string, unknown> }> | undefined;
  return values?.find((v) => v.labels.field === field)?.value ?? Number.NaN;
}

describe('createOutOfRangeHandler', () => {
  it('counts by field, every field starting at 0; warns of a field once, then logs it at debug', async () => {
    const registry = createRegistry('agent');
    const { log, lines } = memoryLogger();
    const handle = createOutOfRangeHandler({ registry, log });
    expect(await outOfRange(registry, 'temperature_gpu')).toBe(0);
    expect(await outOfRange(registry, 'hbm.ecc.single_bit')).toBe(0);
    handle?.({ field: 'temperature_gpu', value: 65535 });
    handle?.({ field: 'temperature_gpu', value: 65535 });
    handle?.({ field: 'power_draw_w', value: -1 });
    expect(await outOfRange(registry, 'temperature_gpu')).toBe(2);
    expect(await outOfRange(registry, 'power_draw_w')).toBe(1);
    expect(lines.map((line) => [line.level, line.field, line.value])).toEqual([
      ['warn', 'temperature_gpu', '65535'],
      ['debug', 'temperature_gpu', '65535'],
      ['warn', 'power_draw_w', '-1'],
    ]);
  });

  it('shares one counter per registry, and is undefined with neither registry nor log', async () => {
    const registry = createRegistry('agent');
    createOutOfRangeHandler({ registry })?.({ field: 'temp_c', value: 300 });
    createOutOfRangeHandler({ registry })?.({ field: 'temp_c', value: 300 });
    expect(await outOfRange(registry, 'temp_c')).toBe(2);
    expect(createOutOfRangeHandler({})).toBeUndefined();
  });
});

describe('reportOnceRead', () => {
  it('tells what a parse reported once it returns, and nothing of a parse that throws', () => {
    const told: OutOfRangeReading[] = [];
    const tell = (reading: OutOfRangeReading): void => void told.push(reading);
    const reading: OutOfRangeReading = { field: 'temp_c', value: 65535 };
    expect(() =>
      reportOnceRead(tell, (report) => {
        report?.(reading);
        throw new Error('refused midway');
      }),
    ).toThrow('refused midway');
    expect(told).toEqual([]);
    expect(
      reportOnceRead(tell, (report) => {
        report?.(reading);
        return 'read';
      }),
    ).toBe('read');
    expect(told).toEqual([reading]);
  });
});

describe('the collectors send a glitching sensor as null and count it', () => {
  it('nvidia-smi: a GPU printing 4294967295 °C is sent at null, the sample kept', async () => {
    const registry = createRegistry('agent');
    const glitching = nvidiaQueryRow(
      DEFAULT_QUERY_FIELDS,
      gpuRowValues(0, { 'temperature.gpu': '4294967295', count: '2' }),
    );
    const healthy = nvidiaQueryRow(DEFAULT_QUERY_FIELDS, gpuRowValues(1, { count: '2' }));
    const collector = createNvidiaSmiCollector(
      { command: 'nvidia-smi', loop: false, loopCooldownSeconds: 60 },
      { exec: fakeExecTool(() => `${glitching}\n${healthy}\n`), clock: new FakeClock(), registry },
    );
    const payload = await collector.collect(never());
    if (payload.family !== 'nvidia') throw new Error('expected the nvidia family');
    expect(payload.gpus.map((g) => [g.index, g.temperature_gpu])).toEqual([
      [0, null],
      [1, 35],
    ]);
    expect(await outOfRange(registry, 'temperature_gpu')).toBe(1);
  });

  it('nvidia-smi: an output read line by line (a GPU lost) counts each glitch once', () => {
    const told: OutOfRangeReading[] = [];
    const glitching = nvidiaQueryRow(
      DEFAULT_QUERY_FIELDS,
      gpuRowValues(0, { 'power.draw': '65535', count: '2' }),
    );
    const payload = readNvidiaQuery(
      `${glitching}\n${lostGpuLine(gpuBusId(1))}\n`,
      '',
      DEFAULT_QUERY_FIELDS,
      new Map(),
      (reading) => told.push(reading),
    );
    expect(payload.gpus.map((g) => [g.power_draw_w, g.present])).toEqual([
      [null, true],
      [null, false],
    ]);
    expect(told).toEqual([{ field: 'power_draw_w', value: 65535 }]);
  });

  it('npu-smi: the table and the -t records, counted by field', async () => {
    const registry = createRegistry('agent');
    const table = NPU_SMI_910B_TABLE.replace('| 124.9       41  ', '| 124.9       9999');
    const ecc = '\tHBM Single Bit Error Count     : -1\n\tHBM Double Bit Error Count     : 0\n';
    const exec = fakeExecTool((_command, args) => {
      const line = args.join(' ');
      if (line === 'info') return table;
      if (line.startsWith('info -t ecc')) return ecc;
      if (line.startsWith('info -t health')) return '\tHealth Status                  : OK\n';
      return new ExecToolError('exit', 'unexpected', { exitCode: 1 });
    });
    const collector = createNpuSmiCollector(
      npuSmiCollectorConfigSchema.parse({ detailTypes: ['health', 'ecc'] }),
      {
        exec,
        clock: new FakeClock(),
        registry,
      },
    );
    const payload: Payload = await collector.collect(never());
    if (payload.family !== '910B') throw new Error('expected the 910B family');
    expect(payload.npus.map((n) => [n.temp_c, n.hbm.ecc.single_bit])).toEqual([
      [null, null],
      [91, null],
    ]);
    expect(await outOfRange(registry, 'temp_c')).toBe(1);
    // One -t ecc run per chip, each printing -1.
    expect(await outOfRange(registry, 'hbm.ecc.single_bit')).toBe(2);
  });

  it('hdc: a 1e300 °C NPU (issue 26) is sent at null and counted', async () => {
    const registry = createRegistry('agent');
    const collector = createHdcCollector(
      { command: 'hdc', args: ['health', '-j'] },
      {
        exec: fakeExecTool(() => HDC_ENVELOPE.replace('"temp_c": 52', '"temp_c": 1e300')),
        clock: new FakeClock(),
        registry,
      },
    );
    const payload = await collector.collect(never());
    expect(payload.family === '910B' && payload.npus[0]?.temp_c).toBeNull();
    expect(await outOfRange(registry, 'temp_c')).toBe(1);
  });
});

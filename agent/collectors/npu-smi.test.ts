import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import type { Payload } from '../../contracts/index.js';
import { ToolError, parseNpuSmiTable } from '../../core/parsers/index.js';
import {
  NPU_SMI_310P_TABLE,
  NPU_SMI_910B_TABLE,
  NPU_SMI_T_ECC,
  NPU_SMI_T_HEALTH,
  NPU_SMI_T_POWER,
} from '../../core/parsers/testing.js';
import { FakeClock } from '../../platform/index.js';
import { ExecToolError, createExecTool, type ExecTool } from '../probe/index.js';
import {
  createFakeTool,
  fakeExecTool,
  memoryLogger,
  tempDir,
  type FakeExecAnswer,
} from '../probe/testing.js';
import {
  createNpuSmiCollector,
  detailArgs,
  detailTargets,
  npuSmiCollectorConfigSchema,
  type NpuSmiCollectorConfig,
} from './npu-smi.js';

const never = (): AbortSignal => new AbortController().signal;
const HEALTH_OK = '\tHealth Status                  : OK\n\tError Code                     : NA\n';
const ECC_ZERO = NPU_SMI_T_ECC.replace(': 7', ': 0').replace(
  'Double Bit Error Count     : 1',
  'Double Bit Error Count     : 0',
);

/** npu-smi on a two-NPU 910B node: NPU 1 reports an alarm with fault codes and HBM ECC 7/1. */
function node910(args: readonly string[]): FakeExecAnswer {
  const line = args.join(' ');
  if (line === 'info') return NPU_SMI_910B_TABLE;
  if (line === 'info -t health -i 1 -c 0') return NPU_SMI_T_HEALTH;
  if (line.startsWith('info -t health')) return HEALTH_OK;
  if (line === 'info -t ecc -i 1 -c 0') return NPU_SMI_T_ECC;
  if (line.startsWith('info -t ecc')) return ECC_ZERO;
  return new ExecToolError('exit', `npu-smi exited with code 1: unexpected ${line}`, { exitCode: 1 });
}

const config = (overrides: Partial<NpuSmiCollectorConfig> = {}): NpuSmiCollectorConfig =>
  npuSmiCollectorConfigSchema.parse(overrides);

function npu(payload: Payload, id: number) {
  if (payload.family !== '910B') throw new Error(`expected the 910B family, got ${payload.family}`);
  return payload.npus.find((n) => n.npu === id);
}

describe('detailTargets and detailArgs', () => {
  it('asks health and ecc per chip, and card-level power/common only of 310P cards', () => {
    const types = ['health', 'ecc', 'power'] as const;
    expect(
      detailTargets(parseNpuSmiTable(NPU_SMI_910B_TABLE), types)
        .map(detailArgs)
        .map((a) => a.join(' ')),
    ).toEqual([
      'info -t health -i 0 -c 0',
      'info -t ecc -i 0 -c 0',
      'info -t health -i 1 -c 0',
      'info -t ecc -i 1 -c 0',
    ]);
    expect(
      detailTargets(parseNpuSmiTable(NPU_SMI_310P_TABLE), types)
        .map(detailArgs)
        .map((a) => a.join(' ')),
    ).toEqual([
      'info -t health -i 2944 -c 0',
      'info -t ecc -i 2944 -c 0',
      'info -t health -i 2944 -c 1',
      'info -t ecc -i 2944 -c 1',
      'info -t power -i 2944',
    ]);
  });
});

describe('createNpuSmiCollector', () => {
  it('completes the table with the -t records: fault codes, health and HBM ECC of the NPU they name', async () => {
    const exec = fakeExecTool((_, args) => node910(args));
    const payload = await createNpuSmiCollector(config(), { exec, clock: new FakeClock() }).collect(never());
    expect(npu(payload, 1)).toMatchObject({
      health: 'Alarm',
      error_codes: ['A4025021', '8C03A000'],
      hbm: { ecc: { single_bit: 7, double_bit: 1 } },
    });
    expect(npu(payload, 0)).toMatchObject({ health: 'OK', error_codes: [], hbm: { ecc: { single_bit: 0 } } });
    expect(exec.calls).toHaveLength(5);
  });

  it('reads the -t records only every detailsIntervalSeconds, reusing the last ones in between', async () => {
    const exec = fakeExecTool((_, args) => node910(args));
    const clock = new FakeClock();
    const collector = createNpuSmiCollector(config({ detailsIntervalSeconds: 10 }), { exec, clock });
    await collector.collect(never());
    await clock.advance(9000);
    const between = await collector.collect(never());
    expect(exec.calls).toHaveLength(6); // the table only
    expect(npu(between, 1)?.error_codes).toEqual(['A4025021', '8C03A000']);
    await clock.advance(1000);
    await collector.collect(never());
    expect(exec.calls).toHaveLength(11);
  });

  it('keeps a record whose -t run failed until it is detailsMaxAgeSeconds old, then falls back to the table', async () => {
    let failing = false;
    const exec = fakeExecTool((_, args) =>
      failing && args.join(' ') === 'info -t health -i 1 -c 0'
        ? new ExecToolError('exit', 'npu-smi exited with code 1: Invalid card id.', { exitCode: 1 })
        : node910(args),
    );
    const clock = new FakeClock();
    const { log, lines } = memoryLogger();
    const collector = createNpuSmiCollector(
      config({ detailsIntervalSeconds: 10, detailsMaxAgeSeconds: 30 }),
      { exec, clock, log },
    );
    await collector.collect(never());
    failing = true;
    await clock.advance(10_000);
    expect(npu(await collector.collect(never()), 1)?.error_codes).toEqual(['A4025021', '8C03A000']);
    expect(lines.some((l) => l.level === 'warn' && l.type === 'health' && l.npu === 1)).toBe(true);
    await clock.advance(20_000);
    expect(npu(await collector.collect(never()), 1)?.error_codes).toEqual(['A4025021', '8C03A000']); // 30 s old
    await clock.advance(1);
    // Too old: the table's own health word stands, the codes are gone; ECC (read fine) stays.
    expect(npu(await collector.collect(never()), 1)).toMatchObject({
      health: 'Critical',
      error_codes: [],
      hbm: { ecc: { single_bit: 7 } },
    });
  });

  it('warns once per failing spell of -t runs, every record and flaky ones included, counts every failure, and says when it ended', async () => {
    let calls = 0;
    let failing: 'all' | 'flaky' | 'none' = 'all';
    const exec = fakeExecTool((_, args) => {
      if (!args.includes('-t')) return node910(args);
      calls++;
      const fails = failing === 'all' || (failing === 'flaky' && calls % 3 !== 0);
      return fails
        ? new ExecToolError('exit', 'npu-smi exited with code 1: Invalid card id.', { exitCode: 1 })
        : node910(args);
    });
    const clock = new FakeClock();
    const registry = new Registry();
    const { log, lines } = memoryLogger();
    const collector = createNpuSmiCollector(config({ detailsIntervalSeconds: 0 }), {
      exec,
      clock,
      log,
      registry,
    });
    for (let i = 0; i < 20; i++) await collector.collect(never());
    failing = 'flaky'; // two calls in three fail: still one spell
    for (let i = 0; i < 20; i++) await collector.collect(never());
    const failed = lines.filter((l) => l.msg === 'npu-smi info -t failed; keeping the last record');
    expect(failed.filter((l) => l.level === 'warn')).toHaveLength(1);
    expect(failed.filter((l) => l.level === 'debug').length).toBeGreaterThan(40);
    const counted = (await registry.getMetricsAsJSON()).find(
      (m) => m.name === 'npu_fault_agent_npu_smi_detail_failures_total',
    );
    const total = (counted?.values ?? []).reduce((sum, v) => sum + v.value, 0);
    expect(total).toBe(failed.length);
    expect(lines.filter((l) => String(l.msg).startsWith('npu-smi info -t recovered'))).toHaveLength(0);
    failing = 'none';
    await collector.collect(never());
    expect(lines.filter((l) => String(l.msg).startsWith('npu-smi info -t recovered'))).toHaveLength(1);
    failing = 'all';
    await collector.collect(never());
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(2); // a new spell warns again
  });

  it('keeps what a round cut by the deadline read, and goes on with the rest at the next sample', async () => {
    const controller = new AbortController();
    let cut = true;
    const exec = fakeExecTool((_, args) => {
      if (cut && args.join(' ') === 'info -t ecc -i 1 -c 0') {
        cut = false;
        controller.abort(new Error('deadline'));
        return { hang: true };
      }
      return node910(args);
    });
    const collector = createNpuSmiCollector(config({ detailsConcurrency: 1 }), {
      exec,
      clock: new FakeClock(),
    });
    await expect(collector.collect(controller.signal)).rejects.toThrow('deadline');
    expect(exec.calls.map((c) => c.args.join(' '))).toEqual([
      'info',
      'info -t health -i 0 -c 0',
      'info -t ecc -i 0 -c 0',
      'info -t health -i 1 -c 0',
      'info -t ecc -i 1 -c 0',
    ]);
    const payload = await collector.collect(never());
    expect(exec.calls.slice(5).map((c) => c.args.join(' '))).toEqual(['info', 'info -t ecc -i 1 -c 0']);
    expect(npu(payload, 1)).toMatchObject({
      error_codes: ['A4025021', '8C03A000'],
      hbm: { ecc: { single_bit: 7 } },
    });
  });

  it('runs at most detailsConcurrency -t runs at a time', async () => {
    let inFlight = 0;
    let most = 0;
    const exec: ExecTool = async (_, args) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      const answer = node910(args);
      if (typeof answer !== 'string') throw answer instanceof Error ? answer : new Error('hang');
      return answer;
    };
    await createNpuSmiCollector(config({ detailsConcurrency: 2 }), { exec, clock: new FakeClock() }).collect(
      never(),
    );
    expect(most).toBe(2);
  });

  it('drops the records of a device gone from the table', async () => {
    let table = NPU_SMI_910B_TABLE;
    const exec = fakeExecTool((_, args) => (args.join(' ') === 'info' ? table : node910(args)));
    const collector = createNpuSmiCollector(config(), { exec, clock: new FakeClock() });
    await collector.collect(never());
    // NPU 1's two rows cut out: a table of NPU 0 alone.
    table = NPU_SMI_910B_TABLE.split('\n')
      .filter((line) => !/\| 1 {5}910B3|0000:C2:00\.0/.test(line))
      .join('\n');
    const payload = await collector.collect(never());
    if (payload.family !== '910B') throw new Error('expected the 910B family');
    expect(payload.npus.map((n) => n.npu)).toEqual([0]);
  });

  it('adds the MCU card power of a 310P card', async () => {
    const exec = fakeExecTool((_, args) => {
      const line = args.join(' ');
      if (line === 'info') return NPU_SMI_310P_TABLE;
      if (line.startsWith('info -t health')) return HEALTH_OK;
      if (line.startsWith('info -t ecc')) return ECC_ZERO;
      return NPU_SMI_T_POWER;
    });
    const payload = await createNpuSmiCollector(config(), { exec, clock: new FakeClock() }).collect(never());
    if (payload.family !== '310P') throw new Error('expected the 310P family');
    expect(payload.cards[0]?.mcu_power_w).toBe(42.9);
    expect(payload.cards[0]?.chips.map((c) => c.ddr.ecc_sbe)).toEqual([2, 2]);
  });

  it("fails on npu-smi's own failure message (driver not ready)", async () => {
    const exec = fakeExecTool(
      () =>
        'DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\ndcmi module initialize failed. ret is -8005\n',
    );
    await expect(
      createNpuSmiCollector(config(), { exec, clock: new FakeClock() }).collect(never()),
    ).rejects.toThrow(ToolError);
  });

  it('has defaults and refuses unknown keys and types', () => {
    expect(config()).toEqual({
      command: 'npu-smi',
      detailsIntervalSeconds: 10,
      detailTypes: ['health', 'ecc', 'power'],
      detailsConcurrency: 4,
      detailsMaxAgeSeconds: 60,
    });
    expect(npuSmiCollectorConfigSchema.safeParse({ detailTypes: ['board'] }).success).toBe(false);
    expect(npuSmiCollectorConfigSchema.safeParse({ detailsInterval: 5 }).success).toBe(false);
  });
});

describe('createNpuSmiCollector with the real exec and a fake npu-smi', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeAll(() => {
    dir = tempDir('npu-fault-npu-smi-');
  });
  afterAll(() => dir.remove());

  it('runs the table and the -t records through real processes', async () => {
    const tool = createFakeTool(dir.path, 'npu-smi');
    tool.respondAll({ stdout: HEALTH_OK });
    tool.respond('info', { stdout: NPU_SMI_910B_TABLE });
    tool.respond('info -t health -i 1 -c 0', { stdout: NPU_SMI_T_HEALTH });
    tool.respond('info -t ecc -i 0 -c 0', { stdout: ECC_ZERO });
    tool.respond('info -t ecc -i 1 -c 0', { stdout: NPU_SMI_T_ECC });
    const collector = createNpuSmiCollector(config({ command: tool.path }), {
      exec: createExecTool(),
      clock: new FakeClock(),
    });
    const payload = await collector.collect(never());
    expect(npu(payload, 1)).toMatchObject({ health: 'Alarm', hbm: { ecc: { double_bit: 1 } } });
    expect(tool.calls().sort()).toEqual(
      [
        'info',
        'info -t ecc -i 0 -c 0',
        'info -t ecc -i 1 -c 0',
        'info -t health -i 0 -c 0',
        'info -t health -i 1 -c 0',
      ].sort(),
    );
  });
});

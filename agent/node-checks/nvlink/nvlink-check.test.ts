import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { NVLINK_B200_ALL_INACTIVE, nvlinkH200 } from '../../../core/parsers/nvidia-smi/testing.js';
import { FakeClock, Registry } from '../../../platform/index.js';
import { LogRecorder } from '../../events/testing.js';
import { ExecToolError, createExecTool } from '../../probe/index.js';
import { createFakeTool, fakeExecTool, tempDir, type FakeExecAnswer } from '../../probe/testing.js';
import {
  createNvlinkCheck,
  nvlinkCheckConfigSchema,
  nvlinkCheckWanted,
  type NvlinkCheckConfig,
} from './index.js';

const T0 = Date.UTC(2026, 0, 1);

/** The value of a metric (0 when the label set was never set). */
async function metric(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const found = registry.getSingleMetric(`npu_fault_agent_${name}`);
  if (!found) return 0;
  const { values } = await found.get();
  return values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value))?.value ?? 0;
}

/** A check whose tool answers each run with the next of `answers` (the last one repeated). */
function setup(answers: FakeExecAnswer[], overrides: Record<string, unknown> = {}) {
  const config: NvlinkCheckConfig = nvlinkCheckConfigSchema.parse(overrides);
  let next = 0;
  const exec = fakeExecTool(() => answers[Math.min(next++, answers.length - 1)] ?? '');
  const logs = new LogRecorder();
  const registry = new Registry();
  const clock = new FakeClock(T0);
  const check = createNvlinkCheck(config, { exec, clock, log: logs.log, registry });
  const controller = new AbortController();
  return {
    check,
    exec,
    logs,
    registry,
    clock,
    controller,
    run: () => check.run(clock.now(), controller.signal),
  };
}

describe('nvlinkCheckConfigSchema and nvlinkCheckWanted', () => {
  it('has the documented defaults', () => {
    expect(nvlinkCheckConfigSchema.parse({})).toEqual({
      enabled: 'auto',
      intervalMs: 30_000,
      command: 'nvidia-smi',
      timeoutMs: 10_000,
      comparePeers: true,
    });
  });

  it('refuses a bad value, naming the field', () => {
    for (const [value, field] of [
      [{ enabled: 'yes' }, 'enabled'],
      [{ intervalMs: 10 }, 'intervalMs'],
      [{ command: '' }, 'command'],
      [{ timeoutMs: 0 }, 'timeoutMs'],
    ] as const) {
      const result = nvlinkCheckConfigSchema.safeParse(value);
      expect(result.error?.issues.map((issue) => issue.path.join('.'))).toEqual([field]);
    }
  });

  it('runs on auto where the collector is nvidia-smi, always when on, never when off', () => {
    expect(nvlinkCheckWanted({ enabled: 'auto' }, 'nvidia-smi')).toBe(true);
    expect(nvlinkCheckWanted({ enabled: 'auto' }, 'npu-smi')).toBe(false);
    expect(nvlinkCheckWanted({ enabled: 'auto' }, 'sim')).toBe(false);
    expect(nvlinkCheckWanted({ enabled: true }, 'hdc')).toBe(true);
    expect(nvlinkCheckWanted({ enabled: false }, 'nvidia-smi')).toBe(false);
  });
});

describe('createNvlinkCheck', () => {
  it('runs `nvidia-smi nvlink --status` and raises nvlink-down when a link that was up goes down', async () => {
    const t = setup([nvlinkH200(), nvlinkH200((gpu, link) => gpu === 3 && link === 4), nvlinkH200()], {
      command: '/usr/bin/nvidia-smi',
    });
    expect(t.check.name).toBe('nvlink');
    expect(t.check.intervalMs).toBe(30_000);
    expect(await t.run()).toEqual([]);
    expect(await t.run()).toEqual([{ reason: 'nvlink-down', message: 'GPU 3: link 4 down (was up)' }]);
    expect(await metric(t.registry, 'nvlink_links', { state: 'inactive' })).toBe(1);
    expect(await metric(t.registry, 'nvlink_links', { state: 'active' })).toBe(8 * 18 - 1);
    expect(await metric(t.registry, 'nvlink_links_down')).toBe(1);
    expect(await t.run()).toEqual([]);
    expect(await metric(t.registry, 'nvlink_links_down')).toBe(0);
    expect(t.exec.calls).toEqual(
      Array(3).fill({ command: '/usr/bin/nvidia-smi', args: ['nvlink', '--status'] }),
    );
    expect(await metric(t.registry, 'nvlink_check_runs_total', { result: 'ok' })).toBe(3);
  });

  it('keeps nvlink-down while the tool fails or hangs (a degraded fabric slows it), until a run reads', async () => {
    const exit = new ExecToolError('exit', 'nvidia-smi exited with code 9', { exitCode: 9 });
    const t = setup([nvlinkH200(), nvlinkH200((gpu, link) => gpu === 3 && link === 4), exit, nvlinkH200()]);
    await t.run();
    const down = [{ reason: 'nvlink-down', message: 'GPU 3: link 4 down (was up)' }];
    expect(await t.run()).toEqual(down);
    expect(await t.run()).toEqual(down);
    expect(await t.run()).toEqual([]);
  });

  it('names a GPU whose links NVML calls all inactive while the others have theirs up', async () => {
    const node = `${nvlinkH200().split('GPU 2:')[0] ?? ''}${NVLINK_B200_ALL_INACTIVE}`;
    const t = setup([node]);
    expect(await t.run()).toEqual([
      { reason: 'nvlink-down', message: 'GPU 2: all links down (2 other GPUs have theirs up)' },
    ]);
  });

  it('bounds the message to 256 characters however many GPUs are down', async () => {
    const t = setup([nvlinkH200(), nvlinkH200((_gpu, link) => link % 2 === 0)]);
    await t.run();
    const [problem] = await t.run();
    expect(problem?.message.length).toBe(256);
    expect(
      problem?.message.startsWith('GPU 0: links 0, 2, 4, 6, 8, 10, 12, 14 +1 more down (were up); GPU 1:'),
    ).toBe(true);
  });

  it('a failing tool, a timeout or garbage is no problem: counted, one warn per spell, one info at its end', async () => {
    const exit = new ExecToolError('exit', 'nvidia-smi exited with code 9: NVIDIA-SMI has failed', {
      exitCode: 9,
    });
    const t = setup([
      nvlinkH200(),
      exit,
      '<html>oops</html>',
      'Failed to initialize NVML: Unknown Error\n',
      nvlinkH200(),
    ]);
    await t.run();
    expect(await t.run()).toEqual([]);
    expect(await t.run()).toEqual([]);
    expect(await t.run()).toEqual([]);
    expect(await metric(t.registry, 'nvlink_check_runs_total', { result: 'tool-failed' })).toBe(2);
    expect(await metric(t.registry, 'nvlink_check_runs_total', { result: 'unreadable' })).toBe(1);
    const warns = t.logs.messages('cannot read the NVLinks; the last state stands until a run reads');
    expect(warns.map((line) => [line.result, line.error])).toEqual([
      ['tool-failed', 'nvidia-smi exited with code 9: NVIDIA-SMI has failed'],
    ]);
    expect(await t.run()).toEqual([]);
    expect(t.logs.messages('the NVLinks read again')).toHaveLength(1);
  });

  it('kills a run that takes longer than timeoutMs, and counts a timeout', async () => {
    const t = setup([{ hang: true }], { timeoutMs: 5000 });
    const running = t.run();
    await t.clock.advance(5000);
    expect(await running).toEqual([]);
    expect(await metric(t.registry, 'nvlink_check_runs_total', { result: 'timeout' })).toBe(1);
    expect(
      t.logs.messages('cannot read the NVLinks; the last state stands until a run reads')[0],
    ).toMatchObject({
      result: 'timeout',
    });
  });

  it('a shutdown during a run is nobody’s failure', async () => {
    const t = setup([{ hang: true }]);
    const running = t.run();
    t.controller.abort();
    expect(await running).toEqual([]);
    expect(await metric(t.registry, 'nvlink_check_runs_total', { result: 'tool-failed' })).toBe(0);
    expect(t.logs.lines.filter((line) => line.level === 'warn')).toEqual([]);
  });

  it('does not run the tool when switched off', async () => {
    const t = setup([nvlinkH200()], { enabled: false });
    expect(await t.run()).toEqual([]);
    expect(t.exec.calls).toEqual([]);
  });
});

describe('createNvlinkCheck with the real exec and a stand-in nvidia-smi', () => {
  let dir: { path: string; remove(): void };
  beforeEach(() => {
    dir = tempDir('npu-fault-nvlink-');
  });
  afterEach(() => dir.remove());

  it('reads the recorded output the tool prints, and fails on its exit code', async () => {
    const tool = createFakeTool(dir.path, 'nvidia-smi');
    const config = nvlinkCheckConfigSchema.parse({ command: tool.path, enabled: true });
    const logs = new LogRecorder();
    const registry = new Registry();
    const check = createNvlinkCheck(config, { exec: createExecTool(), log: logs.log, registry });
    const signal = new AbortController().signal;
    tool.respond('nvlink --status', { stdout: nvlinkH200((gpu, link) => gpu === 6 && link === 11) });
    expect(await check.run(T0, signal)).toEqual([
      { reason: 'nvlink-down', message: 'GPU 6: link 11 down (7 other GPUs have it up)' },
    ]);
    tool.respond('nvlink --status', {
      stdout: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
      exitCode: 9,
    });
    // The failing tool keeps the last state: the link is still named down.
    expect(await check.run(T0, signal)).toEqual([
      { reason: 'nvlink-down', message: 'GPU 6: link 11 down (7 other GPUs have it up)' },
    ]);
    expect(await metric(registry, 'nvlink_check_runs_total', { result: 'tool-failed' })).toBe(1);
    expect(tool.calls()).toEqual(['nvlink --status', 'nvlink --status']);
  });
});

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { ParseError, ValidationError } from '../../core/errors.js';
import { ToolError } from '../../core/parsers/index.js';
import { FakeClock, systemClock, type Clock } from '../../platform/index.js';
import { createHdcCollector, type Collector } from '../collectors/index.js';
import { ExecToolError, createExecTool } from './exec.js';
import { createProbe, failureKindOf, type ProbeOptions } from './probe.js';
import {
  createFakeTool,
  isProcessGone,
  memoryLogger,
  scriptedCollector,
  tempDir,
  twoGpuPayload,
  waitFor,
  type FakeTool,
} from './testing.js';

const OPTIONS: ProbeOptions = { timeoutMs: 3000, retries: 2, cacheTtlMs: 30_000, warmupMs: 5000 };

/** A probe on a FakeClock already past the warm-up, with its registry and log lines. */
async function setup(collector: Collector, options: Partial<ProbeOptions> = {}, warm = true) {
  const clock = new FakeClock();
  const registry = new Registry();
  const { log, lines } = memoryLogger();
  const probe = createProbe(collector, { ...OPTIONS, ...options }, { clock, log, registry });
  if (warm) await clock.advance(OPTIONS.warmupMs);
  return { probe, clock, registry, lines };
}

/** A metric's value (the sample matching `labels`), 0 when absent. */
async function metric(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (found?.values ?? []) as Array<{
    value: number;
    labels: Record<string, unknown>;
    metricName?: string;
  }>;
  const match = values.find(
    (v) =>
      (v.metricName === undefined || v.metricName === name) &&
      Object.entries(labels).every(([k, l]) => v.labels[k] === l),
  );
  return match?.value ?? 0;
}

async function histogramCount(registry: Registry, name: string): Promise<number> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (found?.values ?? []) as Array<{ value: number; metricName?: string }>;
  return values.find((v) => v.metricName === `${name}_count`)?.value ?? 0;
}

const never = (): AbortSignal => new AbortController().signal;

/** A liveness sample: cached, no device (the collector's family, else 910B), the tool's failure. */
const liveness = (family: 'nvidia' | '910B' = '910B') =>
  expect.objectContaining({
    cached: true,
    payload: family === 'nvidia' ? { family, gpus: [] } : { family, npus: [] },
    failure: expect.any(String),
  });
const garbage = new ParseError('not JSON', 1);

describe('createProbe: fresh samples, retries, warm-up', () => {
  it('answers a fresh sample with the time its attempt started', async () => {
    const { probe, clock, registry } = await setup(scriptedCollector([twoGpuPayload(41)]));
    const at = clock.now();
    await expect(probe.sample(never())).resolves.toEqual({
      payload: twoGpuPayload(41),
      cached: false,
      collectedAt: at,
    });
    expect(await metric(registry, 'npu_fault_agent_collector_last_success_timestamp_seconds')).toBe(
      at / 1000,
    );
    expect(await histogramCount(registry, 'npu_fault_agent_collector_duration_seconds')).toBe(1);
  });

  it('takes the time a reading was read from a collector that says (the nvidia-smi loop), and caches it with that time', async () => {
    const readAt = Date.UTC(2026, 0, 1) + 1234;
    const collector: Collector = {
      name: 'loop',
      collect: () => Promise.reject(new Error('read() is the one to call')),
      read: () => Promise.resolve({ payload: twoGpuPayload(43), collectedAt: readAt }),
    };
    const { probe } = await setup(collector);
    await expect(probe.sample(never())).resolves.toEqual({
      payload: twoGpuPayload(43),
      cached: false,
      collectedAt: readAt,
    });
    collector.read = () => Promise.reject(new ExecToolError('exit', 'nvidia-smi exited with code 9'));
    await expect(probe.sample(never())).resolves.toMatchObject({ cached: true, collectedAt: readAt });
  });

  it('retries a failed attempt at once and counts each failure by kind', async () => {
    const collector = scriptedCollector([
      garbage,
      new ExecToolError('exit', 'npu-smi exited with code 1'),
      twoGpuPayload(),
    ]);
    const { probe, registry } = await setup(collector);
    expect((await probe.sample(never()))?.cached).toBe(false);
    expect(collector.calls).toBe(3);
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'garbage' })).toBe(1);
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'exit' })).toBe(1);
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'timeout' })).toBe(0);
  });

  it('gives up after retries + 1 attempts and, with nothing cached, answers a liveness sample', async () => {
    const collector = scriptedCollector([new ExecToolError('spawn', 'hdc could not be started: ENOENT')]);
    const { probe, registry, clock } = await setup(collector, { retries: 1 });
    await expect(probe.sample(never())).resolves.toEqual({
      payload: { family: '910B', npus: [] },
      cached: true,
      collectedAt: clock.now(),
      failure: 'spawn: hdc could not be started: ENOENT',
    });
    expect(probe.status()).toMatchObject({ ok: false, error: 'spawn: hdc could not be started: ENOENT' });
    expect(await metric(registry, 'npu_fault_agent_collector_liveness_samples_total')).toBe(1);
    expect(collector.calls).toBe(2);
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'spawn' })).toBe(2);
  });

  it('discards the first good sample read within the warm-up, and keeps the next', async () => {
    const collector = scriptedCollector([twoGpuPayload(0), twoGpuPayload(41)]);
    const { probe, clock, lines } = await setup(collector, {}, false);
    await clock.advance(OPTIONS.warmupMs - 1);
    await expect(probe.sample(never())).resolves.toBeNull();
    expect(lines.some((l) => l.msg === 'first sample discarded (warm-up)')).toBe(true);
    expect((await probe.sample(never()))?.payload).toEqual(twoGpuPayload(41));
  });

  it('keeps a first sample read after the warm-up, and never discards a later one', async () => {
    const collector = scriptedCollector([garbage, garbage, garbage, twoGpuPayload(41), twoGpuPayload(42)]);
    const { probe, clock } = await setup(collector, {}, false);
    await expect(probe.sample(never())).resolves.toEqual(liveness()); // failing during the warm-up
    await clock.advance(OPTIONS.warmupMs);
    expect((await probe.sample(never()))?.payload).toEqual(twoGpuPayload(41));
    expect((await probe.sample(never()))?.payload).toEqual(twoGpuPayload(42));
  });
});

describe('createProbe: the cached last good sample', () => {
  it('resends the last good sample with cached:true and its original time while the tool fails, then liveness after the TTL', async () => {
    const collector = scriptedCollector([twoGpuPayload(41), garbage]);
    const { probe, clock, registry, lines } = await setup(collector);
    const readAt = clock.now();
    await probe.sample(never());
    await clock.advance(10_000);
    await expect(probe.sample(never())).resolves.toEqual({
      payload: twoGpuPayload(41),
      cached: true,
      collectedAt: readAt,
      failure: expect.stringMatching(/^garbage: /),
    });
    await clock.advance(OPTIONS.cacheTtlMs - 10_000);
    expect((await probe.sample(never()))?.cached).toBe(true); // exactly at the TTL
    await clock.advance(1);
    await expect(probe.sample(never())).resolves.toEqual(liveness('nvidia'));
    await expect(probe.sample(never())).resolves.toEqual(liveness('nvidia'));
    expect(await metric(registry, 'npu_fault_agent_collector_cache_samples_total')).toBe(2);
    // One warning when the failing starts and one when the cache runs out, not one per sample.
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      'collector failing: resending the last good sample',
      'collector still failing: the last good sample is too old to resend; sending liveness only',
    ]);
  });

  it('replaces the cache with each fresh sample and says when the tool recovered', async () => {
    const collector = scriptedCollector([
      twoGpuPayload(41),
      garbage,
      garbage,
      garbage,
      twoGpuPayload(50),
      garbage,
    ]);
    const { probe, clock, lines } = await setup(collector);
    await probe.sample(never());
    expect((await probe.sample(never()))?.cached).toBe(true);
    await clock.advance(1000);
    const fresh = await probe.sample(never());
    expect(fresh).toMatchObject({ cached: false, payload: twoGpuPayload(50) });
    expect(lines.some((l) => l.msg === 'collector recovered')).toBe(true);
    await expect(probe.sample(never())).resolves.toEqual({
      ...fresh,
      cached: true,
      failure: 'garbage: line 1: not JSON',
    });
  });

  it('never caches the warm-up sample it discarded', async () => {
    const { probe } = await setup(scriptedCollector([twoGpuPayload(0), garbage]), {}, false);
    await expect(probe.sample(never())).resolves.toBeNull();
    await expect(probe.sample(never())).resolves.toEqual(liveness());
  });
});

describe('createProbe: answering by the time the sampler gives (answerBy)', () => {
  it('answers a hanging tool with the cache at answerBy while the run goes on, and the next tick joins it', async () => {
    const collector = scriptedCollector([twoGpuPayload(41), 'hang', 'hang', 'hang', twoGpuPayload(42)]);
    const { probe, clock, registry } = await setup(collector);
    const readAt = clock.now();
    await probe.sample(never());
    // Tick 1: the run hangs; at answerBy the cache answers, and the run goes on.
    const tick1 = probe.sample(never(), clock.monotonic() + 1500);
    await clock.advance(1500);
    await expect(tick1).resolves.toEqual({
      payload: twoGpuPayload(41),
      cached: true,
      collectedAt: readAt,
      failure: 'fake: no answer within 1500 ms',
    });
    expect(collector.calls).toBe(2);
    // Failing, as far as anyone reading the node can tell, from the tick that gave up.
    expect(probe.status()).toMatchObject({ ok: false, error: 'fake: no answer within 1500 ms' });
    // Tick 2, a second later: joins the same run (its first attempt still hangs), and answers
    // by its own time; at 3 s that attempt times out and the run retries, as before.
    await clock.advance(1000);
    const tick2 = probe.sample(never(), clock.monotonic() + 400);
    await clock.advance(400);
    expect((await tick2)?.cached).toBe(true);
    expect(collector.calls).toBe(2);
    await clock.advance(100);
    expect(collector.calls).toBe(3);
    // The run's three attempts of 3 s end at 9 s; the next tick starts a new run, which answers fresh.
    await clock.advance(6000);
    expect(collector.calls).toBe(4);
    expect(probe.status()).toMatchObject({ ok: false, error: expect.stringMatching(/^timeout: /) });
    const tick3 = probe.sample(never(), clock.monotonic() + 1500);
    await expect(tick3).resolves.toMatchObject({ cached: false, payload: twoGpuPayload(42) });
    expect(probe.status()).toMatchObject({ ok: true, error: null, failingSince: null });
    // Counted as sent: the two ticks' stand-ins, not the one the abandoned run built at its end.
    expect(await metric(registry, 'npu_fault_agent_collector_cache_samples_total')).toBe(2);
  });

  it('gives a fresh sample that came after its tick gave up to the next tick, without running the tool again', async () => {
    const collector = scriptedCollector([twoGpuPayload(41), 'defer', twoGpuPayload(43)]);
    const { probe, clock } = await setup(collector);
    let told = 0;
    probe.onLateReading?.(() => told++);
    await probe.sample(never());
    const tick = probe.sample(never(), clock.monotonic() + 1500);
    await clock.advance(1500);
    expect((await tick)?.cached).toBe(true);
    collector.release(twoGpuPayload(42)); // the slow run answers now, after its tick gave up
    await clock.advance(0);
    expect(collector.calls).toBe(2);
    expect(told).toBe(1); // the sampler is told, and takes its next tick at once
    await expect(probe.sample(never(), clock.monotonic() + 1500)).resolves.toMatchObject({
      cached: false,
      payload: twoGpuPayload(42),
    });
    expect(collector.calls).toBe(2);
  });

  it('answers with a liveness sample before any good reading', async () => {
    const { probe, clock } = await setup(scriptedCollector(['hang'], 'npu-smi'));
    const tick = probe.sample(never(), clock.monotonic() + 1500);
    await clock.advance(1500);
    await expect(tick).resolves.toEqual({
      payload: { family: '910B', npus: [] },
      cached: true,
      collectedAt: clock.now(),
      failure: 'npu-smi: no answer within 1500 ms',
    });
  });
});

describe('createProbe: timeouts and stops', () => {
  it('aborts an attempt at its deadline (the injected clock), retries, and counts timeouts', async () => {
    const collector = scriptedCollector(['hang']);
    const { probe, clock, registry } = await setup(collector);
    const result = probe.sample(never());
    for (let i = 0; i < 3; i++) await clock.advance(OPTIONS.timeoutMs);
    await expect(result).resolves.toEqual(liveness());
    expect(collector.calls).toBe(3);
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'timeout' })).toBe(3);
    expect(clock.pending).toBe(0); // every deadline timer cancelled or fired
  });

  it('does not wait for a collector that ignores its signal', async () => {
    const collector = scriptedCollector(['ignore-abort', twoGpuPayload()]);
    const { probe, clock } = await setup(collector);
    const result = probe.sample(never());
    await clock.advance(OPTIONS.timeoutMs);
    expect((await result)?.cached).toBe(false);
  });

  it('stops at once when its own signal aborts (a shutdown), counting no failure', async () => {
    const collector = scriptedCollector(['hang']);
    const { probe, registry } = await setup(collector);
    const controller = new AbortController();
    const result = probe.sample(controller.signal);
    controller.abort(new Error('SIGTERM'));
    await expect(result).resolves.toBeNull();
    expect(collector.calls).toBe(1);
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'timeout' })).toBe(0);
    await expect(probe.sample(controller.signal)).resolves.toBeNull();
    expect(collector.calls).toBe(1);
  });

  it('never throws: a collector that throws synchronously, rejects with a non-Error or returns garbage is a failure', async () => {
    const throwing: Collector = {
      name: 'bad',
      collect: () => {
        throw new TypeError('bug');
      },
    };
    const { probe, registry } = await setup(throwing, { retries: 0 });
    await expect(probe.sample(never())).resolves.toEqual(liveness());
    const notAnError: Collector = {
      name: 'odd',
      collect: () => Promise.reject('not an Error' as unknown as Error),
    };
    await expect((await setup(notAnError, { retries: 0 })).probe.sample(never())).resolves.toEqual(
      liveness(),
    );
    const invalid = scriptedCollector([{ family: 'nvidia', gpus: [{ index: -1 }] } as never]);
    const third = await setup(invalid, { retries: 0 });
    await expect(third.probe.sample(never())).resolves.toEqual(liveness());
    expect(
      await metric(third.registry, 'npu_fault_agent_collector_failures_total', { kind: 'garbage' }),
    ).toBe(1);
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'garbage' })).toBe(1);
  });

  it('refuses invalid options', () => {
    const deps = { clock: new FakeClock(), log: memoryLogger().log, registry: new Registry() };
    expect(() => createProbe(scriptedCollector([]), { ...OPTIONS, timeoutMs: 0 }, deps)).toThrow(
      'probe timeoutMs',
    );
    expect(() => createProbe(scriptedCollector([]), { ...OPTIONS, retries: 1.5 }, deps)).toThrow(
      'probe retries',
    );
  });
});

describe('failureKindOf', () => {
  it.each([
    { name: 'exec spawn', error: new ExecToolError('spawn', 'x'), kind: 'spawn' },
    { name: 'exec exit', error: new ExecToolError('exit', 'x'), kind: 'exit' },
    { name: 'exec aborted', error: new ExecToolError('aborted', 'x'), kind: 'timeout' },
    { name: 'exec output over the cap', error: new ExecToolError('output', 'x'), kind: 'garbage' },
    {
      name: "the tool's own failure message",
      error: new ToolError('nvidia-smi failed: NVML', 1),
      kind: 'exit',
    },
    { name: 'a parse error', error: new ParseError('x', 3), kind: 'garbage' },
    { name: 'a validation error', error: new ValidationError('payload.gpus[0]', 'x'), kind: 'garbage' },
    {
      name: 'an exec error as the cause',
      error: new Error('wrapped', { cause: new ExecToolError('spawn', 'x') }),
      kind: 'spawn',
    },
    { name: 'anything else', error: 'a string', kind: 'garbage' },
  ])('$name → $kind', ({ error, kind }) => {
    expect(failureKindOf(error)).toBe(kind);
  });
});

describe('createProbe with the real exec and a fake hdc tool', () => {
  let dir: ReturnType<typeof tempDir>;
  let tool: FakeTool;
  beforeAll(() => {
    dir = tempDir('npu-fault-probe-');
    tool = createFakeTool(dir.path, 'hdc');
  });
  afterAll(() => dir.remove());

  const payloadJson = JSON.stringify(twoGpuPayload(44));
  const hdc = (clock: Clock): Collector =>
    createHdcCollector({ command: tool.path, args: ['health', '-j'] }, { exec: createExecTool(), clock });

  it('reads, then on garbage output, invalid JSON values and a non-zero exit resends the cache, counting each kind', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const probe = createProbe(
      hdc(clock),
      { ...OPTIONS, retries: 0 },
      { clock, log: memoryLogger().log, registry },
    );
    await clock.advance(OPTIONS.warmupMs);
    tool.respondAll({ stdout: payloadJson });
    expect((await probe.sample(never()))?.payload).toEqual(twoGpuPayload(44));
    tool.respondAll({ stdout: '\u0007Segmentation fault (core dumped)\n' });
    expect((await probe.sample(never()))?.cached).toBe(true);
    tool.respondAll({ stdout: '{"family":"910B","npus":[{"npu":0,"temp_c":"hot"}]}' });
    expect((await probe.sample(never()))?.cached).toBe(true);
    tool.respondAll({ stderr: 'hdc: driver not loaded\n', exitCode: 2 });
    expect((await probe.sample(never()))?.cached).toBe(true);
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'garbage' })).toBe(2);
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'exit' })).toBe(1);
  });

  it('kills a tool that printed part of its output and stalled, with its child, at the deadline', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const probe = createProbe(
      hdc(clock),
      { ...OPTIONS, retries: 0, warmupMs: 0 },
      { clock, log: memoryLogger().log, registry },
    );
    tool.respondAll({ stdout: payloadJson.slice(0, 20), hang: true });
    const result = probe.sample(never());
    await waitFor(() => tool.pids() !== null, 'the tool is running');
    const [toolPid, child] = tool.pids() ?? [0, 0];
    await clock.advance(OPTIONS.timeoutMs);
    await expect(result).resolves.toEqual(liveness());
    await waitFor(
      () => isProcessGone(toolPid) && isProcessGone(child),
      'the tool and its child are gone',
      2000,
    );
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'timeout' })).toBe(1);
  });

  it('times out on real timers too (the system clock)', async () => {
    const registry = new Registry();
    const probe = createProbe(
      hdc(systemClock),
      { timeoutMs: 150, retries: 1, cacheTtlMs: 0, warmupMs: 0 },
      {
        clock: systemClock,
        log: memoryLogger().log,
        registry,
      },
    );
    tool.respondAll({ stdout: '{"family":', hang: true });
    const started = performance.now();
    await expect(probe.sample(never())).resolves.toEqual(liveness());
    expect(performance.now() - started).toBeLessThan(2000);
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'timeout' })).toBe(2);
  });

  it('counts a missing tool as spawn', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const collector = createHdcCollector(
      { command: `${dir.path}/not-installed`, args: [] },
      { exec: createExecTool(), clock },
    );
    const probe = createProbe(
      collector,
      { ...OPTIONS, retries: 0, warmupMs: 0 },
      { clock, log: memoryLogger().log, registry },
    );
    await expect(probe.sample(never())).resolves.toEqual(liveness());
    expect(await metric(registry, 'npu_fault_agent_collector_failures_total', { kind: 'spawn' })).toBe(1);
  });
});

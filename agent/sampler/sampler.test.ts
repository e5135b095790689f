import { describe, expect, it } from '@jest/globals';
import { snapshotSchema, type Payload, type Snapshot } from '../../contracts/index.js';
import { gpuSnapshot, npuSnapshot } from '../../core/engine/testing.js';
import { FakeClock, createLogger, createRegistry } from '../../platform/index.js';
import type { Probe, ProbeSample } from '../probe/index.js';
import { createSampler, type SamplerDeps } from './sampler.js';

const log = createLogger({ level: 'silent', component: 'test' });
const gpuPayload = (): Payload =>
  // Bus ids 0000:10:00.0 and 0000:11:00.0 (core/engine/testing.ts).
  gpuSnapshot({ seq: 1, t: 0 }, [{ index: 0 }, { index: 1 }]).payload;

/** A probe whose answers the test hands out one at a time. */
function scriptedProbe(
  clock: FakeClock,
): Probe & { calls: number; answerBy: (number | undefined)[]; answer: (s: ProbeSample | null) => void } {
  let waiting: ((s: ProbeSample | null) => void) | null = null;
  const queued: (ProbeSample | null)[] = [];
  const probe = {
    calls: 0,
    answerBy: [] as (number | undefined)[],
    sample(_signal: AbortSignal, answerBy?: number): Promise<ProbeSample | null> {
      probe.calls++;
      probe.answerBy.push(answerBy);
      const next = queued.shift();
      if (next !== undefined) return Promise.resolve(next);
      return new Promise((resolve) => (waiting = resolve));
    },
    status: () => ({ ok: true, error: null, failingSince: null, lastSuccessAt: null }),
    answer(sample: ProbeSample | null): void {
      if (waiting) {
        const resolve = waiting;
        waiting = null;
        resolve(sample);
      } else queued.push(sample);
    },
  };
  void clock;
  return probe;
}

function setup(overrides: Partial<SamplerDeps> = {}) {
  const clock = new FakeClock(Date.parse('2026-12-01T00:00:00Z'));
  const probe = scriptedProbe(clock);
  const sent: Snapshot[] = [];
  const abort = new AbortController();
  const sampler = createSampler(
    {
      node: 'gpu-node-1',
      collector: 'nvidia-smi',
      probe,
      enqueue: (s) => sent.push(s),
      clock,
      log,
      registry: createRegistry('agent'),
      random: () => 0.5,
      bootId: 'boot-a',
      ...overrides,
    },
    { intervalMs: 1000, jitterMs: 100 },
  );
  const running = sampler.start(abort.signal);
  return { clock, probe, sent, sampler, abort, running };
}

describe('sampler', () => {
  it('queues one valid snapshot per sample, seq counting up under one boot id', async () => {
    const { clock, probe, sent, abort, running } = setup();
    for (let i = 0; i < 3; i++) {
      probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
      await clock.advance(1000);
    }
    expect(sent.map((s) => s.seq)).toEqual([1, 2, 3]);
    for (const snapshot of sent) {
      expect(snapshotSchema.parse(snapshot)).toEqual(snapshot);
      expect(snapshot).toMatchObject({ node: 'gpu-node-1', boot_id: 'boot-a', collector: 'nvidia-smi' });
    }
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('keeps a cached sample’s original time and marks it', async () => {
    const { clock, probe, sent, abort, running } = setup();
    const readAt = clock.now() - 7000;
    probe.answer({ payload: gpuPayload(), cached: true, collectedAt: readAt });
    await clock.advance(0);
    expect(sent[0]).toMatchObject({ cached: true, collected_at: new Date(readAt).toISOString() });
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('gives the probe until 1.5 s after the last snapshot sent to answer (keepAliveMs)', async () => {
    const { clock, probe, abort, running } = setup();
    const start = clock.monotonic();
    await clock.advance(0);
    expect(probe.answerBy).toEqual([start + 1500]); // nothing sent yet: from the start
    await clock.advance(700); // a slow tool: its sample comes 700 ms into the tick
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(300); // the next tick, 1 s after the last began
    expect(probe.answerBy).toEqual([start + 1500, start + 700 + 1500]);
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('does not complete a cached sample from the inventory, and keeps kernel events for a fresh one', async () => {
    const completed: Payload[] = [];
    const { clock, probe, sent, sampler, abort, running } = setup({
      complete: (payload) => (completed.push(payload), payload),
    });
    sampler.event({
      kind: 'xid',
      busId: '0000:10:00.0',
      xid: 79,
      at: new Date(clock.now()).toISOString(),
      line: 'x',
    });
    probe.answer({
      payload: { family: 'nvidia', gpus: [] },
      cached: true,
      collectedAt: clock.now(),
      failure: 'x',
    });
    await clock.advance(0);
    expect(sent[0]).toMatchObject({ cached: true, payload: { family: 'nvidia', gpus: [] } });
    expect(completed).toHaveLength(0);
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(1000);
    const fresh = sent.at(-1);
    expect(fresh?.cached).toBe(false);
    expect(
      fresh?.payload.family === 'nvidia' ? fresh.payload.gpus[0]?.xid_events.map((e) => e.xid) : [],
    ).toEqual([79]);
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('marks an event snapshot stale_readings while the tool fails, and not once it answers again', async () => {
    const { clock, probe, sent, sampler, abort, running } = setup();
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(1000);
    probe.answer({ payload: gpuPayload(), cached: true, collectedAt: clock.now() - 1000, failure: 'hang' });
    await clock.advance(0);
    const xid = (n: number) => ({
      kind: 'xid' as const,
      busId: '0000:10:00.0',
      xid: n,
      at: new Date(clock.now()).toISOString(),
      line: 'x',
    });
    sampler.event(xid(79));
    expect(sent.at(-1)).toMatchObject({ cached: false, stale_readings: true });
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(1000);
    await clock.advance(100);
    sampler.event(xid(48));
    expect(sent.at(-1)?.cached).toBe(false);
    expect(sent.at(-1)).not.toHaveProperty('stale_readings');
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('queues nothing when the probe has no sample, and nothing while muted', async () => {
    let muted = false;
    const { clock, probe, sent, abort, running } = setup({ muted: () => muted });
    probe.answer(null);
    await clock.advance(1000);
    expect(sent).toHaveLength(0);
    muted = true;
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(1000);
    expect(sent).toHaveLength(0);
    muted = false;
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(0);
    expect(sent).toHaveLength(1);
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('samples about once per interval, jittered within the bound', async () => {
    const draws = [0, 1, 0.5];
    const { clock, probe, abort, running } = setup({ random: () => draws.shift() ?? 0.5 });
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(0);
    expect(probe.calls).toBe(1);
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    // First draw 0: the next sample is due 900 ms later (interval − jitter).
    await clock.advance(899);
    expect(probe.calls).toBe(1);
    await clock.advance(1);
    expect(probe.calls).toBe(2);
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    // Second draw 1: 1,100 ms.
    await clock.advance(1099);
    expect(probe.calls).toBe(2);
    await clock.advance(1);
    expect(probe.calls).toBe(3);
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('sends an XID at once on the last reading, then samples out of cycle', async () => {
    const { clock, probe, sent, sampler, abort, running } = setup();
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(10);
    expect(sent).toHaveLength(1);
    expect(probe.calls).toBe(1);
    sampler.event({
      kind: 'xid',
      busId: '00000000:11:00.0',
      xid: 79,
      at: '2026-12-01T00:00:00.010Z',
      line: 'NVRM: Xid (PCI:0000:11:00): 79, GPU has fallen off the bus.',
    });
    // Queued synchronously, before any timer or the next sample.
    expect(sent).toHaveLength(2);
    const event = sent[1]!;
    expect(event.seq).toBe(2);
    expect(event.cached).toBe(false);
    const gpus = event.payload.family === 'nvidia' ? event.payload.gpus : [];
    expect(gpus[1]?.xid_events).toEqual([{ xid: 79, at: '2026-12-01T00:00:00.010Z' }]);
    expect(gpus[0]?.xid_events).toEqual([]);
    // The out-of-cycle sample starts without waiting for the interval.
    await clock.advance(0);
    expect(probe.calls).toBe(2);
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('turns an XID storm into one snapshot per coalescing window, the first at once', async () => {
    const { clock, probe, sent, sampler, abort, running } = setup();
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(10);
    const xid = (n: number, gpu: number) => ({
      kind: 'xid' as const,
      busId: `0000:1${gpu}:00.0`,
      xid: 13,
      at: `2026-12-01T00:00:00.${String(n).padStart(3, '0')}Z`,
      line: 'NVRM: Xid 13',
    });
    sampler.event(xid(1, 0));
    expect(sent).toHaveLength(2);
    for (let n = 2; n <= 40; n++) sampler.event(xid(n, n % 2));
    expect(sent).toHaveLength(2);
    await clock.advance(20);
    expect(sent).toHaveLength(3);
    const gpus = sent[2]?.payload.family === 'nvidia' ? sent[2].payload.gpus : [];
    expect(gpus.map((g) => g.xid_events.length)).toEqual([20, 19]);
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('carries an event that came before any reading on the first snapshot', async () => {
    const { clock, probe, sent, sampler, abort, running } = setup();
    sampler.event({ kind: 'xid', busId: '0000:10:00.0', xid: 48, at: '2026-12-01T00:00:00.000Z', line: 'x' });
    expect(sent).toHaveLength(0);
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(0);
    const gpus = sent[0]?.payload.family === 'nvidia' ? sent[0].payload.gpus : [];
    expect(gpus[0]?.xid_events).toEqual([{ xid: 48, at: '2026-12-01T00:00:00.000Z' }]);
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('completes and decorates every payload before it is sent', async () => {
    const npu = npuSnapshot({ seq: 1, t: 0 }, [{ npu: 0 }]).payload;
    const { clock, probe, sent, abort, running } = setup({
      complete: (p) =>
        p.family === '910B' ? { ...p, npus: [...p.npus, { ...p.npus[0]!, npu: 1, present: false }] } : p,
    });
    probe.answer({ payload: npu, cached: false, collectedAt: clock.now() });
    await clock.advance(0);
    const npus = sent[0]?.payload.family === '910B' ? sent[0].payload.npus : [];
    expect(npus.map((n) => [n.npu, n.present])).toEqual([
      [0, true],
      [1, false],
    ]);
    abort.abort();
    probe.answer(null);
    await running;
  });

  it('stops promptly on abort, even while waiting for the next tick', async () => {
    const { clock, probe, abort, running } = setup();
    probe.answer({ payload: gpuPayload(), cached: false, collectedAt: clock.now() });
    await clock.advance(0);
    abort.abort();
    await running;
    expect(clock.pending).toBe(0);
  });
});

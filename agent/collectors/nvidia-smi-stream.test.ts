import { describe, expect, it } from '@jest/globals';
import { DEFAULT_QUERY_FIELDS } from '../../core/parsers/index.js';
import { FakeClock, createRegistry, type Registry } from '../../platform/index.js';
import { fakeStreamTool, memoryLogger } from '../probe/testing.js';
import { NvidiaSmiLoop } from './nvidia-smi-stream.js';
import { nvidiaSmiArgs } from './nvidia-smi.js';
import { gpuRowValues, nvidiaQueryRow } from './testing.js';

const fields = DEFAULT_QUERY_FIELDS;
const never = (): AbortSignal => new AbortController().signal;
/** The rows of GPUs `indexes` on a node of `total` GPUs, each a line without its `\n`. */
const rows = (total: number, ...indexes: number[]): string[] =>
  indexes.map((i) => nvidiaQueryRow(fields, gpuRowValues(i, { count: String(total) })));

function setup(options: { periodMs?: number; cooldownMs?: number } = {}): {
  loop: NvidiaSmiLoop;
  clock: FakeClock;
  stream: ReturnType<typeof fakeStreamTool>;
  registry: Registry;
  lines: Array<Record<string, unknown>>;
} {
  const clock = new FakeClock();
  const stream = fakeStreamTool();
  const registry = createRegistry('agent');
  const { log, lines } = memoryLogger();
  const loop = new NvidiaSmiLoop(
    'nvidia-smi',
    nvidiaSmiArgs(fields),
    fields.length,
    { periodMs: options.periodMs ?? 1000, cooldownMs: options.cooldownMs ?? 60_000 },
    { stream, clock, log, registry },
  );
  return { loop, clock, stream, registry, lines };
}

async function metric(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === `npu_fault_agent_${name}`);
  const value = (
    found?.values as Array<{ value: number; labels: Record<string, unknown> }> | undefined
  )?.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x));
  return value?.value ?? Number.NaN;
}

describe('NvidiaSmiLoop', () => {
  it('starts nvidia-smi once in loop mode at the sampling period and hands out each complete period', async () => {
    const { loop, clock, stream, registry } = setup({ periodMs: 1000 });
    const first = loop.next(never());
    expect(stream.streams).toHaveLength(1);
    expect(stream.streams[0]!.args).toEqual([...nvidiaSmiArgs(fields), '-lms', '1000']);
    stream.streams[0]!.print(...rows(3, 0, 1));
    await clock.advance(7);
    stream.streams[0]!.print(...rows(3, 2));
    const sample = await first;
    expect(sample?.text).toBe(`${rows(3, 0, 1, 2).join('\n')}\n`);
    // Read when its last row arrived, not when it was asked for.
    expect(sample?.collectedAt).toBe(Date.UTC(2026, 0, 1) + 7);
    expect(await metric(registry, 'collector_stream_up')).toBe(1);

    // The next period, printed before anyone asks, is taken at once while it is fresh.
    await clock.advance(1000);
    stream.streams[0]!.print(...rows(3, 0, 1, 2));
    await clock.advance(400);
    await expect(loop.next(never())).resolves.toMatchObject({ collectedAt: Date.UTC(2026, 0, 1) + 1007 });
    expect(stream.streams).toHaveLength(1);
  });

  it('does not hand out a period older than one period: the call waits for the next', async () => {
    const { loop, clock, stream } = setup({ periodMs: 1000 });
    const first = loop.next(never());
    stream.streams[0]!.print(...rows(1, 0));
    await first;
    stream.streams[0]!.print(...rows(1, 0));
    await clock.advance(1001);
    let settled = false;
    const next = loop.next(never()).then((s) => {
      settled = true;
      return s;
    });
    await clock.advance(0);
    expect(settled).toBe(false);
    stream.streams[0]!.print(...rows(1, 0));
    await expect(next).resolves.toMatchObject({ collectedAt: Date.UTC(2026, 0, 1) + 1001 });
  });

  it.each([
    [
      'a stderr line',
      (s: ReturnType<typeof setup>) => s.stream.streams[0]!.handlers.onStderr('GPU is lost'),
      'stderr',
    ],
    [
      'a line that is not a row',
      (s: ReturnType<typeof setup>) =>
        s.stream.streams[0]!.print('Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost'),
      'unexpected-line',
    ],
    [
      'a period cut short (a GPU no longer listed)',
      (s: ReturnType<typeof setup>) => s.stream.streams[0]!.print(...rows(3, 0, 1), ...rows(3, 0)),
      'unexpected-line',
    ],
    [
      'the tool ending',
      (s: ReturnType<typeof setup>) => s.stream.streams[0]!.handlers.onEnd('nvidia-smi exited with code 15'),
      'ended',
    ],
  ] as const)(
    'gives the loop up on %s: the waiting call gets null, one-shot until the cooldown, then a new loop',
    async (_, misbehave, reason) => {
      const s = setup({ cooldownMs: 60_000 });
      const waiting = s.loop.next(never());
      misbehave(s);
      await expect(waiting).resolves.toBeNull();
      expect(s.stream.streams[0]!.stopped).toBe(true);
      expect(await metric(s.registry, 'collector_stream_failures_total', { reason })).toBe(1);
      expect(await metric(s.registry, 'collector_stream_up')).toBe(0);
      expect(
        s.lines.filter((l) => l.msg === 'nvidia-smi loop given up: one-shot runs until the cooldown passes'),
      ).toEqual([expect.objectContaining({ level: 'warn', reason })]);
      // Within the cooldown: null at once, nothing started.
      await s.clock.advance(59_999);
      await expect(s.loop.next(never())).resolves.toBeNull();
      expect(s.stream.streams).toHaveLength(1);
      // After it: a new loop, whose lines count; the old one's are ignored.
      await s.clock.advance(1);
      const again = s.loop.next(never());
      expect(s.stream.streams).toHaveLength(2);
      s.stream.streams[0]!.handlers.onLine(rows(1, 0)[0]!);
      s.stream.streams[1]!.print(...rows(1, 0));
      await expect(again).resolves.toMatchObject({ text: `${rows(1, 0)[0]}\n` });
    },
  );

  it('rejects a call whose signal aborts, leaving the loop running (the caller says whether it stalled)', async () => {
    const { loop, stream, registry } = setup();
    const controller = new AbortController();
    const waiting = loop.next(controller.signal);
    stream.streams[0]!.print(...rows(2, 0)); // half a period, then nothing
    controller.abort(new Error('shutting down'));
    await expect(waiting).rejects.toThrow('shutting down');
    expect(stream.streams[0]!.stopped).toBe(false);
    expect(await metric(registry, 'collector_stream_failures_total', { reason: 'stalled' })).toBe(0);
    await expect(loop.next(controller.signal)).rejects.toThrow('shutting down');
    loop.fail('stalled', 'no complete sample before the deadline');
    expect(stream.streams[0]!.stopped).toBe(true);
    expect(await metric(registry, 'collector_stream_failures_total', { reason: 'stalled' })).toBe(1);
  });

  it('warns once per failing spell, and says when the loop delivers again', async () => {
    const { loop, clock, stream, lines } = setup({ cooldownMs: 1000 });
    for (let i = 0; i < 3; i++) {
      const waiting = loop.next(never());
      stream.streams[i]!.handlers.onEnd('nvidia-smi exited with code 9');
      await waiting;
      await clock.advance(1000);
    }
    const waiting = loop.next(never());
    stream.streams[3]!.print(...rows(1, 0));
    await waiting;
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'nvidia-smi loop delivering samples')).toHaveLength(1);
  });

  it('close() stops the loop for good: a waiting call gets null and none starts again', async () => {
    const { loop, clock, stream } = setup();
    const waiting = loop.next(never());
    loop.close();
    await expect(waiting).resolves.toBeNull();
    expect(stream.streams[0]!.stopped).toBe(true);
    await clock.advance(3_600_000);
    await expect(loop.next(never())).resolves.toBeNull();
    expect(stream.streams).toHaveLength(1);
  });

  it('skips blank lines and keeps only the latest unread period (memory stays bounded)', async () => {
    const { loop, stream } = setup();
    const first = loop.next(never());
    stream.streams[0]!.print('', ...rows(1, 0));
    await first;
    const temperatures = [50, 60, 70];
    for (const t of temperatures)
      stream.streams[0]!.print(
        nvidiaQueryRow(fields, gpuRowValues(0, { count: '1', 'temperature.gpu': String(t) })),
      );
    const latest = await loop.next(never());
    expect(latest?.text).toContain(', 70, ');
  });
});

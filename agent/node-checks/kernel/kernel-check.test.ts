import { describe, expect, it } from '@jest/globals';
import { isPrintableText } from '../../../contracts/fields/index.js';
import { parseNodeKernelEvents } from '../../../core/parsers/index.js';
import { NODE_KERNEL_SAMPLES } from '../../../core/parsers/testing.js';
import type { NodeKernelEvent } from '../../events/index.js';
import { LogRecorder } from '../../events/testing.js';
import { createKernelCheck, kernelCheckConfigSchema, type KernelCheckConfig } from './index.js';
import { spanWords } from './kernel-check.js';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const signal = new AbortController().signal;

/** A node event read at `at` (epoch ms), with a detail saying what it is. */
function event(
  kind: NodeKernelEvent['kind'],
  subject: string,
  at: number,
  detail = `${kind} ${subject}`,
): NodeKernelEvent {
  return { kind, subject, detail, at: new Date(at).toISOString(), line: detail };
}

/** A kernel check with the defaults changed by `overrides`, and its log. */
function check(overrides: Record<string, unknown> = {}) {
  const config: KernelCheckConfig = kernelCheckConfigSchema.parse(overrides);
  const logs = new LogRecorder();
  return { check: createKernelCheck(config, { log: logs.log }), logs };
}

describe('kernelCheckConfigSchema', () => {
  it('has the documented defaults', () => {
    expect(kernelCheckConfigSchema.parse({})).toEqual({
      enabled: true,
      intervalMs: 1000,
      holdSeconds: {
        hungTask: 600,
        softLockup: 600,
        machineCheck: 3600,
        filesystemError: 3600,
        filesystemReadOnly: 3600,
      },
      oomKills: 5,
      oomWindowSeconds: 300,
    });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['an OOM threshold of 0', { oomKills: 0 }, 'oomKills'],
    ['a negative hold', { holdSeconds: { hungTask: -1 } }, 'holdSeconds.hungTask'],
    [
      'a read-only hold past a week',
      { holdSeconds: { filesystemReadOnly: 8 * 86400 } },
      'holdSeconds.filesystemReadOnly',
    ],
    ['an unknown field', { holdSeconds: { hungtask: 1 } }, 'holdSeconds'],
    ['a window of text', { oomWindowSeconds: '5m' }, 'oomWindowSeconds'],
  ])('refuses %s, naming the field', (_name, value, field) => {
    const result = kernelCheckConfigSchema.safeParse(value);
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => issue.path.join('.'))).toContain(field);
  });
});

describe('createKernelCheck: problems that hold after their last message', () => {
  it('says how many hung tasks in the hold and the last one, until the hold has passed since it', async () => {
    const { check: kernel } = check();
    for (const [i, pid] of [1234, 1235, 1236].entries())
      kernel.record(
        event(
          'hung-task',
          `python3:${pid}`,
          T0 + i * MINUTE,
          `task python3:${pid} blocked for more than 122 s`,
        ),
        T0 + i * MINUTE,
      );
    expect(kernel.name).toBe('kernel');
    expect(await kernel.run(T0 + 3 * MINUTE, signal)).toEqual([
      {
        reason: 'kernel-hung-task',
        message: '3 hung tasks in 10 min, last: task python3:1236 blocked for more than 122 s',
      },
    ]);
    // Just before the hold ends only the last one is within it; then nothing holds.
    const lastAt = T0 + 2 * MINUTE;
    expect(await kernel.run(lastAt + 10 * MINUTE - 1, signal)).toEqual([
      {
        reason: 'kernel-hung-task',
        message: '1 hung task in 10 min, last: task python3:1236 blocked for more than 122 s',
      },
    ]);
    expect(await kernel.run(lastAt + 10 * MINUTE, signal)).toEqual([]);
  });

  it('holds lockups 10 min, machine checks and filesystem errors 1 h, naming the filesystems', async () => {
    const { check: kernel } = check();
    kernel.record(event('soft-lockup', 'CPU#3', T0), T0);
    kernel.record(event('machine-check', 'CPU 1', T0), T0);
    kernel.record(event('fs-error', 'sdb1', T0), T0);
    kernel.record(event('fs-error', 'dm-4', T0 + 1000), T0 + 1000);
    kernel.record(event('fs-error', 'sdb1', T0 + 2000), T0 + 2000);
    const at = (minutes: number): Promise<string[]> =>
      kernel.run(T0 + minutes * MINUTE, signal).then((problems) => problems.map((p) => p.reason));
    expect(await at(5)).toEqual(['kernel-soft-lockup', 'kernel-machine-check', 'filesystem-error']);
    expect(await at(30)).toEqual(['kernel-machine-check', 'filesystem-error']);
    expect(await at(61)).toEqual([]);
    const [fs] = (await kernel.run(T0 + MINUTE, signal)).filter((p) => p.reason === 'filesystem-error');
    expect(fs?.message).toBe('3 filesystem errors in 1 h on sdb1, dm-4, last: fs-error sdb1');
  });

  it('takes the hold times of the config', async () => {
    const { check: kernel } = check({ holdSeconds: { softLockup: 90 } });
    kernel.record(event('soft-lockup', 'CPU#0', T0), T0);
    expect((await kernel.run(T0 + 89_000, signal))[0]?.message).toMatch(/^1 CPU lockup in 90 s, last: /);
    expect(await kernel.run(T0 + 90_000, signal)).toEqual([]);
  });

  it('dates a message by its line’s own time when it has one no later than now', async () => {
    const { check: kernel } = check();
    // A log replayed from its start: an hour-old hung task does not hold now.
    kernel.record(event('hung-task', 'a:1', T0 - 60 * MINUTE), T0);
    expect(await kernel.run(T0, signal)).toEqual([]);
    // A time in the future or none readable: when it was read.
    kernel.record(event('soft-lockup', 'CPU#1', T0 + 60 * MINUTE), T0);
    kernel.record({ ...event('machine-check', 'CPU 2', T0), at: 'garbage' }, T0);
    expect((await kernel.run(T0 + 9 * MINUTE, signal)).map((p) => p.reason)).toEqual([
      'kernel-soft-lockup',
      'kernel-machine-check',
    ]);
    expect((await kernel.run(T0 + 10 * MINUTE, signal)).map((p) => p.reason)).toEqual([
      'kernel-machine-check',
    ]);
  });
});

describe('createKernelCheck: read-only remounts', () => {
  it('are a filesystem-error (the device may be any, a tenant volume too), held an hour by default, naming each filesystem once, the latest first', async () => {
    const { check: kernel } = check();
    kernel.record(event('fs-readonly', 'sdd1', T0), T0);
    kernel.record(event('fs-readonly', 'dm-4', T0 + 1000), T0 + 1000);
    kernel.record(event('fs-readonly', 'sdd1', T0 + 2000), T0 + 2000);
    expect(await kernel.run(T0 + 59 * MINUTE, signal)).toEqual([
      {
        reason: 'filesystem-error',
        message: 'remounted read-only after errors: sdd1, dm-4 (last at 2026-01-01T00:00:02.000Z)',
      },
    ]);
    expect(await kernel.run(T0 + 61 * MINUTE, signal)).toEqual([]);
  });

  it('hold for holdSeconds.filesystemReadOnly when it is set', async () => {
    const { check: kernel } = check({ holdSeconds: { filesystemReadOnly: 60 } });
    kernel.record(event('fs-readonly', 'sdd1', T0), T0);
    kernel.record(event('fs-readonly', 'dm-4', T0 + 30_000), T0 + 30_000);
    expect((await kernel.run(T0 + 59_000, signal))[0]?.message).toMatch(/: dm-4, sdd1 /);
    expect((await kernel.run(T0 + 61_000, signal))[0]?.message).toMatch(/: dm-4 \(/);
    expect(await kernel.run(T0 + 90_000, signal)).toEqual([]);
  });

  it('name at most four filesystems and count the rest', async () => {
    const { check: kernel } = check();
    for (const [i, device] of ['sda1', 'sdb1', 'sdc1', 'sdd1', 'sde1', 'sdf1'].entries())
      kernel.record(event('fs-readonly', device, T0 + i), T0 + i);
    expect((await kernel.run(T0 + 10, signal))[0]?.message).toMatch(/: sdf1, sde1, sdd1, sdc1 \+2 more \(/);
  });
});

describe('createKernelCheck: OOM storms', () => {
  it('raises a storm at oomKills node OOM kills within the window, and ends it when fewer are', async () => {
    const { check: kernel } = check();
    const kill = (seconds: number, pid: number): void =>
      kernel.record(
        event(
          'oom-kill',
          `python3:${pid}`,
          T0 + seconds * 1000,
          `node out of memory: killed process ${pid} (python3)`,
        ),
        T0 + seconds * 1000,
      );
    for (const [i, seconds] of [0, 30, 60, 90].entries()) kill(seconds, 100 + i);
    expect(await kernel.run(T0 + 100_000, signal)).toEqual([]);
    kill(120, 104);
    expect(await kernel.run(T0 + 121_000, signal)).toEqual([
      {
        reason: 'oom-kill-storm',
        message:
          '5 node OOM kills in 5 min (a storm from 5), last: node out of memory: killed process 104 (python3)',
      },
    ]);
    // The first kill leaves the 5-minute window at 300 s: four remain.
    expect(await kernel.run(T0 + 299_000, signal)).toHaveLength(1);
    expect(await kernel.run(T0 + 300_000, signal)).toEqual([]);
  });

  it('does not count a cgroup reaching its own limit, however often', async () => {
    const { check: kernel } = check();
    for (let i = 0; i < 500; i++) kernel.record(event('cgroup-oom-kill', `stress:${i}`, T0 + i), T0 + i);
    expect(await kernel.run(T0 + 1000, signal)).toEqual([]);
  });

  it('keeps bounded memory under a flood and says so in the count', async () => {
    const { check: kernel } = check({ oomKills: 10 });
    for (let i = 0; i < 20_000; i++) kernel.record(event('oom-kill', `x:${i}`, T0 + i), T0 + i);
    for (let i = 0; i < 20_000; i++) kernel.record(event('hung-task', `x:${i}`, T0 + i), T0 + i);
    const problems = await kernel.run(T0 + 20_000, signal);
    expect(problems.map((p) => p.message.split(',')[0])).toEqual([
      '64+ hung tasks in 10 min',
      '64+ node OOM kills in 5 min (a storm from 10)',
    ]);
  });
});

describe('createKernelCheck: messages, logs and the switch', () => {
  it('bounds a message to 256 characters', async () => {
    const { check: kernel } = check();
    kernel.record(event('machine-check', 'CPU 1', T0, 'x'.repeat(1000)), T0);
    const [problem] = await kernel.run(T0, signal);
    expect(problem?.message.length).toBe(256);
    expect(problem?.message.endsWith('…')).toBe(true);
  });

  it('logs once when a problem starts to hold and once when it stops', async () => {
    const { check: kernel, logs } = check();
    kernel.record(event('soft-lockup', 'CPU#1', T0), T0);
    await kernel.run(T0, signal);
    kernel.record(event('soft-lockup', 'CPU#2', T0 + MINUTE), T0 + MINUTE);
    await kernel.run(T0 + MINUTE, signal);
    await kernel.run(T0 + 2 * MINUTE, signal);
    await kernel.run(T0 + 20 * MINUTE, signal);
    await kernel.run(T0 + 21 * MINUTE, signal);
    expect(logs.messages('kernel node problem holds').map((line) => line.reason)).toEqual([
      'kernel-soft-lockup',
    ]);
    expect(logs.messages('kernel node problem no longer holds').map((line) => line.reason)).toEqual([
      'kernel-soft-lockup',
    ]);
  });

  it('does nothing when disabled', async () => {
    const { check: kernel } = check({ enabled: false });
    kernel.record(event('machine-check', 'CPU 1', T0), T0);
    expect(await kernel.run(T0, signal)).toEqual([]);
  });

  it('spells hold times as a person would', () => {
    expect([600, 3600, 7200, 90, 300].map(spanWords)).toEqual(['10 min', '1 h', '2 h', '90 s', '5 min']);
  });
});

describe('createKernelCheck on the recorded kernel lines', () => {
  it('raises the problems the recorded lines report, and no storm from three node OOM kills', async () => {
    const { check: kernel } = check();
    const log = NODE_KERNEL_SAMPLES.map((sample) => sample.line).join('\n');
    for (const found of parseNodeKernelEvents(log))
      kernel.record({ ...found, at: found.at ?? new Date(T0).toISOString() }, T0);
    const problems = await kernel.run(T0, signal);
    expect(problems.map((p) => p.reason)).toEqual([
      'kernel-hung-task',
      'kernel-soft-lockup',
      'kernel-machine-check',
      'filesystem-error',
      'filesystem-error',
    ]);
    expect(problems.find((p) => p.reason === 'kernel-hung-task')?.message).toBe(
      '4 hung tasks in 10 min, last: task Out of memory:4242 blocked for more than 122 s',
    );
    for (const problem of problems) expect(isPrintableText(problem.message)).toBe(true);
  });
});

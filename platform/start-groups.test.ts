import { describe, expect, it } from '@jest/globals';
import { FakeClock } from './clock.js';
import { createLogger, type Logger } from './logger.js';
import type { Runnable } from './runnable.js';
import { runGroups, type GroupsResult, type StartGroup } from './start-groups.js';

function memoryLog(): { log: Logger; messages: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', destination: { write: (l: string) => void lines.push(l) } });
  return { log, messages: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** Fakes that write what happens to them, in order, into one journal. */
function journal(): {
  events: string[];
  part: (name: string, options?: { stopping?: Promise<void>; fails?: Error }) => Runnable;
} {
  const events: string[] = [];
  const part = (name: string, options: { stopping?: Promise<void>; fails?: Error } = {}): Runnable => ({
    name,
    start: (signal) => {
      events.push(`start ${name}`);
      if (options.fails) return Promise.reject(options.fails);
      return new Promise<void>((resolve) => {
        const stop = (): void => {
          events.push(`stop ${name}`);
          void (options.stopping ?? Promise.resolve()).then(() => {
            events.push(`stopped ${name}`);
            resolve();
          });
        };
        if (signal.aborted) stop();
        else signal.addEventListener('abort', stop, { once: true });
      });
    },
  });
  return { events, part };
}

function states(result: GroupsResult): Record<string, string> {
  return Object.fromEntries(result.outcomes.map((o) => [o.name, o.state]));
}

/** Lets every pending continuation run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('runGroups', () => {
  it('starts the groups in order, each once the one before is ready, and stops them in reverse', async () => {
    const { log } = memoryLog();
    const { events, part } = journal();
    let synced!: () => void;
    const caches = new Promise<void>((resolve) => (synced = resolve));
    const controller = new AbortController();
    const running = runGroups(
      [
        { name: 'servers', runnables: [part('metrics'), part('api')] },
        { name: 'caches', runnables: [part('nodes')], ready: () => caches },
        { name: 'leaderOnly', runnables: [part('publisher')] },
      ],
      { signal: controller.signal, gracePeriodMs: 1000, log, clock: new FakeClock() },
    );
    await settle();
    expect(events).toEqual(['start metrics', 'start api', 'start nodes']);
    synced();
    await settle();
    expect(events.slice(3)).toEqual(['start publisher']);
    controller.abort(new Error('received SIGTERM'));
    const result = await running;
    expect(events.slice(4)).toEqual([
      'stop publisher',
      'stopped publisher',
      'stop nodes',
      'stopped nodes',
      'stop metrics',
      'stop api',
      'stopped metrics',
      'stopped api',
    ]);
    expect(result).toEqual({
      trigger: 'signal',
      outcomes: ['metrics', 'api', 'nodes', 'publisher'].map((name) => ({ name, state: 'stopped' })),
      notStopped: [],
      exitCode: 0,
    });
  });

  it('tells a group to stop only once every later group has stopped', async () => {
    const { log } = memoryLog();
    const { events, part } = journal();
    let leaderStopped!: () => void;
    const controller = new AbortController();
    const running = runGroups(
      [
        { name: 'caches', runnables: [part('nodes')] },
        {
          name: 'leaderOnly',
          runnables: [part('publisher', { stopping: new Promise((r) => (leaderStopped = r)) })],
        },
      ],
      { signal: controller.signal, gracePeriodMs: 1000, log, clock: new FakeClock() },
    );
    await settle();
    controller.abort();
    await settle();
    expect(events).toEqual(['start nodes', 'start publisher', 'stop publisher']);
    leaderStopped();
    await running;
    expect(events.slice(3)).toEqual(['stopped publisher', 'stop nodes', 'stopped nodes']);
  });

  it('a failing start stops the groups already started, in reverse, and starts no later one: exit 1', async () => {
    const { log, messages } = memoryLog();
    const { events, part } = journal();
    const boom = new Error('EADDRINUSE');
    let synced!: () => void;
    const result = runGroups(
      [
        { name: 'servers', runnables: [part('metrics')] },
        {
          name: 'caches',
          runnables: [part('nodes'), part('bad', { fails: boom })],
          ready: () => new Promise((r) => (synced = r)),
        },
        { name: 'leaderOnly', runnables: [part('publisher')] },
      ],
      { signal: new AbortController().signal, gracePeriodMs: 1000, log, clock: new FakeClock() },
    );
    const done = await result;
    synced();
    expect(events).toEqual([
      'start metrics',
      'start nodes',
      'start bad',
      'stop nodes',
      'stopped nodes',
      'stop metrics',
      'stopped metrics',
    ]);
    expect(states(done)).toEqual({
      metrics: 'stopped',
      nodes: 'stopped',
      bad: 'failed',
      publisher: 'not-started',
    });
    expect([done.trigger, done.exitCode]).toEqual(['failure', 1]);
    expect(messages().find((m) => m.msg === 'runnable failed; stopping')).toMatchObject({ runnable: 'bad' });
  });

  it('a group that cannot become ready stops the rest: exit 1', async () => {
    const { log, messages } = memoryLog();
    const { events, part } = journal();
    const result = await runGroups(
      [
        { name: 'caches', runnables: [part('nodes')], ready: () => Promise.reject(new Error('no RBAC')) },
        { name: 'leaderOnly', runnables: [part('publisher')] },
      ],
      { signal: new AbortController().signal, gracePeriodMs: 1000, log, clock: new FakeClock() },
    );
    expect(events).toEqual(['start nodes', 'stop nodes', 'stopped nodes']);
    expect(states(result)).toEqual({ nodes: 'stopped', publisher: 'not-started' });
    expect([result.trigger, result.exitCode]).toEqual(['failure', 1]);
    expect(messages().find((m) => m.msg === 'group did not become ready; stopping')).toMatchObject({
      group: 'caches',
    });
  });

  it('a runnable that returns on its own stops everything: exit 1', async () => {
    const { log } = memoryLog();
    const { part } = journal();
    const result = await runGroups(
      [
        { name: 'servers', runnables: [part('metrics')] },
        { name: 'caches', runnables: [{ name: 'watch', start: () => Promise.resolve() }] },
      ],
      { signal: new AbortController().signal, gracePeriodMs: 1000, log, clock: new FakeClock() },
    );
    expect([result.trigger, result.exitCode]).toEqual(['exit', 1]);
    expect(states(result)).toEqual({ metrics: 'stopped', watch: 'exited' });
  });

  it('shares one grace period: past it, the earlier groups are told at once and the stuck one is named', async () => {
    const { log, messages } = memoryLog();
    const { events, part } = journal();
    const clock = new FakeClock();
    const controller = new AbortController();
    let settled = false;
    const running = runGroups(
      [
        { name: 'servers', runnables: [part('metrics')] },
        { name: 'leaderOnly', runnables: [part('stuck', { stopping: new Promise(() => undefined) })] },
      ],
      { signal: controller.signal, gracePeriodMs: 5000, log, clock },
    ).finally(() => (settled = true));
    await settle();
    controller.abort();
    await clock.advance(4999);
    expect([settled, events.includes('stop metrics')]).toEqual([false, false]);
    await clock.advance(1);
    const result = await running;
    expect(events).toContain('stop metrics');
    // Told only when the time was up: it had no time left either.
    expect(states(result)).toEqual({ metrics: 'timed-out', stuck: 'timed-out' });
    expect([result.notStopped, result.exitCode]).toEqual([['metrics', 'stuck'], 1]);
    expect(messages().find((m) => m.msg === 'runnables did not stop within the grace period')).toMatchObject({
      notStopped: ['metrics', 'stuck'],
    });
    expect(clock.pending).toBe(0);
  });

  it('stops while a group is still waiting to be ready, without starting the next', async () => {
    const { log } = memoryLog();
    const { events, part } = journal();
    const controller = new AbortController();
    const running = runGroups(
      [
        { name: 'caches', runnables: [part('nodes')], ready: () => new Promise(() => undefined) },
        { name: 'leaderOnly', runnables: [part('publisher')] },
      ],
      { signal: controller.signal, gracePeriodMs: 1000, log, clock: new FakeClock() },
    );
    await settle();
    controller.abort();
    const result = await running;
    expect(events).toEqual(['start nodes', 'stop nodes', 'stopped nodes']);
    expect([states(result), result.exitCode]).toEqual([{ nodes: 'stopped', publisher: 'not-started' }, 0]);
  });

  it('starts nothing when the signal has already aborted', async () => {
    const { log } = memoryLog();
    const { events, part } = journal();
    const result = await runGroups([{ name: 'servers', runnables: [part('metrics')] }], {
      signal: AbortSignal.abort(),
      gracePeriodMs: 10,
      log,
      clock: new FakeClock(),
    });
    expect(events).toEqual([]);
    expect([states(result), result.exitCode]).toEqual([{ metrics: 'not-started' }, 0]);
  });

  it.each([
    [
      'two runnables of one name',
      [{ name: 'a', runnables: [{ name: 'x' }, { name: 'x' }] }],
      'two runnables are named "x"',
    ],
    [
      'two groups of one name',
      [
        { name: 'a', runnables: [{ name: 'x' }] },
        { name: 'a', runnables: [{ name: 'y' }] },
      ],
      'two groups are named "a"',
    ],
    ['nothing to run', [{ name: 'a', runnables: [] }], 'nothing to run'],
  ])('refuses %s', async (_name, shapes, message) => {
    const { log } = memoryLog();
    const groups: StartGroup[] = shapes.map((g) => ({
      name: g.name,
      runnables: g.runnables.map(({ name }) => ({ name, start: () => Promise.resolve() })),
    }));
    await expect(
      runGroups(groups, { signal: new AbortController().signal, gracePeriodMs: 1, log }),
    ).rejects.toThrow(message);
  });
});

import { describe, expect, it } from '@jest/globals';
import type { Counter } from 'prom-client';
import { FakeClock, K8sApiError, Registry, createLogger, type Logger } from '../../index.js';
import { FakeListWatchClient } from './fake-list-watch-client.js';
import type { ListWatchClient, RawObject } from './list-watch-client.js';
import { createWatchLoop, type WatchLoopOptions } from './watch-loop.js';

/** The value cached per item: only `spec.value` (other fields are dropped). */
interface Item {
  value: string;
}

const item = (name: string, value: string, extra: Record<string, unknown> = {}): RawObject => ({
  metadata: { name },
  spec: { value, ...extra },
});

function memoryLog(): { log: Logger; messages: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', destination: { write: (l: string) => void lines.push(l) } });
  return { log, messages: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

async function counterValue(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
): Promise<number> {
  const metric = registry.getSingleMetric(name) as Counter | undefined;
  if (!metric) return Number.NaN;
  const { values } = await metric.get();
  const found = values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return found?.value ?? 0;
}

const restarts = (registry: Registry, reason: string): Promise<number> =>
  counterValue(registry, 'npu_fault_controller_watch_restarts_total', { resource: 'items', reason });

function setup(options: Partial<WatchLoopOptions<Item>> & { random?: () => number } = {}) {
  const clock = new FakeClock();
  const client = new FakeListWatchClient({ description: 'items', pageSize: 2 });
  const registry = new Registry();
  const { log, messages } = memoryLog();
  const events: string[] = [];
  const { random, ...loopOptions } = options;
  const loop = createWatchLoop<Item>(
    { client, clock, log, registry, random: random ?? (() => 0.5) },
    {
      resource: 'items',
      transform: (raw) => {
        const value = (raw.spec as { value?: unknown } | undefined)?.value;
        return typeof value === 'string' ? { value } : undefined;
      },
      handlers: {
        onAdd: (key, v) => events.push(`add ${key}=${v.value}`),
        onUpdate: (key, v, previous) => events.push(`update ${key}=${v.value} (was ${previous.value})`),
        onDelete: (key, previous) => events.push(`delete ${key} (was ${previous.value})`),
        onSynced: () => events.push('synced'),
      },
      ...loopOptions,
    },
  );
  const stopper = new AbortController();
  let running: Promise<void> | undefined;
  return {
    clock,
    client,
    registry,
    events,
    loop,
    messages,
    start(): Promise<void> {
      running = loop.start(stopper.signal);
      return running;
    },
    async stop(): Promise<void> {
      stopper.abort();
      await running;
    },
  };
}

describe('watch loop: list, then watch', () => {
  it('lists every page, reports each object and then synced, and watches from the list resourceVersion', async () => {
    const t = setup();
    for (const [name, value] of [
      ['a', '1'],
      ['b', '2'],
      ['c', '3'],
    ] as const)
      t.client.apply(item(name, value));
    const listedAt = t.client.resourceVersion;
    expect(t.loop.synced()).toBe(false);
    void t.start();
    const request = await t.client.waitForWatch(1);
    await t.loop.whenSynced();
    expect(t.events).toEqual(['add a=1', 'add b=2', 'add c=3', 'synced']);
    expect(request).toMatchObject({ resourceVersion: listedAt, allowWatchBookmarks: true });
    expect(t.loop.synced()).toBe(true);
    expect(t.loop.size).toBe(3);
    expect(t.loop.get('b')).toEqual({ value: '2' });
    expect([...t.loop.values()]).toEqual([{ value: '1' }, { value: '2' }, { value: '3' }]);
    await t.stop();
  });

  it('reports synced once for an empty collection', async () => {
    const t = setup();
    void t.start();
    await t.client.waitForWatch(1);
    expect(t.events).toEqual(['synced']);
    expect(t.loop.size).toBe(0);
    await t.stop();
  });

  it.each([
    { random: 0, timeoutSeconds: 300 },
    { random: 0.5, timeoutSeconds: 450 },
    { random: 0.9999, timeoutSeconds: 599 },
  ])('asks the server to end the watch after 300 × (1 + $random) s', async ({ random, timeoutSeconds }) => {
    const t = setup({ random: () => random });
    void t.start();
    expect((await t.client.waitForWatch(1)).timeoutSeconds).toBe(timeoutSeconds);
    await t.stop();
  });

  it('follows events: add, update with the previous value, delete; a change of an uncached field is no update', async () => {
    const t = setup();
    t.client.apply(item('a', '1'));
    void t.start();
    await t.client.waitForWatch(1);
    t.events.length = 0;
    t.client.apply(item('b', '2'));
    t.client.apply(item('a', '1b'));
    t.client.apply(item('a', '1b', { ignored: 'x' }));
    t.client.delete('b');
    expect(t.events).toEqual(['add b=2', 'update a=1b (was 1)', 'delete b (was 2)']);
    expect(t.loop.get('a')).toEqual({ value: '1b' });
    await t.stop();
  });

  it('drops a cached object the transform no longer keeps, reporting it deleted', async () => {
    const t = setup();
    t.client.apply(item('a', '1'));
    void t.start();
    await t.client.waitForWatch(1);
    t.client.apply({ metadata: { name: 'a' }, spec: {} });
    expect(t.events.at(-1)).toBe('delete a (was 1)');
    expect(t.loop.get('a')).toBeUndefined();
    await t.stop();
  });

  it('ignores an event of an unknown type, counting it as "other" (a bounded label)', async () => {
    const clock = new FakeClock();
    const registry = new Registry();
    const events: string[] = [];
    const client: ListWatchClient = {
      description: 'odd',
      list: () => Promise.resolve({ resourceVersion: '5' }),
      watch: async (_request, onEvent, signal) => {
        onEvent({ type: 'SURPRISE', object: { metadata: { name: 'a', resourceVersion: '6' } } });
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      },
    };
    const loop = createWatchLoop(
      { client, clock, log: memoryLog().log, registry },
      { resource: 'items', transform: () => 1, handlers: { onAdd: (key) => events.push(key) } },
    );
    const stop = new AbortController();
    const running = loop.start(stop.signal);
    await loop.whenSynced();
    await clock.advance(0);
    expect(events).toEqual([]);
    expect(
      await counterValue(registry, 'npu_fault_controller_watch_events_total', {
        resource: 'items',
        type: 'other',
      }),
    ).toBe(1);
    stop.abort();
    await running;
  });

  it('keys namespaced objects as namespace/name', async () => {
    const t = setup();
    t.client.apply({ metadata: { name: 'x', namespace: 'ns1' }, spec: { value: 'v' } });
    void t.start();
    await t.client.waitForWatch(1);
    expect(t.loop.get('ns1/x')).toEqual({ value: 'v' });
    await t.stop();
  });
});

describe('watch loop: restarts', () => {
  it('resumes from the last resourceVersion when the server ends a watch that delivered events', async () => {
    const t = setup();
    void t.start();
    await t.client.waitForWatch(1);
    t.client.apply(item('a', '1'));
    const last = t.client.resourceVersion;
    t.client.endWatches();
    const next = await t.client.waitForWatch(2);
    expect(next.resourceVersion).toBe(last);
    expect(t.client.listCalls).toBe(1);
    expect(await restarts(t.registry, 'ended')).toBe(1);
    // Writes while it was away are replayed from the history by the resumed watch.
    t.client.apply(item('b', '2'));
    expect(t.loop.get('b')).toEqual({ value: '2' });
    await t.stop();
  });

  it('backs off before resuming a watch that ended without delivering anything', async () => {
    const t = setup();
    void t.start();
    await t.client.waitForWatch(1);
    t.client.endWatches();
    // 1000 ms × (0.5 + 0.5 × 0.5)
    await t.clock.advance(749);
    expect(t.client.watchRequests).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.client.watchRequests).toHaveLength(2);
    expect(await restarts(t.registry, 'ended')).toBe(1);
    await t.stop();
  });

  it('restarts a watch that brings no event or bookmark for watchdogMs, from the same resourceVersion', async () => {
    const t = setup({ watchdogMs: 90_000 });
    t.client.apply(item('a', '1'));
    void t.start();
    const first = await t.client.waitForWatch(1);
    await t.clock.advance(89_999);
    expect(t.client.watchRequests).toHaveLength(1);
    await t.clock.advance(1);
    const second = await t.client.waitForWatch(2);
    expect(second.resourceVersion).toBe(first.resourceVersion);
    expect(t.client.openWatches).toBe(1);
    expect(await restarts(t.registry, 'watchdog')).toBe(1);
    expect(t.messages().some((m) => m.msg === 'no watch event or bookmark in time; watching again')).toBe(
      true,
    );
    // Events after the restart still arrive.
    t.client.apply(item('b', '2'));
    expect(t.loop.get('b')).toEqual({ value: '2' });
    await t.stop();
  });

  it('a bookmark keeps a quiet watch alive and moves its resourceVersion on', async () => {
    const t = setup({ watchdogMs: 90_000 });
    void t.start();
    await t.client.waitForWatch(1);
    await t.clock.advance(60_000);
    t.client.unseen(() => t.client.apply(item('elsewhere', 'x')));
    t.client.bookmark();
    const bookmarked = t.client.resourceVersion;
    await t.clock.advance(60_000);
    expect(t.client.watchRequests).toHaveLength(1);
    await t.clock.advance(30_000);
    expect((await t.client.waitForWatch(2)).resourceVersion).toBe(bookmarked);
    expect(await restarts(t.registry, 'watchdog')).toBe(1);
    await t.stop();
  });

  it("treats the client's own idle timeout as a watchdog restart", async () => {
    const t = setup();
    void t.start();
    await t.client.waitForWatch(1);
    t.client.breakWatches(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    await t.client.waitForWatch(2);
    expect(await restarts(t.registry, 'watchdog')).toBe(1);
    await t.stop();
  });

  it('re-lists after a 410 ERROR event and reports what changed meanwhile, deletions included', async () => {
    const t = setup();
    for (const [name, value] of [
      ['a', '1'],
      ['b', '2'],
      ['c', '3'],
    ] as const)
      t.client.apply(item(name, value));
    void t.start();
    await t.client.waitForWatch(1);
    t.events.length = 0;
    t.client.unseen(() => {
      t.client.delete('a');
      t.client.apply(item('b', '2b'));
      t.client.apply(item('d', '4'));
    });
    t.client.compact({ expireOpen: true });
    const afterList = t.client.resourceVersion;
    const next = await t.client.waitForWatch(2);
    expect(t.client.listCalls).toBe(2);
    expect(t.events).toEqual(['delete a (was 1)', 'update b=2b (was 2)', 'add d=4']);
    expect(next.resourceVersion).toBe(afterList);
    expect([...t.loop.entries()].sort()).toEqual([
      ['b', { value: '2b' }],
      ['c', { value: '3' }],
      ['d', { value: '4' }],
    ]);
    expect(await restarts(t.registry, 'gone')).toBe(1);
    expect(
      await counterValue(t.registry, 'npu_fault_controller_watch_events_total', {
        resource: 'items',
        type: 'error',
      }),
    ).toBe(1);
    await t.stop();
  });

  it('re-lists when a resumed watch starts too old (410 ERROR at start), and when the watch answers HTTP 410', async () => {
    const t = setup();
    t.client.apply(item('a', '1'));
    void t.start();
    await t.client.waitForWatch(1);
    t.client.apply(item('a', '1b'));
    t.client.breakWatches(new Error('connection reset'));
    t.client.unseen(() => t.client.delete('a'));
    t.client.compact();
    // Backoff for the reset (750 ms); the resumed watch gets 410, a second failure in a row:
    // the re-list waits the first backoff again rather than following at once.
    await t.clock.advance(750);
    await t.client.waitForWatch(2);
    expect(t.client.listCalls).toBe(1);
    await t.clock.advance(750);
    await t.client.waitForWatch(3);
    expect(t.client.listCalls).toBe(2);
    expect(t.events.at(-1)).toBe('delete a (was 1b)');

    // After progress, a 410 (here as the HTTP status of the watch) re-lists at once.
    t.client.apply(item('z', '26'));
    t.client.failNextWatch(new K8sApiError(410, 'Expired', 'too old resource version'));
    t.client.endWatches();
    await t.client.waitForWatch(5);
    expect(t.client.listCalls).toBe(3);
    expect(await restarts(t.registry, 'gone')).toBe(2);
    await t.stop();
  });

  it('backs off repeated failures exponentially with jitter, capped, and never stops', async () => {
    const t = setup({ initialBackoffMs: 1000, maxBackoffMs: 30_000 });
    const forbidden = new K8sApiError(403, 'Forbidden', 'nodes is forbidden');
    for (let i = 0; i < 8; i++) t.client.failNextList(forbidden);
    void t.start();
    await t.clock.advance(0);
    const waits: number[] = [];
    for (let calls = 1; calls <= 8; calls++) {
      expect(t.client.listCalls).toBe(calls);
      let waited = 0;
      while (t.client.listCalls === calls) {
        await t.clock.advance(250);
        waited += 250;
      }
      waits.push(waited);
    }
    // 1000 × 2^(n-1) × 0.75, capped at 30 000 × 0.75 (advanced in 250 ms steps).
    expect(waits).toEqual([750, 1500, 3000, 6000, 12_000, 22_500, 22_500, 22_500]);
    await t.client.waitForWatch(1);
    expect(t.loop.synced()).toBe(true);
    expect(await restarts(t.registry, 'error')).toBe(8);
    await t.stop();
  });

  it.each([
    { random: 0, first: 500 },
    { random: 0.9999, first: 1000 },
  ])('jitters a backoff within [half, all] of its ceiling (random $random)', async ({ random, first }) => {
    const t = setup({ random: () => random });
    t.client.failNextList(new Error('connect ECONNREFUSED'));
    void t.start();
    await t.clock.advance(first - 1);
    expect(t.client.listCalls).toBe(1);
    await t.clock.advance(1);
    expect(t.client.listCalls).toBe(2);
    await t.stop();
  });

  it('backs off after a watch ERROR event other than 410, then resumes without re-listing', async () => {
    const t = setup();
    void t.start();
    await t.client.waitForWatch(1);
    t.client.failNextWatch(new K8sApiError(500, 'InternalError', 'etcd unavailable'));
    t.client.endWatches(); // unproductive end: backoff 750 ms, then the failing watch: 1500 ms
    await t.clock.advance(750);
    await t.client.waitForWatch(2);
    await t.clock.advance(1499);
    expect(t.client.watchRequests).toHaveLength(2);
    await t.clock.advance(1);
    await t.client.waitForWatch(3);
    expect(t.client.listCalls).toBe(1);
    expect(await restarts(t.registry, 'error')).toBe(1);
    await t.stop();
  });

  it('a delivered event resets the backoff', async () => {
    const t = setup();
    void t.start();
    await t.client.waitForWatch(1);
    t.client.endWatches();
    await t.clock.advance(750);
    await t.client.waitForWatch(2);
    t.client.apply(item('a', '1'));
    t.client.endWatches();
    await t.client.waitForWatch(3); // at once: the watch delivered an event
    t.client.endWatches();
    await t.clock.advance(749); // a fresh first backoff, not the second one
    expect(t.client.watchRequests).toHaveLength(3);
    await t.clock.advance(1);
    expect(t.client.watchRequests).toHaveLength(4);
    await t.stop();
  });
});

describe('watch loop: robustness', () => {
  it('logs a handler that throws and goes on', async () => {
    const t = setup({
      handlers: {
        onAdd: () => {
          throw new Error('handler bug');
        },
      },
    });
    t.client.apply(item('a', '1'));
    void t.start();
    await t.client.waitForWatch(1);
    t.client.apply(item('b', '2'));
    expect(t.loop.size).toBe(2);
    expect(t.messages().filter((m) => m.msg === 'watch handler failed')).toHaveLength(2);
    await t.stop();
  });

  it('keeps the previous value when the transform throws', async () => {
    let fail = false;
    const t = setup({
      transform: (raw) => {
        if (fail) throw new Error('transform bug');
        return { value: String((raw.spec as { value: string }).value) };
      },
    });
    t.client.apply(item('a', '1'));
    void t.start();
    await t.client.waitForWatch(1);
    fail = true;
    t.client.apply(item('a', '2'));
    expect(t.loop.get('a')).toEqual({ value: '1' });
    expect(t.messages().some((m) => m.msg === 'transform failed; object ignored')).toBe(true);
    await t.stop();
  });

  it('stops when the signal aborts: the watch closed, no timer left, start resolved', async () => {
    const t = setup();
    const running = t.start();
    await t.client.waitForWatch(1);
    expect(t.client.openWatches).toBe(1);
    await t.stop();
    await expect(running).resolves.toBeUndefined();
    expect(t.client.openWatches).toBe(0);
    expect(t.clock.pending).toBe(0);
  });

  it('stops during a backoff', async () => {
    const t = setup();
    t.client.failNextList(new Error('boom'));
    void t.start();
    await t.clock.advance(0);
    expect(t.clock.pending).toBe(1);
    await t.stop();
    expect(t.clock.pending).toBe(0);
  });

  it('refuses to start twice', async () => {
    const t = setup();
    void t.start();
    await expect(t.loop.start(new AbortController().signal)).rejects.toThrow('already started');
    await t.stop();
  });

  it('shares its metrics with other loops on the same registry and starts every restart reason at 0', async () => {
    const t = setup();
    const other = createWatchLoop(
      { client: new FakeListWatchClient(), clock: t.clock, log: memoryLog().log, registry: t.registry },
      { resource: 'others', transform: () => 1 },
    );
    expect(other.name).toBe('watch-others');
    const text = await t.registry.metrics();
    for (const reason of ['watchdog', 'gone', 'error', 'ended']) {
      expect(text).toContain(
        `npu_fault_controller_watch_restarts_total{resource="items",reason="${reason}"} 0`,
      );
      expect(text).toContain(
        `npu_fault_controller_watch_restarts_total{resource="others",reason="${reason}"} 0`,
      );
    }
  });

  it.each([
    ['resource', { resource: 'Nodes!' }, 'resource must be a lower-case word'],
    ['watchdogMs', { watchdogMs: 0 }, 'watchdogMs must be a positive number'],
    ['maxBackoffMs', { maxBackoffMs: Number.NaN }, 'maxBackoffMs must be a positive number'],
  ])('refuses a bad %s', (_name, bad, message) => {
    expect(() => setup(bad)).toThrow(message);
  });
});

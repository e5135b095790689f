import { describe, expect, it } from '@jest/globals';
import { createLeaderOnly, type LeaderTerm } from './leader-only.js';
import { createLogger, type Logger } from './logger.js';
import type { Runnable } from './runnable.js';

function memoryLog(): { log: Logger; messages: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', destination: { write: (l: string) => void lines.push(l) } });
  return { log, messages: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A leader-only work whose terms run fakes writing into one journal; the elector is faked by `lead`. */
function leaderWork(options: { failing?: string } = {}): {
  events: string[];
  work: ReturnType<typeof createLeaderOnly>;
  messages: () => Record<string, unknown>[];
} {
  const { log, messages } = memoryLog();
  const events: string[] = [];
  const part = (name: string): Runnable => ({
    name,
    start: (signal) => {
      events.push(`start ${name}`);
      if (name === options.failing) return Promise.reject(new Error(`${name} broke`));
      return new Promise<void>((resolve) => {
        const stop = (): void => {
          events.push(`stop ${name}`);
          resolve();
        };
        if (signal.aborted) stop();
        else signal.addEventListener('abort', stop, { once: true });
      });
    },
  });
  const work = createLeaderOnly({
    name: 'leader',
    log,
    prepare: (term): Promise<LeaderTerm> => {
      events.push(`prepare ${term}`);
      return Promise.resolve({
        runnables: [part(`publisher/${term}`), part(`remediation/${term}`)],
        ended: () => void events.push(`ended ${term}`),
      });
    },
  });
  return { events, work, messages };
}

describe('createLeaderOnly', () => {
  it('starts the term’s runnables on winning the lease and stops them on losing it', async () => {
    const { events, work } = leaderWork();
    const run = new AbortController();
    const running = work.start(run.signal);
    await settle();
    expect(events).toEqual([]);
    const term1 = new AbortController();
    work.lead(1, term1.signal);
    await settle();
    expect(events).toEqual(['prepare 1', 'start publisher/1', 'start remediation/1']);
    term1.abort(new Error('stopped leading: renew deadline passed'));
    await settle();
    expect(events.slice(3)).toEqual(['stop publisher/1', 'stop remediation/1', 'ended 1']);

    // Leading again later: a fresh term, fresh runnables.
    const term2 = new AbortController();
    work.lead(2, term2.signal);
    await settle();
    expect(events.slice(6)).toEqual(['prepare 2', 'start publisher/2', 'start remediation/2']);
    run.abort();
    await running;
    expect(events.slice(9)).toEqual(['stop publisher/2', 'stop remediation/2', 'ended 2']);
  });

  it('its stop waits for the term’s runnables to stop', async () => {
    const { events, work } = leaderWork();
    const run = new AbortController();
    const running = work.start(run.signal);
    work.lead(4, new AbortController().signal);
    await settle();
    let stopped = false;
    void running.then(() => (stopped = true));
    run.abort();
    await running;
    expect(stopped).toBe(true);
    expect(events.slice(-3)).toEqual(['stop publisher/4', 'stop remediation/4', 'ended 4']);
  });

  it('a term won before it started waits for the start; one ending before it is never run', async () => {
    const { events, work } = leaderWork();
    work.lead(1, new AbortController().signal);
    await settle();
    expect(events).toEqual([]);
    const run = new AbortController();
    const running = work.start(run.signal);
    await settle();
    expect(events).toEqual(['prepare 1', 'start publisher/1', 'start remediation/1']);
    run.abort();
    await running;

    const late = leaderWork();
    late.work.lead(1, AbortSignal.abort());
    const lateRun = new AbortController();
    const lateRunning = late.work.start(lateRun.signal);
    await settle();
    lateRun.abort();
    await lateRunning;
    expect(late.events).toEqual([]);
  });

  it('ignores a term once stopping', async () => {
    const { events, work } = leaderWork();
    const run = new AbortController();
    const running = work.start(run.signal);
    run.abort();
    work.lead(9, new AbortController().signal);
    await running;
    expect(events).toEqual([]);
  });

  it('a failing part is logged and the others run on until the term ends', async () => {
    const { events, work, messages } = leaderWork({ failing: 'publisher/1' });
    const run = new AbortController();
    const running = work.start(run.signal);
    const term = new AbortController();
    work.lead(1, term.signal);
    await settle();
    expect(events).toEqual(['prepare 1', 'start publisher/1', 'start remediation/1']);
    expect(messages().some((m) => m.msg === 'leader part failed')).toBe(false);
    term.abort();
    await settle();
    expect(events.slice(3)).toEqual(['stop remediation/1', 'ended 1']);
    expect(messages().find((m) => m.msg === 'leader part failed')).toMatchObject({
      term: 1,
      err: 'publisher/1 broke',
    });
    run.abort();
    await running;
  });

  it('a term that cannot be prepared is logged; the next one runs', async () => {
    const { log, messages } = memoryLog();
    const started: number[] = [];
    const work = createLeaderOnly({
      name: 'leader',
      log,
      prepare: (term) =>
        term === 1
          ? Promise.reject(new Error('bad settings'))
          : Promise.resolve({
              runnables: [{ name: 'p', start: () => Promise.resolve(void started.push(term)) }],
            }),
    });
    const run = new AbortController();
    const running = work.start(run.signal);
    work.lead(1, new AbortController().signal);
    await settle();
    expect(messages().find((m) => m.msg === 'leader session failed')).toMatchObject({ term: 1 });
    work.lead(2, new AbortController().signal);
    await settle();
    expect(started).toEqual([2]);
    run.abort();
    await running;
  });

  it('refuses a second start', async () => {
    const { work } = leaderWork();
    const run = new AbortController();
    const running = work.start(run.signal);
    await expect(work.start(run.signal)).rejects.toThrow('leader: already started');
    run.abort();
    await running;
  });
});

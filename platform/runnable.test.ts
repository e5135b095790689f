import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import { FakeClock } from './clock.js';
import { createLogger, type Logger } from './logger.js';
import { onTerminationSignals, runAll, type Runnable, type RunResult } from './runnable.js';

function memoryLog(): { log: Logger; messages: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', destination: { write: (l: string) => void lines.push(l) } });
  return { log, messages: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** Runs until aborted, then resolves (after `stopping` resolves, when given). */
function untilAborted(name: string, stopping?: Promise<void>): Runnable & { started: boolean } {
  const runnable = {
    name,
    started: false,
    start: (signal: AbortSignal): Promise<void> => {
      runnable.started = true;
      return new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        signal.addEventListener('abort', () => void (stopping ?? Promise.resolve()).then(resolve), {
          once: true,
        });
      });
    },
  };
  return runnable;
}

const failsWith = (name: string, error: Error): Runnable => ({ name, start: () => Promise.reject(error) });
const returnsAtOnce = (name: string): Runnable => ({ name, start: () => Promise.resolve() });
const neverStops = (name: string): Runnable => ({ name, start: () => new Promise<void>(() => undefined) });

function states(result: RunResult): Record<string, string> {
  return Object.fromEntries(result.outcomes.map((o) => [o.name, o.state]));
}

describe('runAll', () => {
  it('starts every runnable and stops all cleanly when the signal aborts: exit code 0', async () => {
    const { log, messages } = memoryLog();
    const controller = new AbortController();
    const a = untilAborted('http');
    const b = untilAborted('loop');
    const running = runAll([a, b], {
      signal: controller.signal,
      gracePeriodMs: 1000,
      log,
      clock: new FakeClock(),
    });
    await Promise.resolve();
    expect([a.started, b.started]).toEqual([true, true]);
    controller.abort(new Error('received SIGTERM'));
    const result = await running;
    expect(result).toEqual({
      trigger: 'signal',
      outcomes: [
        { name: 'http', state: 'stopped' },
        { name: 'loop', state: 'stopped' },
      ],
      notStopped: [],
      exitCode: 0,
    });
    expect(messages().find((m) => m.msg === 'stopping')).toMatchObject({
      trigger: 'signal',
      reason: 'received SIGTERM',
    });
  });

  it('stops the others when one fails, and reports the failure: exit code 1', async () => {
    const { log, messages } = memoryLog();
    const other = untilAborted('loop');
    const boom = new Error('EADDRINUSE');
    const result = await runAll([failsWith('http', boom), other], {
      signal: new AbortController().signal,
      gracePeriodMs: 1000,
      log,
      clock: new FakeClock(),
    });
    expect(result.trigger).toBe('failure');
    expect(result.outcomes[0]).toEqual({ name: 'http', state: 'failed', error: boom });
    expect(states(result)).toEqual({ http: 'failed', loop: 'stopped' });
    expect(result.exitCode).toBe(1);
    expect(messages().find((m) => m.msg === 'runnable failed; stopping')).toMatchObject({
      runnable: 'http',
      err: { message: 'EADDRINUSE' },
    });
  });

  it('stops the others when one returns on its own: exit code 1', async () => {
    const { log } = memoryLog();
    const result = await runAll([untilAborted('http'), returnsAtOnce('watch')], {
      signal: new AbortController().signal,
      gracePeriodMs: 1000,
      log,
      clock: new FakeClock(),
    });
    expect([result.trigger, result.exitCode]).toEqual(['exit', 1]);
    expect(states(result)).toEqual({ http: 'stopped', watch: 'exited' });
  });

  it('counts a failure while stopping against the exit code', async () => {
    const { log } = memoryLog();
    const controller = new AbortController();
    const failsOnStop: Runnable = {
      name: 'flush',
      start: (signal) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('flush failed')))),
    };
    const running = runAll([failsOnStop], {
      signal: controller.signal,
      gracePeriodMs: 1000,
      log,
      clock: new FakeClock(),
    });
    controller.abort();
    const result = await running;
    expect([result.trigger, states(result).flush, result.exitCode]).toEqual(['signal', 'failed', 1]);
  });

  it('waits the grace period and no longer, and names the runnables that did not stop', async () => {
    const { log, messages } = memoryLog();
    const clock = new FakeClock();
    const controller = new AbortController();
    let slowDone!: () => void;
    const slow = untilAborted('slow', new Promise<void>((resolve) => (slowDone = resolve)));
    let settled = false;
    const running = runAll([untilAborted('quick'), slow, neverStops('stuck')], {
      signal: controller.signal,
      gracePeriodMs: 5000,
      log,
      clock,
    }).finally(() => (settled = true));
    controller.abort();
    await clock.advance(4999);
    expect(settled).toBe(false);
    slowDone();
    await clock.advance(1);
    const result = await running;
    expect(states(result)).toEqual({ quick: 'stopped', slow: 'stopped', stuck: 'timed-out' });
    expect([result.notStopped, result.exitCode]).toEqual([['stuck'], 1]);
    expect(messages().find((m) => m.msg === 'runnables did not stop within the grace period')).toMatchObject({
      notStopped: ['stuck'],
      gracePeriodMs: 5000,
    });
  });

  it('returns as soon as all have stopped, leaving no grace timer behind', async () => {
    const { log } = memoryLog();
    const clock = new FakeClock();
    const controller = new AbortController();
    const running = runAll([untilAborted('a')], {
      signal: controller.signal,
      gracePeriodMs: 60_000,
      log,
      clock,
    });
    controller.abort();
    await running;
    expect(clock.pending).toBe(0);
  });

  it('starts nothing when the signal has already aborted', async () => {
    const { log } = memoryLog();
    const a = untilAborted('a');
    const result = await runAll([a], {
      signal: AbortSignal.abort(),
      gracePeriodMs: 10,
      log,
      clock: new FakeClock(),
    });
    expect(a.started).toBe(false);
    expect([states(result), result.exitCode]).toEqual([{ a: 'stopped' }, 0]);
  });

  it('catches a start that throws synchronously', async () => {
    const { log } = memoryLog();
    const throws: Runnable = {
      name: 'bad',
      start: () => {
        throw new TypeError('bug');
      },
    };
    const result = await runAll([throws], { signal: new AbortController().signal, gracePeriodMs: 10, log });
    expect(states(result)).toEqual({ bad: 'failed' });
  });

  it('starts the runnables after one that throws at once already told to stop', async () => {
    const { log } = memoryLog();
    const throws: Runnable = {
      name: 'bad',
      start: () => {
        throw new TypeError('bug');
      },
    };
    const checksAtStart: Runnable = {
      name: 'late',
      start: (signal) => (signal.aborted ? Promise.resolve() : new Promise<void>(() => undefined)),
    };
    const result = await runAll([throws, checksAtStart], {
      signal: new AbortController().signal,
      gracePeriodMs: 10,
      log,
      clock: new FakeClock(),
    });
    expect(states(result)).toEqual({ bad: 'failed', late: 'stopped' });
  });

  it.each([
    ['duplicate names', [untilAborted('x'), untilAborted('x')], 'runAll: two runnables are named "x"'],
    ['an empty group', [], 'runAll: nothing to run'],
  ])('refuses %s', async (_name, runnables, message) => {
    const { log } = memoryLog();
    await expect(
      runAll(runnables, { signal: new AbortController().signal, gracePeriodMs: 1, log }),
    ).rejects.toThrow(message);
  });
});

describe('onTerminationSignals', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    'aborts on %s with a reason naming it, and lets go of the process',
    (name) => {
      const emitter = new EventEmitter();
      const signal = onTerminationSignals(emitter);
      expect(signal.aborted).toBe(false);
      expect([emitter.listenerCount('SIGTERM'), emitter.listenerCount('SIGINT')]).toEqual([1, 1]);
      emitter.emit(name);
      expect(signal.aborted).toBe(true);
      expect((signal.reason as Error).message).toBe(`received ${name}`);
      // A second signal falls to the runtime's default handling: nothing of ours listens.
      expect([emitter.listenerCount('SIGTERM'), emitter.listenerCount('SIGINT')]).toEqual([0, 0]);
    },
  );

  it('accepts the real process as its source (a type check; no listener is installed here)', () => {
    const source: Parameters<typeof onTerminationSignals>[0] = process;
    expect(typeof source.once).toBe('function');
  });

  it('ignores signals it was not asked for', () => {
    const emitter = new EventEmitter();
    const signal = onTerminationSignals(emitter, ['SIGTERM']);
    emitter.emit('SIGINT');
    expect(signal.aborted).toBe(false);
  });
});

describe('a real process', () => {
  const url = (file: string): string => new URL(file, import.meta.url).href;
  const root = fileURLToPath(new URL('..', import.meta.url));

  /** Starts a child running runAll over `members` (source text) and sends it SIGTERM once it is ready. */
  function runChild(
    members: string,
    gracePeriodMs: number,
  ): Promise<{ code: number | null; lines: string[] }> {
    const script = `
      const { runAll, onTerminationSignals } = await import(${JSON.stringify(url('./runnable.ts'))});
      const { createLogger } = await import(${JSON.stringify(url('./logger.ts'))});
      const log = createLogger({ component: 'child' });
      const signal = onTerminationSignals(process);
      const untilAborted = (name, stopMs) => ({ name, start: (s) => new Promise((resolve) =>
        s.addEventListener('abort', () => setTimeout(resolve, stopMs))) });
      const stuck = (name) => ({ name, start: () => new Promise(() => setInterval(() => {}, 1000)) });
      // A real component's server keeps the event loop alive; without one, the child would end
      // (exit 13, an unsettled top-level await) before the SIGTERM arrives.
      const keepAlive = setInterval(() => {}, 60_000);
      const running = runAll([${members}], { signal, gracePeriodMs: ${gracePeriodMs}, log });
      process.stdout.write('{"msg":"ready"}\\n');
      const result = await running;
      clearInterval(keepAlive);
      process.exit(result.exitCode);`;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        const before = out;
        out += chunk.toString();
        if (!before.includes('"ready"') && out.includes('"ready"')) child.kill('SIGTERM');
      });
      child.on('error', reject);
      // 'close', not 'exit': 'exit' may come before the last stdout chunk has been read.
      child.on('close', (code) => resolve({ code, lines: out.trim().split('\n') }));
    });
  }

  it('exits 0 on SIGTERM once every runnable has stopped', async () => {
    const { code, lines } = await runChild(`untilAborted('http', 50), untilAborted('loop', 10)`, 10_000);
    const messages = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(messages.find((m) => m.msg === 'stopping')).toMatchObject({
      trigger: 'signal',
      reason: 'received SIGTERM',
    });
    expect(code).toBe(0);
  });

  it('exits 1 after the grace period when a runnable does not stop', async () => {
    const { code, lines } = await runChild(`untilAborted('http', 10), stuck('stuck')`, 200);
    expect(lines.some((l) => l.includes('"notStopped":["stuck"]'))).toBe(true);
    expect(code).toBe(1);
  });
});

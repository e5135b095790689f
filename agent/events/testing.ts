/**
 * Fakes for tests of agent/events and of the agent that uses it: an event recorder and a log
 * to await without sleeping, a fake /dev/kmsg, and an event source driven by hand.
 */
import { createLogger, type Logger } from '../../platform/index.js';
import type { OpenRecordDevice, RecordDevice } from './kmsg-device.js';
import type { EventSource, KernelEvent } from './types.js';

/** Something a test waits for: resolved by `check` once `ready()` holds. */
class Waiters {
  #waiting: Array<{ ready: () => boolean; resolve: () => void }> = [];

  until(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push({ ready, resolve }));
  }

  check(): void {
    this.#waiting = this.#waiting.filter((waiter) => {
      if (!waiter.ready()) return true;
      waiter.resolve();
      return false;
    });
  }
}

/** Collects events and lets a test await a number of them. */
export class EventRecorder {
  readonly events: KernelEvent[] = [];
  readonly #waiters = new Waiters();

  /** Pass as a source's onEvent. */
  readonly onEvent = (event: KernelEvent): void => {
    this.events.push(event);
    this.#waiters.check();
  };

  /** Resolves with every event so far once there are at least `count` (the test's timeout bounds the wait). */
  async next(count: number): Promise<KernelEvent[]> {
    await this.#waiters.until(() => this.events.length >= count);
    return [...this.events];
  }
}

/** A debug-level logger whose lines a test can read and await. */
export class LogRecorder {
  readonly lines: Array<Record<string, unknown>> = [];
  readonly log: Logger;
  readonly #waiters = new Waiters();

  constructor() {
    this.log = createLogger({
      level: 'debug',
      destination: {
        write: (line: string) => {
          this.lines.push(JSON.parse(line) as Record<string, unknown>);
          this.#waiters.check();
        },
      },
    });
  }

  /** The lines with this message. */
  messages(msg: string): Array<Record<string, unknown>> {
    return this.lines.filter((line) => line.msg === msg);
  }

  /** Resolves once `count` lines with this message were logged. */
  waitFor(msg: string, count = 1): Promise<void> {
    return this.until(() => this.messages(msg).length >= count);
  }

  /** Resolves once `ready` holds, checked at every line logged. */
  until(ready: () => boolean): Promise<void> {
    return this.#waiters.until(ready);
  }
}

/** `text` as /dev/kmsg serves it: bytes below 0x20, from 0x7f, and `\` written as `\xNN`. */
function kmsgEscape(text: string): string {
  const escape = (byte: number): string =>
    byte < 0x20 || byte >= 0x7f || byte === 0x5c
      ? `\\x${byte.toString(16).padStart(2, '0')}`
      : String.fromCharCode(byte);
  return [...new TextEncoder().encode(text)].map(escape).join('');
}

/** A system error as Node's fs reports one. */
function systemError(code: string): Error {
  return Object.assign(new Error(`${code}: fake kmsg`), { code });
}

/**
 * A fake /dev/kmsg with its semantics: every reader starts at the oldest record, a read
 * returns one record, blocks (or fails with EAGAIN when opened non-blocking) when none is
 * left, and fails once with EPIPE after `overrun()`.
 */
export class FakeKmsgDevice {
  /** Successful opens so far, by mode. */
  readonly opens = { blocking: 0, nonBlocking: 0 };
  readonly #records: string[] = [];
  readonly #waiters = new Waiters();
  #seq = 0;
  #overruns = 0;
  #openFailures: Error[] = [];
  #readFailures: Error[] = [];
  #wake: Array<() => void> = [];

  /** Pass as the follower's openRecordDevice. */
  readonly open: OpenRecordDevice = (_path, { nonBlocking }) => {
    const failure = this.#openFailures.shift();
    if (failure) return Promise.reject(failure);
    this.opens[nonBlocking ? 'nonBlocking' : 'blocking']++;
    this.#waiters.check();
    return Promise.resolve(this.#reader(nonBlocking));
  };

  /**
   * Resolves once the device was opened blocking `count` times: the follower is then past
   * the backlog and waiting for new records.
   */
  opened(count = 1): Promise<void> {
    return this.#waiters.until(() => this.opens.blocking >= count);
  }

  /**
   * Appends a record `<priority>,<seq>,<µs>,-;<text>` with a dictionary line, the text escaped
   * as the kernel does; returns its sequence number. The priority is facility × 8 + level: the
   * default 4 is the kernel's warning, and user space gets 8 or more (12 is user, warning).
   */
  write(text: string, priority = 4): number {
    const seq = this.#seq++;
    this.writeRaw(`${priority},${seq},${seq * 1000},-;${kmsgEscape(text)}\n SUBSYSTEM=pci\n`);
    return seq;
  }

  /** Appends raw text, read as one record (garbage, in tests). */
  writeRaw(text: string): void {
    this.#records.push(text);
    this.#ring();
  }

  /** Makes the next read of each open reader fail with EPIPE, as after the ring overwrote records. */
  overrun(): void {
    this.#overruns++;
    this.#ring();
  }

  /** Makes the next open fail with this system error code (`EACCES`, `ENOENT`). */
  failNextOpen(code: string): void {
    this.#openFailures.push(systemError(code));
  }

  /** Makes the next read (by any reader) fail with this system error code (`EIO`). */
  failNextRead(code: string): void {
    this.#readFailures.push(systemError(code));
    this.#ring();
  }

  #ring(): void {
    for (const wake of this.#wake.splice(0)) wake();
  }

  #reader(nonBlocking: boolean): RecordDevice {
    let cursor = 0;
    let overruns = this.#overruns;
    let closed = false;
    const next = (): Promise<string> => {
      if (closed) return new Promise(() => undefined); // as a real read after close: never answers
      const failure = this.#readFailures.shift();
      if (failure) return Promise.reject(failure);
      if (overruns < this.#overruns) {
        overruns = this.#overruns;
        return Promise.reject(systemError('EPIPE'));
      }
      const record = this.#records[cursor];
      if (record !== undefined) {
        cursor++;
        return Promise.resolve(record);
      }
      if (nonBlocking) return Promise.reject(systemError('EAGAIN'));
      return new Promise<void>((resolve) => this.#wake.push(resolve)).then(next);
    };
    return {
      read: next,
      close: () => {
        closed = true;
      },
    };
  }
}

/** A kernel event with defaults for the fields a test does not care about. */
export function kernelEvent(overrides: Partial<KernelEvent> = {}): KernelEvent {
  return {
    kind: 'xid',
    busId: '0000:3B:00.0',
    xid: 79,
    at: '2026-01-01T00:00:00.000Z',
    line: 'NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.',
    ...overrides,
  };
}

/** An event source a test drives by hand: `emit` calls its onEvent; `start` waits for the signal. */
export interface FakeEventSource extends EventSource {
  emit(event?: Partial<KernelEvent>): void;
  /** Whether start is running. */
  readonly running: boolean;
}

/** A fake event source reporting to `onEvent`. */
export function createFakeEventSource(
  onEvent: (event: KernelEvent) => void,
  name = 'fake-events',
): FakeEventSource {
  let running = false;
  return {
    name,
    get running() {
      return running;
    },
    emit: (event = {}) => onEvent(kernelEvent(event)),
    start: (signal) =>
      new Promise<void>((resolve) => {
        running = true;
        const stop = (): void => {
          running = false;
          resolve();
        };
        if (signal.aborted) stop();
        else signal.addEventListener('abort', stop, { once: true });
      }),
  };
}

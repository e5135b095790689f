/**
 * The kernel-log follower: reads /dev/kmsg (or a file or FIFO given as its path), hands each
 * line to the pure KernelLogScanner (core/parsers) and reports the XIDs, PCIe AER errors and
 * device removals it finds, as they are written, so that the agent sends a snapshot at once
 * instead of at its next sample.
 *
 * What the path is decides how it is read (see each reader's file):
 * - a character device (/dev/kmsg): one record per read, the ring buffer's backlog skipped
 *   by sequence number, overwritten records (EPIPE) counted and read past (kmsg-device.ts);
 * - a plain file: followed like `tail -F`, from its end, or from its start when it appeared
 *   or was replaced after the follower started, since all of it is then new (tail.ts);
 * - a FIFO: read as a stream (fifo.ts).
 * A path that is missing or unreadable, or a reader that fails, is logged, counted in
 * `kmsg_read_errors_total{reason}` and tried again with doubling delays; the follower only
 * ever stops when its signal aborts.
 *
 * Only the kernel's own messages count (issue 26; the rules are the scanner's): from
 * /dev/kmsg, records of facility 0 alone, which user space cannot write; from a file or FIFO,
 * every line that does not say it is another's (a plain dmesg line says nothing, so such a
 * source is trusted to hold kernel messages only). What is ignored is counted in
 * `kmsg_records_ignored_total{reason}`, never logged line by line: a tenant can write many.
 *
 * Given `onNodeEvent`, the follower also reports the kernel's node-problem messages (hung
 * tasks, lockups, OOM kills, filesystem errors, machine checks; core/parsers kmsg-node.ts),
 * by the same rules, counted in `kernel_node_events_total{kind}`. They are not device events:
 * `onEvent` never sees them.
 */
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { KernelLogScanner, type KernelLogEvent, type NodeKernelLogEvent } from '../../core/parsers/index.js';
import { errorCode, type Clock, type Logger, type Registry } from '../../platform/index.js';
import { followRecordDevice, openRecordDevice, type OpenRecordDevice } from './kmsg-device.js';
import { LineSplitter } from './line-splitter.js';
import { eventMetrics, type EventMetrics, type KmsgErrorReason, type KmsgIgnoredReason } from './metrics.js';
import { readFifo } from './fifo.js';
import { tailFile } from './tail.js';
import {
  DEFAULT_RETRY,
  type EventSource,
  type KernelEvent,
  type NodeKernelEvent,
  type RetryOptions,
} from './types.js';

/** Where and how to follow the kernel log. */
export interface KmsgFollowerOptions {
  /** `/dev/kmsg`, or a log file or FIFO (tests, `--kmsg-path`). */
  path: string;
  /**
   * Report what the log already holds too: /dev/kmsg's ring since boot, a file's existing
   * lines. Default false: only what is written after the start is new.
   */
  fromStart?: boolean;
  /** Delays between attempts while the path cannot be read (default DEFAULT_RETRY). */
  retry?: RetryOptions;
  /** A followed file is also checked this often, where fs.watch stays silent (default 1000 ms). */
  pollMs?: number;
}

/** What the follower reports to. */
export interface KmsgFollowerDeps {
  /** Called once per event, synchronously, in log order; an exception it throws is logged. */
  onEvent: (event: KernelEvent) => void;
  /**
   * Called once per node-problem message, synchronously, in log order; an exception it throws
   * is logged. Without it those messages are not read.
   */
  onNodeEvent?: (event: NodeKernelEvent) => void;
  clock: Clock;
  log: Logger;
  registry: Registry;
  /** Opens a character device (default: the real one); tests pass a fake /dev/kmsg. */
  openRecordDevice?: OpenRecordDevice;
}

/** Default poll period of a followed file: fs.watch normally answers first. */
const DEFAULT_POLL_MS = 1000;

/** What a path is, for the logs. */
function kind(info: Stats): string {
  if (info.isCharacterDevice()) return 'character device';
  if (info.isFIFO()) return 'fifo';
  return info.isFile() ? 'file' : 'other';
}

/** Follows the kernel log at `options.path`; see the file comment. */
export function createKmsgFollower(options: KmsgFollowerOptions, deps: KmsgFollowerDeps): EventSource {
  return {
    name: 'kmsg',
    start: (signal) => new KmsgFollower(options, deps, signal).run(),
  };
}

/** One run of the follower: the scanner and the reading position live as long as it does. */
class KmsgFollower {
  readonly #scanner: KernelLogScanner;
  readonly #splitter = new LineSplitter((line) => this.#line(line));
  readonly #metrics: EventMetrics;
  readonly #retry: RetryOptions;
  /** Where /dev/kmsg was read up to, across re-opens. */
  readonly #device = { lastSeq: null as number | null };
  #fromStart: boolean;
  #delayMs: number;
  /** Whether the current attempt got as far as reading (a later failure is a read error). */
  #opened = false;

  constructor(
    private readonly options: KmsgFollowerOptions,
    private readonly deps: KmsgFollowerDeps,
    private readonly signal: AbortSignal,
  ) {
    this.#metrics = eventMetrics(deps.registry);
    this.#scanner = new KernelLogScanner({
      onIgnored: (reason: KmsgIgnoredReason) => this.#metrics.kmsgIgnored.inc({ reason }),
      ...(deps.onNodeEvent ? { onNodeEvent: (found: NodeKernelLogEvent) => this.#emitNode(found) } : {}),
    });
    this.#retry = options.retry ?? DEFAULT_RETRY;
    this.#fromStart = options.fromStart ?? false;
    this.#delayMs = this.#retry.initialMs;
  }

  async run(): Promise<void> {
    const { log } = this.deps;
    log.info({ path: this.options.path, fromStart: this.#fromStart }, 'following the kernel log');
    while (!this.signal.aborted) {
      this.#opened = false;
      try {
        const outcome = await this.#attempt();
        // A file replaced under us (rotated): the new one is all new, and is read at once.
        if (outcome === 'replaced') {
          this.#fromStart = true;
          continue;
        }
        if (this.signal.aborted) break;
        this.#fail('read', new Error(`${this.options.path}: ended`));
      } catch (error) {
        if (this.signal.aborted) break;
        // A log that does not exist yet holds only lines written after the start.
        if (errorCode(error) === 'ENOENT') this.#fromStart = true;
        this.#fail(this.#opened ? 'read' : 'open', error);
      }
      await this.deps.clock.sleep(this.#delayMs, this.signal).catch(() => undefined);
      this.#delayMs = Math.min(this.#delayMs * 2, this.#retry.maxMs);
    }
    log.info({ path: this.options.path }, 'stopped following the kernel log');
  }

  /** Reads the path once, by what it is; resolves when aborted, 'replaced' when a file was swapped. */
  async #attempt(): Promise<'aborted' | 'replaced' | 'ended'> {
    const { path } = this.options;
    const info = await stat(path);
    const opened = (): void => {
      this.#opened = true;
      this.#delayMs = this.#retry.initialMs;
      this.deps.log.debug({ path, type: kind(info) }, 'kernel log open');
    };
    if (info.isCharacterDevice()) {
      await followRecordDevice(path, {
        signal: this.signal,
        open: this.deps.openRecordDevice ?? openRecordDevice,
        // Only the caller can ask for the ring's past: a device appearing late has it too.
        fromStart: this.options.fromStart ?? false,
        state: this.#device,
        opened,
        // A whole record: the scanner reads its facility and ignores its dictionary.
        onRecord: (record) => {
          for (const found of this.#scanner.pushRecord(record)) this.#emit(found);
        },
        onOverrun: () =>
          this.#countError('overrun', 'kernel log records were overwritten before they were read'),
        onSkipped: () => this.#metrics.kmsgSkipped.inc(),
        onGarbage: () => this.#metrics.kmsgReadErrors.inc({ reason: 'garbage' }),
      });
      return 'aborted';
    }
    this.#splitter.reset();
    if (info.isFIFO()) {
      await readFifo(path, { signal: this.signal, opened, onChunk: (chunk) => this.#splitter.push(chunk) });
      return this.signal.aborted ? 'aborted' : 'ended';
    }
    if (!info.isFile()) throw new Error(`${path}: not a file, FIFO or character device`);
    return tailFile(path, {
      signal: this.signal,
      clock: this.deps.clock,
      pollMs: this.options.pollMs ?? DEFAULT_POLL_MS,
      fromStart: this.#fromStart,
      opened,
      onChunk: (chunk) => this.#splitter.push(chunk),
      onTruncated: () => this.#splitter.reset(),
    });
  }

  #line(line: string): void {
    for (const found of this.#scanner.push(line)) this.#emit(found);
  }

  #emit(found: KernelLogEvent): void {
    const event: KernelEvent = {
      kind: found.kind,
      busId: found.busId,
      ...(found.xid === undefined ? {} : { xid: found.xid }),
      ...(found.severity === undefined ? {} : { severity: found.severity }),
      at: found.at ?? new Date(this.deps.clock.now()).toISOString(),
      line: found.line,
    };
    this.#metrics.kernelEvents.inc({ kind: event.kind });
    const { line, ...fields } = event;
    // XIDs and corrected errors can come by the thousand (a job's Xid 13 storm): debug only.
    const notable = event.kind === 'removed' || (event.kind === 'aer' && event.severity !== 'corrected');
    this.deps.log[notable ? 'info' : 'debug']({ ...fields, kernelLine: line }, 'kernel event');
    try {
      this.deps.onEvent(event);
    } catch (error) {
      this.deps.log.error({ err: error }, 'kernel event consumer failed');
    }
  }

  #emitNode(found: NodeKernelLogEvent): void {
    const { line, ...fields } = found;
    const event: NodeKernelEvent = {
      ...fields,
      at: found.at ?? new Date(this.deps.clock.now()).toISOString(),
      line,
    };
    this.#metrics.kernelNodeEvents.inc({ kind: event.kind });
    // Any kind can come by the hundred (a machine-check storm too): debug only; the kernel
    // check logs once when a problem starts and stops holding.
    this.deps.log.debug(
      { kind: event.kind, subject: event.subject, at: event.at, kernelLine: line },
      'kernel node event',
    );
    try {
      this.deps.onNodeEvent?.(event);
    } catch (error) {
      this.deps.log.error({ err: error }, 'kernel node event consumer failed');
    }
  }

  #fail(reason: KmsgErrorReason, error: unknown): void {
    this.#metrics.kmsgReadErrors.inc({ reason });
    this.deps.log.warn(
      { err: error, path: this.options.path, reason, retryInMs: this.#delayMs },
      'cannot read the kernel log; retrying',
    );
  }

  #countError(reason: KmsgErrorReason, message: string): void {
    this.#metrics.kmsgReadErrors.inc({ reason });
    this.deps.log.warn({ path: this.options.path, reason }, message);
  }
}

/**
 * nvidia-smi in loop mode: one long-lived `nvidia-smi --query-gpu=… --format=csv,noheader,nounits
 * -lms <period>` in place of a new nvidia-smi every second. Each run of nvidia-smi initialises
 * NVML and opens every GPU before it reads anything, and the agent pays a process spawn on
 * top: at 1 Hz that alone is more than the agent's budget of 2% of a core (bench/agent.ts).
 * In loop mode NVML is initialised once and each period costs only the reads.
 *
 * The loop prints, each period, one row per GPU and nothing between periods. A sample is the
 * rows of one period: it is complete when it holds `count` rows (the driver's GPU count, the
 * last field of every row), in rising index order.
 *
 * Anything else ends the stream and the caller reads that sample with a one-shot run, whose
 * reading of lost GPUs and tool errors is the careful one (nvidia-smi.ts): a tool error on
 * stderr (warnings are let be), a line that is not a row, a period cut short, the tool
 * exiting, no complete sample within the probe's deadline. For `cooldownMs` after that every
 * sample is one-shot, then the loop is started again.
 *
 * Samples are taken, not queued: the latest complete one waits for the next call, younger
 * than one period, else the call waits for the next (so the sampler's tick locks onto the
 * loop, and a sample reaches the sampler as soon as the loop prints it). Its collected time is
 * when its last row arrived.
 */
import { Counter, Gauge } from 'prom-client';
import { firstLine, type StreamTool, type ToolStream } from '../probe/index.js';
import { metricPrefix, type Clock, type Logger, type Registry } from '../../platform/index.js';

/** Why the loop was given up (the metric's `reason`). */
export const STREAM_FAILURE_REASONS = [
  'ended',
  'stderr',
  'unexpected-line',
  'stalled',
  'unreadable',
] as const;
export type StreamFailureReason = (typeof STREAM_FAILURE_REASONS)[number];

/** One period's rows, as a noheader CSV text, and when its last row arrived (epoch ms). */
export interface StreamSample {
  text: string;
  collectedAt: number;
}

/** What the loop is built from. */
export interface NvidiaSmiLoopDeps {
  stream: StreamTool;
  clock: Clock;
  log?: Logger;
  registry?: Registry;
}

/** Loop settings (milliseconds). */
export interface NvidiaSmiLoopOptions {
  /** nvidia-smi's `-lms`: the sampling interval. */
  periodMs: number;
  /** After the loop fails, samples are one-shot this long before it is started again. */
  cooldownMs: number;
  /**
   * Whether a stderr line ends the loop (default: any does). nvidia-smi warns on stderr of
   * things a sample does not carry (a corrupted infoROM) in every period; those are let be.
   */
  stderrFails?: (line: string) => boolean;
}

/** The loop's metrics (one loop per registry: the names are fixed). */
interface LoopMetrics {
  failures: Counter<'reason'>;
  up: Gauge;
}

function createLoopMetrics(registry: Registry): LoopMetrics {
  const prefix = metricPrefix('agent');
  const failures = new Counter({
    name: `${prefix}collector_stream_failures_total`,
    help: 'Times the nvidia-smi loop was given up for one-shot runs, by reason',
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of STREAM_FAILURE_REASONS) failures.inc({ reason }, 0);
  const up = new Gauge({
    name: `${prefix}collector_stream_up`,
    help: '1 while samples come from the nvidia-smi loop, 0 while they are one-shot runs',
    registers: [registry],
  });
  return { failures, up };
}

/** A complete period waiting to be taken. */
interface Ready extends StreamSample {
  /** monotonic ms it completed */
  at: number;
}

type Waiter = (sample: StreamSample | null) => void;

/** The long-lived nvidia-smi loop, read into samples. */
export class NvidiaSmiLoop {
  readonly #command: string;
  readonly #args: readonly string[];
  readonly #fieldCount: number;
  readonly #options: NvidiaSmiLoopOptions;
  readonly #deps: NvidiaSmiLoopDeps;
  readonly #metrics: LoopMetrics | undefined;
  #tool: ToolStream | null = null;
  #rows: string[] = [];
  #lastIndex = -1;
  #ready: Ready | null = null;
  #waiters = new Set<Waiter>();
  #failedAt = Number.NEGATIVE_INFINITY;
  /** True from a failure to the next complete sample: warn once, not every cooldown. */
  #failing = false;
  #closed = false;

  /** `args`: the one-shot query's arguments; `-lms <periodMs>` is added. */
  constructor(
    command: string,
    args: readonly string[],
    fieldCount: number,
    options: NvidiaSmiLoopOptions,
    deps: NvidiaSmiLoopDeps,
  ) {
    this.#command = command;
    this.#args = [...args, '-lms', String(options.periodMs)];
    this.#fieldCount = fieldCount;
    this.#options = options;
    this.#deps = deps;
    this.#metrics = deps.registry ? createLoopMetrics(deps.registry) : undefined;
    this.#metrics?.up.set(0);
  }

  /**
   * The next sample: the waiting one when younger than a period, else the next to complete.
   * Null when the loop is not running (cooling down after a failure, closed) or fails while
   * waiting: read this sample another way. Rejects with the signal's reason when it aborts
   * (the caller gives a loop that missed its deadline up: an abort may also be a shutdown).
   */
  next(signal: AbortSignal): Promise<StreamSample | null> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (!this.#running()) return Promise.resolve(null);
    const ready = this.#ready;
    this.#ready = null;
    if (ready !== null && this.#deps.clock.monotonic() - ready.at <= this.#options.periodMs)
      return Promise.resolve({ text: ready.text, collectedAt: ready.collectedAt });
    return new Promise<StreamSample | null>((resolve, reject) => {
      const onAbort = (): void => {
        this.#waiters.delete(waiter);
        reject(signal.reason as Error);
      };
      const waiter: Waiter = (sample) => {
        signal.removeEventListener('abort', onAbort);
        resolve(sample);
      };
      this.#waiters.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Gives the loop up for the cooldown (the caller could not read its sample, or it misbehaved). */
  fail(reason: StreamFailureReason, detail: string): void {
    if (this.#tool === null) return;
    this.#stopTool();
    this.#failedAt = this.#deps.clock.monotonic();
    this.#metrics?.failures.inc({ reason });
    this.#metrics?.up.set(0);
    const level = this.#failing ? 'debug' : 'warn';
    this.#failing = true;
    this.#deps.log?.[level](
      { reason, detail, cooldown_ms: this.#options.cooldownMs },
      'nvidia-smi loop given up: one-shot runs until the cooldown passes',
    );
    this.#settle(null);
  }

  /** Stops the loop for good (the agent is shutting down). */
  close(): void {
    this.#closed = true;
    this.#stopTool();
    this.#settle(null);
  }

  /** True when the loop runs, starting it when it is due to. */
  #running(): boolean {
    if (this.#tool !== null) return true;
    if (this.#closed) return false;
    if (this.#deps.clock.monotonic() - this.#failedAt < this.#options.cooldownMs) return false;
    this.#rows = [];
    this.#lastIndex = -1;
    this.#ready = null;
    const tool = this.#deps.stream(this.#command, this.#args, {
      onLine: (line) => {
        if (this.#tool === tool) this.#line(line);
      },
      onStderr: (line) => {
        if (this.#tool !== tool || line.trim() === '') return;
        if (this.#options.stderrFails?.(line) ?? true) this.fail('stderr', firstLine(line));
        else this.#deps.log?.debug({ line: firstLine(line) }, 'nvidia-smi loop warning');
      },
      onEnd: (reason) => {
        if (this.#tool === tool) this.fail('ended', reason);
      },
    });
    this.#tool = tool;
    return true;
  }

  #line(line: string): void {
    if (line.trim() === '') return;
    const cells = line.split(',');
    const index = integer(cells[0]);
    const count = integer(cells.at(-1));
    if (cells.length !== this.#fieldCount || index === null || count === null || count === 0) {
      this.fail('unexpected-line', firstLine(line));
      return;
    }
    if (index <= this.#lastIndex) {
      // The next period began before this one had `count` rows: rows went missing.
      this.fail('unexpected-line', `period cut short after ${this.#rows.length} of ${count} rows`);
      return;
    }
    this.#rows.push(line);
    this.#lastIndex = index;
    if (this.#rows.length < count) return;
    const { clock } = this.#deps;
    const sample = { text: `${this.#rows.join('\n')}\n`, collectedAt: clock.now() };
    this.#rows = [];
    this.#lastIndex = -1;
    if (this.#failing) this.#deps.log?.info({}, 'nvidia-smi loop delivering samples');
    this.#failing = false;
    this.#metrics?.up.set(1);
    if (this.#waiters.size > 0) this.#settle(sample);
    else this.#ready = { ...sample, at: clock.monotonic() };
  }

  #settle(sample: StreamSample | null): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const waiter of waiters) waiter(sample);
  }

  #stopTool(): void {
    this.#tool?.stop();
    this.#tool = null;
    this.#ready = null;
  }
}

/** A cell as a non-negative integer, or null. */
function integer(cell: string | undefined): number | null {
  const text = cell?.trim() ?? '';
  return /^\d{1,6}$/.test(text) ? Number(text) : null;
}

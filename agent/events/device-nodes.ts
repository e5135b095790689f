/**
 * The device-node watcher: reports a `/dev/davinciN` or `/dev/nvidiaN` that disappears (the
 * driver removed the device, or it was unbound) as a removed event naming the node. fs.watch
 * (inotify) says that the directory changed, but its file names are unreliable (coalesced,
 * missing, or the directory itself), so every notification re-lists the directory and
 * compares it with the last listing. Nodes missing when it starts are not events: the agent's
 * inventory reports those devices.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir } from 'node:fs/promises';
import {
  ABORTED,
  systemClock,
  untilAborted,
  type Clock,
  type Logger,
  type Registry,
} from '../../platform/index.js';
import { eventMetrics, type EventMetrics } from './metrics.js';
import { DEFAULT_RETRY, type EventSource, type KernelEvent, type RetryOptions } from './types.js';
import { Wakeup } from './wakeup.js';

/** What to watch. */
export interface DeviceNodeWatcherOptions {
  /** The directory of device nodes (`/dev`). */
  dir: string;
  /** Names watched, e.g. `/^(davinci\d+|nvidia\d+)$/` (its g and y flags are ignored). */
  pattern: RegExp;
  /** Delays between attempts while the directory cannot be watched (default DEFAULT_RETRY). */
  retry?: RetryOptions;
}

/** What the watcher reports to. */
export interface DeviceNodeWatcherDeps {
  /** Called once per removed node (kind removed, busId null, line the node's name). */
  onEvent: (event: KernelEvent) => void;
  log: Logger;
  registry: Registry;
  /** Event times and retry delays (default the system clock). */
  clock?: Clock;
}

/** Watches `options.dir` for device nodes matching `options.pattern` that disappear. */
export function createDeviceNodeWatcher(
  options: DeviceNodeWatcherOptions,
  deps: DeviceNodeWatcherDeps,
): EventSource {
  return {
    name: 'device-nodes',
    start: (signal) => new DeviceNodeWatch(options, deps, signal).run(),
  };
}

class DeviceNodeWatch {
  readonly #pattern: RegExp;
  readonly #clock: Clock;
  readonly #retry: RetryOptions;
  readonly #metrics: EventMetrics;
  /** The watched nodes of the last listing; null before the first. */
  #known: Set<string> | null = null;
  #delayMs: number;

  constructor(
    private readonly options: DeviceNodeWatcherOptions,
    private readonly deps: DeviceNodeWatcherDeps,
    private readonly signal: AbortSignal,
  ) {
    // A g or y flag would make test() remember where it stopped.
    this.#pattern = new RegExp(options.pattern.source, options.pattern.flags.replace(/[gy]/g, ''));
    this.#clock = deps.clock ?? systemClock;
    this.#retry = options.retry ?? DEFAULT_RETRY;
    this.#metrics = eventMetrics(deps.registry);
    this.#delayMs = this.#retry.initialMs;
  }

  async run(): Promise<void> {
    const { log } = this.deps;
    log.info({ dir: this.options.dir, pattern: this.#pattern.source }, 'watching device nodes');
    while (!this.signal.aborted) {
      try {
        await this.#watch();
      } catch (error) {
        if (this.signal.aborted) break;
        this.#metrics.deviceNodeWatchErrors.inc();
        log.warn(
          { err: error, dir: this.options.dir, retryInMs: this.#delayMs },
          'cannot watch device nodes; retrying',
        );
      }
      await this.#clock.sleep(this.#delayMs, this.signal).catch(() => undefined);
      this.#delayMs = Math.min(this.#delayMs * 2, this.#retry.maxMs);
    }
  }

  /** Lists the directory at every change until aborted (resolves) or watching fails (rejects). */
  async #watch(): Promise<void> {
    const wakeup = new Wakeup();
    const watching: { failure: Error | null } = { failure: null };
    // Watch before listing, so that a node removed in between is seen by the next listing.
    const watcher: FSWatcher = watch(this.options.dir, () => wakeup.ring());
    watcher.on('error', (error: Error) => {
      watching.failure = error;
      wakeup.ring();
    });
    try {
      for (;;) {
        const names = await untilAborted(this.#list(), this.signal);
        if (names === ABORTED) return;
        this.#compare(names);
        this.#delayMs = this.#retry.initialMs;
        if ((await untilAborted(wakeup.wait(), this.signal)) === ABORTED) return;
        if (watching.failure !== null) throw watching.failure;
      }
    } finally {
      watcher.close();
    }
  }

  async #list(): Promise<Set<string>> {
    const names = await readdir(this.options.dir);
    return new Set(names.filter((name) => this.#pattern.test(name)));
  }

  #compare(names: Set<string>): void {
    const known = this.#known;
    this.#known = names;
    this.deps.log.debug({ nodes: names.size }, 'device nodes listed');
    if (known === null) return;
    for (const name of known) {
      if (names.has(name)) continue;
      this.#metrics.deviceNodeRemovals.inc();
      this.deps.log.info({ node: name, dir: this.options.dir }, 'device node removed');
      const event: KernelEvent = {
        kind: 'removed',
        busId: null,
        at: new Date(this.#clock.now()).toISOString(),
        line: name,
      };
      try {
        this.deps.onEvent(event);
      } catch (error) {
        this.deps.log.error({ err: error }, 'device node event consumer failed');
      }
    }
  }
}

/**
 * A full garbage collection now and then, for a small daemon that allocates a little every
 * second (the node agent): at that pace V8's own full collection is far off, and promoted
 * garbage would pile up for minutes (why: docs/decisions/0014-agent-heap-trim.md).
 *
 * The collector is V8's `gc` extension, enabled at run time (v8.setFlagsFromString), so no
 * command-line flag is needed.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Counter, Histogram } from 'prom-client';
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import { metricPrefix, type Registry } from './metrics.js';
import type { Runnable } from './runnable.js';

/** Runs one full collection. */
export type FullCollection = () => void;

/** V8's full collection, made available at run time (once per process is enough; repeats are harmless). */
export function v8FullCollection(): FullCollection {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options?: { type: 'major'; execution: 'sync' }) => void;
  return () => gc({ type: 'major', execution: 'sync' });
}

/** V8's young-generation collection (a scavenge: about a millisecond), made available at run time. */
export function v8MinorCollection(): FullCollection {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options?: { type: 'minor' }) => void;
  return () => gc({ type: 'minor' });
}

/** What the trimmer is built from. */
export interface HeapTrimDeps {
  clock: Clock;
  log: Logger;
  registry: Registry;
  /** Metric names start `npu_fault_<component>_`. */
  component: string;
  /** Default v8FullCollection(). */
  collect?: FullCollection;
}

/** A Runnable that runs a full collection every `intervalMs` until it is stopped. */
export function createHeapTrimmer(intervalMs: number, deps: HeapTrimDeps): Runnable {
  if (!(intervalMs > 0)) throw new RangeError(`heap trim interval: expected > 0 ms, got ${intervalMs}`);
  const prefix = metricPrefix(deps.component);
  const runs = new Counter({
    name: `${prefix}heap_trims_total`,
    help: 'Full garbage collections run by the heap trimmer',
    registers: [deps.registry],
  });
  const seconds = new Histogram({
    name: `${prefix}heap_trim_duration_seconds`,
    help: 'Time of one full garbage collection run by the heap trimmer',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
    registers: [deps.registry],
  });
  return {
    name: 'heap-trim',
    async start(signal) {
      const collect = deps.collect ?? v8FullCollection();
      deps.log.debug({ interval_ms: intervalMs }, 'heap trimmer started');
      while (!signal.aborted) {
        try {
          await deps.clock.sleep(intervalMs, signal);
        } catch {
          break; // stopped
        }
        const started = deps.clock.monotonic();
        collect();
        seconds.observe((deps.clock.monotonic() - started) / 1000);
        runs.inc();
      }
    },
  };
}

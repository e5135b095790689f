/**
 * Self-healing's drains, run in the background (at most one per node) so a pass never waits
 * on one. A drain stops with the term (the record still says `draining`, so the next leader
 * resumes it) or when the pass stops it (the node uncordoned by a person, in maintenance,
 * opted out, gone; drain mode off). A finished drain records its outcome on the Node, if the
 * Node still says `draining` and the term still leads, then wakes the remediator.
 */
import type { NodeRecord } from '../../contracts/index.js';
import { describeError, type Clock, type Logger } from '../../platform/index.js';
import type { EventRecorder } from '../node-status/index.js';
import type { RemediationConfig } from './config.js';
import type { RemediationMetrics } from './metrics.js';
import type { NodeRecords } from './node-records.js';

/** What a drain reports (drain.ts). */
export interface DrainResult {
  readonly outcome: 'drained' | 'timed-out' | 'aborted';
  readonly evicted: readonly string[];
  readonly forced: readonly string[];
  readonly blocking: readonly { readonly pod: string; readonly reason: string }[];
}

/** Drains `node` (only the pods holding `devices` when the config says per device). */
export type DrainFunction = (
  node: string,
  devices: readonly string[],
  config: RemediationConfig['drain'],
  signal: AbortSignal,
) => Promise<DrainResult>;

/** What the runner is built from. */
export interface DrainRunnerDeps {
  drain: DrainFunction;
  records: NodeRecords;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
  metrics: RemediationMetrics;
  /** The term's fence. */
  leading(): boolean;
  /** A drain ended (whatever the outcome): the next pass is due. */
  onFinished(): void;
}

/** The drains running in this process. */
export interface DrainRunner {
  has(node: string): boolean;
  /** Nodes whose drain runs now. */
  nodes(): Iterable<string>;
  /** Starts draining `node` for `record`; it stops when `termSignal` aborts. */
  start(node: string, record: NodeRecord, config: RemediationConfig, termSignal: AbortSignal): void;
  /** Stops the drains of the nodes `unwanted` names, saying `why`. */
  stopWhere(unwanted: (node: string) => boolean, why: string): void;
  /** Stops every drain, saying `why`. */
  stopAll(why: string): void;
}

/** Creates the runner of one term. */
export function createDrainRunner(deps: DrainRunnerDeps): DrainRunner {
  const { clock, log, metrics, events } = deps;
  const running = new Map<string, AbortController>();

  const finish = async (
    node: string,
    record: NodeRecord,
    report: DrainResult,
    run: { config: RemediationConfig; started: number; termSignal: AbortSignal },
  ): Promise<void> => {
    const { config, termSignal } = run;
    metrics.drainSeconds.observe({ outcome: report.outcome }, (clock.now() - run.started) / 1000);
    metrics.evictions.inc({ result: 'evicted' }, report.evicted.length);
    metrics.evictions.inc({ result: 'forced' }, report.forced.length);
    if (report.outcome === 'aborted' || termSignal.aborted) return;
    const finished = new Date(clock.now()).toISOString();
    const blocking = report.blocking.slice(0, 20).map((b) => `${b.pod}: ${b.reason}`.slice(0, 512));
    const next: NodeRecord =
      report.outcome === 'drained'
        ? { ...record, phase: 'drained', drainFinishedAt: finished, blocking: [] }
        : { ...record, phase: 'blocked', drainFinishedAt: finished, blocking };
    metrics.evictions.inc({ result: 'blocked' }, report.blocking.length);
    metrics.blockingPods.set(report.blocking.length);
    const current = await deps.records.read(node, termSignal);
    if (!current || current.record?.phase !== 'draining' || !deps.leading()) return;
    await deps.records.write(node, current.state.resourceVersion, { record: next }, termSignal);
    const object = { apiVersion: 'v1', kind: 'Node', name: node, uid: node };
    if (report.outcome === 'drained') {
      log.warn({ node, evicted: report.evicted.length, forced: report.forced.length }, 'drained');
      events.record(
        object,
        'Normal',
        'NodeDrained',
        `evicted ${report.evicted.length} pods${report.forced.length ? `, deleted ${report.forced.length}` : ''}`,
      );
    } else {
      log.warn({ node, blocking }, 'drain timed out; blocking pods reported, retried later');
      events.record(
        object,
        'Warning',
        'DrainBlocked',
        `drain timed out after ${config.drain.timeoutSeconds}s; blocked by ${preview(blocking)}`,
      );
    }
  };

  return {
    has: (node) => running.has(node),
    nodes: () => running.keys(),
    start(node, record, config, termSignal) {
      const controller = new AbortController();
      const stop = (): void => controller.abort(termSignal.reason);
      termSignal.addEventListener('abort', stop, { once: true });
      running.set(node, controller);
      const started = clock.now();
      log.warn({ node, devices: record.devices, perDevice: config.drain.perDevice }, 'draining');
      events.record(
        { apiVersion: 'v1', kind: 'Node', name: node, uid: node },
        'Normal',
        'DrainStarted',
        `evicting pods: ${record.reason}`,
      );
      void deps
        .drain(node, record.devices, config.drain, controller.signal)
        .then((report) => finish(node, record, report, { config, started, termSignal }))
        .catch((error: unknown) => {
          if (!termSignal.aborted)
            log.warn({ err: describeError(error), node }, 'drain failed; the next pass resumes it');
        })
        .finally(() => {
          termSignal.removeEventListener('abort', stop);
          if (running.get(node) === controller) running.delete(node);
          deps.onFinished();
        });
    },
    stopWhere(unwanted, why) {
      for (const [node, controller] of running) if (unwanted(node)) controller.abort(new Error(why));
    },
    stopAll(why) {
      for (const controller of running.values()) controller.abort(new Error(why));
    },
  };
}

/** The first few items, then a count. */
function preview(items: readonly string[], max = 5): string {
  if (items.length === 0) return 'no pod listed';
  return items.length <= max
    ? items.join('; ')
    : `${items.slice(0, max).join('; ')} and ${items.length - max} more`;
}

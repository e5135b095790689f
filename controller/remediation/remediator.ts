/**
 * Self-healing, run by the leader for one term ("decide, then act"): every pass decides the
 * whole cluster (decide.ts, pure) from the Node cache, the published entries and the breaker
 * ConfigMap, then acts. This module schedules the passes and composes the parts; it and the
 * parts it is built from, with the node and pod clients it is given, are the only code that
 * changes the cluster for remediation.
 *
 * - A pass (pass.ts) runs every `intervalMs`, and soon when woken (a device failed or
 *   recovered, a Node changed, a drain ended): pass-loop.ts.
 * - Every write first checks the fence (the term's leadership), re-reads the Node and acts
 *   only if its record is still the one the decision saw, carrying the Node's
 *   resourceVersion (node-records.ts): a person's uncordon, a concurrent edit, or a stale
 *   cache makes the write a no-op or a 409, and the next pass decides again. One handler per
 *   kind of action (actions/), run by the executor (execute.ts), which backs off failures.
 * - The breaker's new state is written before anything is done under it (breaker.ts).
 * - Drains run in the background, at most `maxConcurrent` (drain-runner.ts); they stop with
 *   the term (the record says `draining`, so the next leader resumes them), when a person
 *   uncordons the node, or when it enters maintenance.
 * - Dry run: the same decisions, logged, as Events and metrics, once per change (dry-run.ts);
 *   nothing is written, the breaker included.
 * - Device taints (device-taints/): a DeviceTaintRule per failed device of a DRA node, kept
 *   level-triggered every pass after the node actions, under the same fence and breaker.
 * - The thermal preset's clock (thermal.ts) lives as long as the term and runs only while
 *   passes do: remediation off, or another replica leading, starts every hold again.
 */
import type { PublishedNode } from '../../contracts/index.js';
import { describeError, type Clock, type Logger, type Runnable } from '../../platform/index.js';
import type { Leadership } from '../leader-election/index.js';
import type { EventRecorder } from '../node-status/index.js';
import type { ConfigMapClient } from '../publisher/index.js';
import type { CachedNode } from '../watch/index.js';
import { createBreaker } from './breaker.js';
import type { RemediationConfig } from './config.js';
import { createDrainRunner, type DrainFunction } from './drain-runner.js';
import { createDeviceTaintReconciler, type DeviceTaintClient } from './device-taints/index.js';
import { createDryRunReporter } from './dry-run.js';
import { createExecutor } from './execute.js';
import type { RemediationMetrics } from './metrics.js';
import type { RemediationNodeClient } from './node-client.js';
import { createNodeRecords } from './node-records.js';
import { createPassLoop } from './pass-loop.js';
import { createPass, type Pass } from './pass.js';
import { createHeatTracker } from './thermal.js';

export type { DrainFunction, DrainResult } from './drain-runner.js';

/** What the remediator is built from. */
export interface RemediatorDeps {
  /** The Node cache. */
  nodes(): Iterable<CachedNode>;
  /** A node's published entry as the engine has it now (null: healthy; undefined: unseen). */
  entry(node: string): PublishedNode | null | undefined;
  /** The settings in force (hot-reloaded). */
  config(): RemediationConfig;
  nodeClient: RemediationNodeClient;
  configMaps: ConfigMapClient;
  /** DeviceTaintRules and ResourceSlices (device taints); absent: never reconciled. */
  deviceTaints?: DeviceTaintClient;
  drain: DrainFunction;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
  metrics: RemediationMetrics;
  /** The term's fence. */
  leadership(): Leadership;
}

/** Which term, where. */
export interface RemediatorOptions {
  identity: string;
  term: number;
  /** The controller's namespace (the breaker ConfigMap's). */
  namespace: string;
}

/** The running remediator of one term. */
export interface Remediator extends Runnable {
  /** Run a pass soon (a device changed status, a Node changed). */
  wake(): void;
  /** Resolves after the next complete pass (tests). */
  nextPass(): Promise<void>;
}

/** Creates the remediator of one term. */
export function createRemediator(deps: RemediatorDeps, options: RemediatorOptions): Remediator {
  const { clock, log, metrics, events } = deps;
  const leading = (): boolean => deps.leadership().leading;
  const records = createNodeRecords(deps.nodeClient);
  const dryRun = createDryRunReporter({ events, log, metrics });
  const drains = createDrainRunner({
    drain: deps.drain,
    records,
    events,
    clock,
    log,
    metrics,
    leading,
    onFinished: () => loop.wake(),
  });
  const heat = createHeatTracker();
  const pass: Pass = createPass({
    nodes: deps.nodes,
    entry: deps.entry,
    clock,
    metrics,
    breaker: createBreaker(
      { configMaps: deps.configMaps, events, log, metrics, dryRun, leading },
      options.namespace,
    ),
    drains,
    executor: createExecutor({ records, drains, events, clock, log, metrics, leading }),
    dryRun,
    heat,
    ...(deps.deviceTaints
      ? {
          deviceTaints: createDeviceTaintReconciler({
            client: deps.deviceTaints,
            events,
            log: log.child({ part: 'device-taints' }),
            metrics,
            leading,
          }),
        }
      : {}),
    identity: options.identity,
    term: options.term,
  });
  const loop = createPassLoop({
    clock,
    config: deps.config,
    async pass(config, signal) {
      // Turned off, to cordon only, or to a dry run: drains in progress stop (records stay
      // `draining`, resumed if drain mode comes back).
      if (config.mode !== 'drain' || config.dryRun) drains.stopAll('drain mode off');
      if (config.mode === 'off' || !leading()) {
        // No pass watched the devices meanwhile: a hold must not span the gap.
        heat.forget();
        metrics.hotDevices.set(0);
        return;
      }
      try {
        await pass(config, signal);
      } catch (error) {
        // The next pass tries again.
        if (!signal.aborted) log.warn({ err: describeError(error) }, 'remediation pass failed; retrying');
      }
    },
    onStop: () => drains.stopAll('term over'),
  });

  return {
    name: 'remediation',
    wake: () => loop.wake(),
    nextPass: () => loop.nextPass(),
    start: (signal) => loop.run(signal),
  };
}

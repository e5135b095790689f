/**
 * One remediation pass: reads the breaker and the Node cache, stops the drains no longer
 * wanted, times the hot devices (thermal.ts, when the preset is on), decides the whole cluster
 * (decide.ts, pure), updates the metrics, settles the breaker, then acts on each decision in
 * turn (or, in a dry run, reports it), and last reconciles the device taints (device-taints/).
 */
import { REMEDIATION_PHASES, type BreakerState, type PublishedNode } from '../../contracts/index.js';
import type { Clock } from '../../platform/index.js';
import type { CachedNode } from '../watch/index.js';
import type { Breaker } from './breaker.js';
import type { DeviceTaintReconciler } from './device-taints/index.js';
import type { RemediationConfig } from './config.js';
import { decide, type Decision, type NodeFacts } from './decide.js';
import type { DrainRunner } from './drain-runner.js';
import type { DryRunReporter } from './dry-run.js';
import type { Executor } from './execute.js';
import type { RemediationMetrics } from './metrics.js';
import { factsOf } from './node-facts.js';
import type { HeatTracker } from './thermal.js';

/** What a pass reads from and acts through. */
export interface PassDeps {
  /** The Node cache. */
  nodes(): Iterable<CachedNode>;
  /** A node's published entry as the engine has it now (null: healthy; undefined: unseen). */
  entry(node: string): PublishedNode | null | undefined;
  clock: Clock;
  metrics: RemediationMetrics;
  breaker: Breaker;
  drains: DrainRunner;
  executor: Executor;
  dryRun: DryRunReporter;
  /** The hot devices' clock of this term (the thermal preset). */
  heat: HeatTracker;
  /** Device taints (DRA); absent: never reconciled. */
  deviceTaints?: DeviceTaintReconciler;
  /** This replica and its term (written into new records). */
  identity: string;
  term: number;
}

/** One pass under `config`; throws when the breaker cannot be read or written. */
export type Pass = (config: RemediationConfig, signal: AbortSignal) => Promise<void>;

/** Creates the pass of one term. */
export function createPass(deps: PassDeps): Pass {
  const { clock, drains } = deps;
  return async (config, signal) => {
    const read = await deps.breaker.read(signal);
    const facts: NodeFacts[] = [];
    /** The record text each node carried when decided (writes go ahead only if unchanged). */
    const seen = new Map<string, string | undefined>();
    for (const node of deps.nodes()) {
      if (!node.accelerator && node.remediation === undefined) continue;
      facts.push(factsOf(node, config));
      seen.set(node.name, node.remediation);
    }
    // Drains that must stop: the node was uncordoned by a person, entered maintenance, was
    // opted out, or left. Only explicit signals count: the cache may lag behind our own write
    // (still `cordoned` for a drain just started).
    drains.stopWhere((node) => {
      const fact = facts.find((f) => f.name === node);
      return (
        !fact ||
        fact.maintenance ||
        fact.optedOut ||
        !fact.unschedulable ||
        fact.record?.phase === 'overridden'
      );
    }, 'drain no longer wanted');
    const now = clock.now();
    // Off, the preset keeps no clock: turned on, every device gets its whole hold.
    const heat = config.thermalEviction.enabled
      ? deps.heat.update(
          facts.map((fact) => fact.name),
          deps.entry,
          now,
        )
      : deps.heat.forget();
    deps.metrics.hotDevices.set(deps.heat.devices());
    const decision = decide({
      now,
      config,
      identity: deps.identity,
      term: deps.term,
      nodes: facts,
      entry: deps.entry,
      breaker: read.state,
      draining: new Set(drains.nodes()),
      heat,
    });
    recordMetrics(deps.metrics, decision, facts, decision.breaker ?? read.state);
    if (!(await deps.breaker.settle(read, decision.breaker, config, signal))) return;

    for (const action of decision.actions) {
      if (signal.aborted) return;
      if (config.dryRun) {
        deps.dryRun.action(action);
        continue;
      }
      await deps.executor.act(action, seen.get(action.node), config, signal);
    }
    // After the node actions: a cordon protects more than a device taint, so it goes first.
    await deps.deviceTaints?.reconcile(
      {
        nodes: facts.map((fact) => ({
          name: fact.name,
          optedOut: fact.optedOut,
          maintenance: fact.maintenance,
          entry: deps.entry(fact.name),
        })),
        config,
        breakerOpen: (decision.breaker ?? read.state).state === 'open',
        now,
      },
      signal,
    );
  };
}

/** The pass's gauges: nodes left alone and why, records by phase, the breaker. */
function recordMetrics(
  metrics: RemediationMetrics,
  decision: Decision,
  facts: readonly NodeFacts[],
  breaker: BreakerState,
): void {
  metrics.skipped.reset();
  for (const action of decision.actions) if (action.kind === 'skip') metrics.skipped.inc({ why: action.why });
  for (const phase of REMEDIATION_PHASES)
    metrics.nodes.set({ phase }, facts.filter((f) => f.record?.phase === phase).length);
  metrics.breakerOpen.set(breaker.state === 'open' ? 1 : 0);
}

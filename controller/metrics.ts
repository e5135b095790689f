/**
 * The controller's own metrics (the parts' metrics live with the parts). Label values are
 * bounded: statuses, families and reason names come from the rules; per-node series exist
 * only for nodes that are not healthy, at most MAX_NODE_SERIES of them, worst first.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { PublishedDocument } from '../contracts/index.js';
import type { EngineCensus, Transition } from '../core/engine/index.js';
import { metricPrefix, type Registry } from '../platform/index.js';

/** The most nodes given their own series in node_devices. */
export const MAX_NODE_SERIES = 100;

/** Buckets of the collected_at → write-acknowledged latency (seconds). */
const LATENCY_BUCKETS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 1.25, 1.4, 2, 3, 5, 10, 30];

/** The controller's instruments. */
export interface ControllerMetrics {
  transitions(transitions: readonly Transition[]): void;
  /** A status write was acknowledged: the latency of each transition it carried. */
  published(latencies: readonly { seconds: number; failed: boolean }[]): void;
}

/**
 * Registers the metrics. `census` and `lastDocument` are read at scrape time (gauges with
 * collect), so a scrape costs one pass over the engine's devices and nothing between scrapes.
 */
export function createControllerMetrics(
  registry: Registry,
  sources: {
    census(): EngineCensus;
    lastDocument(): PublishedDocument | undefined;
    /** Devices the engine forgot to keep nodes within max_devices_per_node (cumulative). */
    retired?(): number;
  },
): ControllerMetrics {
  const prefix = metricPrefix('controller');
  const registers = [registry];
  // One pass over the engine per scrape, not one per gauge: the three gauges' collects run
  // in the same scrape, so the census is kept until the event loop turns.
  let census: EngineCensus | undefined;
  const censusOnce = (): EngineCensus => {
    if (census === undefined) {
      census = sources.census();
      setImmediate(() => (census = undefined));
    }
    return census;
  };
  new Gauge({
    name: `${prefix}devices`,
    help: "Devices by published status and accelerator family (this replica's engine)",
    labelNames: ['status', 'family'],
    registers,
    collect() {
      this.reset();
      for (const d of censusOnce().devices) this.set({ status: d.status, family: d.family }, d.count);
    },
  });
  new Gauge({
    name: `${prefix}stale_agents`,
    help: 'Observed nodes whose agent has not reported for agent_unreachable_s',
    registers,
    collect() {
      this.set(censusOnce().stale);
    },
  });
  new Gauge({
    name: `${prefix}unobserved_nodes`,
    help: 'Accelerator nodes with no snapshot yet',
    registers,
    collect() {
      this.set(censusOnce().unobserved);
    },
  });
  new Gauge({
    name: `${prefix}node_devices`,
    help: `Devices not healthy per node, from the last document this replica wrote (at most ${MAX_NODE_SERIES} nodes, worst first)`,
    labelNames: ['node', 'status'],
    registers,
    collect() {
      this.reset();
      const doc = sources.lastDocument();
      if (!doc) return;
      const nodes = Object.values(doc.nodes)
        .filter((n) => n.summary.failed + n.summary.degraded + n.summary.unknown > 0)
        .sort((a, b) => b.summary.failed - a.summary.failed || b.summary.degraded - a.summary.degraded)
        .slice(0, MAX_NODE_SERIES);
      for (const n of nodes) {
        for (const status of ['failed', 'degraded', 'unknown'] as const) {
          if (n.summary[status] > 0) this.set({ node: n.node, status }, n.summary[status]);
        }
      }
    },
  });
  new Counter({
    name: `${prefix}devices_retired_total`,
    help: 'Devices forgotten to keep a node within max_devices_per_node (devices it no longer lists, missing longest first)',
    registers,
    collect() {
      this.reset();
      this.inc(sources.retired?.() ?? 0);
    },
  });
  const transitions = new Counter({
    name: `${prefix}transitions_total`,
    help: "Changes of a device's published status, by new status and reason",
    labelNames: ['to', 'reason'],
    registers,
  });
  const latency = new Histogram({
    name: `${prefix}publish_latency_seconds`,
    help: "From a change's collected_at (or overlay deadline) to the status write that carried it being acknowledged",
    labelNames: ['kind'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  return {
    transitions(list) {
      for (const t of list) transitions.inc({ to: t.to, reason: t.reason ?? 'none' });
    },
    published(latencies) {
      for (const l of latencies)
        latency.observe({ kind: l.failed ? 'failed' : 'other' }, Math.max(0, l.seconds));
    },
  };
}

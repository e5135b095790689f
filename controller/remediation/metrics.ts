/** Self-healing's metrics (one set per registry). */
import { Counter, Gauge, Histogram } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';
import { REMEDIATION_PHASES } from '../../contracts/index.js';

/** The remediation metrics. */
export interface RemediationMetrics {
  actions: Counter<'action' | 'result'>;
  skipped: Gauge<'why'>;
  nodes: Gauge<'phase'>;
  breakerOpen: Gauge;
  breakerTrips: Counter;
  drainSeconds: Histogram<'outcome'>;
  evictions: Counter<'result'>;
  blockingPods: Gauge;
  hotDevices: Gauge;
  deviceTaintWrites: Counter<'action' | 'result'>;
  deviceTaintRules: Gauge;
  unmatchedDevices: Gauge<'why'>;
  invalidSlices: Gauge;
}

/** Creates them on `registry`. */
export function createRemediationMetrics(registry: Registry): RemediationMetrics {
  const prefix = metricPrefix('controller');
  const metrics: RemediationMetrics = {
    actions: new Counter({
      name: `${prefix}remediation_actions_total`,
      help: 'Remediation actions (cordon, drain, record, uncordon, forget) by result: ok, error, conflict, dry-run',
      labelNames: ['action', 'result'],
      registers: [registry],
    }),
    skipped: new Gauge({
      name: `${prefix}remediation_skipped_nodes`,
      help: 'Nodes left alone in the last pass, by why (maintenance, opted-out, breaker-open, manual-uncordon, …)',
      labelNames: ['why'],
      registers: [registry],
    }),
    nodes: new Gauge({
      name: `${prefix}remediation_nodes`,
      help: 'Nodes carrying a remediation record, by phase',
      labelNames: ['phase'],
      registers: [registry],
    }),
    breakerOpen: new Gauge({
      name: `${prefix}remediation_breaker_open`,
      help: '1 while the remediation circuit breaker is open (no new cordons or drains)',
      registers: [registry],
    }),
    breakerTrips: new Counter({
      name: `${prefix}remediation_breaker_trips_total`,
      help: 'Times the remediation circuit breaker opened',
      registers: [registry],
    }),
    drainSeconds: new Histogram({
      name: `${prefix}remediation_drain_duration_seconds`,
      help: 'Drain duration by outcome (drained, timed-out, aborted)',
      labelNames: ['outcome'],
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800],
      registers: [registry],
    }),
    evictions: new Counter({
      name: `${prefix}remediation_pods_total`,
      help: 'Pods a drain removed (evicted, forced) or was blocked by (blocked)',
      labelNames: ['result'],
      registers: [registry],
    }),
    blockingPods: new Gauge({
      name: `${prefix}remediation_blocking_pods`,
      help: 'Pods blocking the drains that last timed out',
      registers: [registry],
    }),
    hotDevices: new Gauge({
      name: `${prefix}remediation_hot_devices`,
      help: 'Devices the thermal eviction preset times as hot (high-temp without a break) in the last pass; 0 while it is off',
      registers: [registry],
    }),
    deviceTaintWrites: new Counter({
      name: `${prefix}remediation_device_taint_writes_total`,
      help: 'DeviceTaintRule writes (create, replace, delete) by result: ok, error, conflict, dry-run, breaker-open',
      labelNames: ['action', 'result'],
      registers: [registry],
    }),
    deviceTaintRules: new Gauge({
      name: `${prefix}remediation_device_taint_rules`,
      help: 'DeviceTaintRules this controller owns, as of the last pass with device taints on',
      registers: [registry],
    }),
    unmatchedDevices: new Gauge({
      name: `${prefix}remediation_device_taint_unmatched_devices`,
      help: 'Devices to taint on DRA nodes that match no ResourceSlice device, by why (no-identifier, no-device, ambiguous)',
      labelNames: ['why'],
      registers: [registry],
    }),
    invalidSlices: new Gauge({
      name: `${prefix}remediation_device_taint_invalid_slices`,
      help: 'ResourceSlices refused in the last pass (not what the API promises); their nodes keep the rules they have',
      registers: [registry],
    }),
  };
  for (const phase of REMEDIATION_PHASES) metrics.nodes.set({ phase }, 0);
  metrics.breakerOpen.set(0);
  metrics.hotDevices.set(0);
  metrics.deviceTaintRules.set(0);
  return metrics;
}

/**
 * The elector's metrics, in the registry the component passes in (one elector per registry:
 * the names are fixed). Label values are bounded: `to` is `leader` or `follower`.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';

/** The elector's instruments. */
export interface LeaderElectionMetrics {
  readonly term: Gauge;
  readonly transitions: Counter<'to'>;
  readonly renewFailures: Counter;
  readonly renewSeconds: Histogram;
}

/**
 * Registers the elector's metrics under `npu_fault_<component>_`. `isLeading` is read at each
 * scrape, so the leader gauge drops with the fence even when the renew loop is stalled.
 */
export function createLeaderElectionMetrics(
  registry: Registry,
  component: string,
  isLeading: () => boolean,
): LeaderElectionMetrics {
  const prefix = metricPrefix(component);
  const registers = [registry];
  new Gauge({
    name: `${prefix}leader`,
    help: '1 while this replica leads (its lease renewed within the renew deadline), else 0',
    registers,
    collect() {
      this.set(isLeading() ? 1 : 0);
    },
  });
  return {
    term: new Gauge({
      name: `${prefix}leader_term`,
      help: "The Lease's leaseTransitions as last observed: the current leader's term",
      registers,
    }),
    transitions: new Counter({
      name: `${prefix}leader_transitions_total`,
      help: 'Times this replica started (to="leader") or stopped (to="follower") leading',
      labelNames: ['to'],
      registers,
    }),
    renewFailures: new Counter({
      name: `${prefix}lease_renew_failures_total`,
      help: 'Lease renewals by the leader that failed (API error, timeout, or the lease taken)',
      registers,
    }),
    renewSeconds: new Histogram({
      name: `${prefix}lease_renew_duration_seconds`,
      help: 'Time a renewal of the Lease by the leader took, failed ones included',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
  };
}

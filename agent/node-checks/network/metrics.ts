/**
 * The network check's metrics, under `npu_fault_agent_network_`, registered once per registry
 * (a test may build several checks). Label values are bounded: `target` is a TARGET_KINDS
 * kind, `outcome` a PROBE_OUTCOMES one, `table` and `reason` the fixed words below; the
 * addresses are only in logs and the problem's message.
 */
import { Counter, Gauge, Histogram, type Metric } from 'prom-client';
import { metricPrefix, type Registry } from '../../../platform/index.js';
import { TARGET_KINDS } from './targets.js';

/**
 * How a probe ended: `connected` and `refused` (an RST) are answers; `neighbour` is a gateway
 * that let the attempt go unanswered while its ARP entry is complete, an answer too;
 * `timeout`, `unreachable` (no route, no neighbour, interface down) and `error` are misses.
 */
export const PROBE_OUTCOMES = [
  'connected',
  'refused',
  'neighbour',
  'timeout',
  'unreachable',
  'error',
] as const;
/** One of PROBE_OUTCOMES. */
export type ProbeOutcome = (typeof PROBE_OUTCOMES)[number];

/** The tables the check reads. */
export const NETWORK_TABLES = ['route', 'neighbour'] as const;
/**
 * Why reading a table failed: `read` (missing, unreadable), `garbage` (not the table, or lines
 * that are not entries), `no-default-route` (the routing table has no usable default route
 * through a gateway).
 */
export const TABLE_ERROR_REASONS = ['read', 'garbage', 'no-default-route'] as const;
/** One of TABLE_ERROR_REASONS. */
export type TableErrorReason = (typeof TABLE_ERROR_REASONS)[number];

/** The network check's instruments. */
export interface NetworkMetrics {
  readonly probes: Counter<'target' | 'outcome'>;
  readonly duration: Histogram<'target'>;
  readonly targets: Gauge<'target'>;
  readonly unreachable: Gauge;
  readonly tableErrors: Counter<'table' | 'reason'>;
}

/** The instruments in `registry`, registered on first use. */
export function networkMetrics(registry: Registry, component = 'agent'): NetworkMetrics {
  const prefix = `${metricPrefix(component)}network_`;
  const registers = [registry];
  const once = <M extends Metric>(name: string, make: (name: string) => M): M =>
    (registry.getSingleMetric(`${prefix}${name}`) as M | undefined) ?? make(`${prefix}${name}`);
  const probes = once(
    'probes_total',
    (name) =>
      new Counter({
        name,
        help: 'Network probes by target kind (gateway, api-server, configured) and outcome (connected, refused, neighbour: answers; timeout, unreachable, error: misses)',
        labelNames: ['target', 'outcome'],
        registers,
      }),
  );
  const tableErrors = once(
    'table_errors_total',
    (name) =>
      new Counter({
        name,
        help: 'Failures reading the routing or neighbour table, by reason (read, garbage: lines that are not entries, no-default-route)',
        labelNames: ['table', 'reason'],
        registers,
      }),
  );
  // Every series starts at 0, so an alert on increase() sees the first one.
  for (const target of TARGET_KINDS) for (const outcome of PROBE_OUTCOMES) probes.inc({ target, outcome }, 0);
  for (const table of NETWORK_TABLES)
    for (const reason of TABLE_ERROR_REASONS)
      if (table === 'route' || reason !== 'no-default-route') tableErrors.inc({ table, reason }, 0);
  return {
    probes,
    tableErrors,
    duration: once(
      'probe_duration_seconds',
      (name) =>
        new Histogram({
          name,
          help: 'Time of one network probe (the connection attempt and, for the gateway, the neighbour-table read), by target kind',
          labelNames: ['target'],
          buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5],
          registers,
        }),
    ),
    targets: once(
      'targets',
      (name) =>
        new Gauge({
          name,
          help: 'Endpoints probed in the last round, by target kind (0 api-server: KUBERNETES_SERVICE_HOST unset or invalid; 0 gateway: no default route known)',
          labelNames: ['target'],
          registers,
        }),
    ),
    unreachable: once(
      'unreachable_targets',
      (name) =>
        new Gauge({
          name,
          help: 'Targets that missed the configured number of probes in a row (any: network-unreachable)',
          registers,
        }),
    ),
  };
}

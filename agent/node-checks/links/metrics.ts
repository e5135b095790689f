/**
 * The links check's metrics, under `npu_fault_agent_`, registered once per registry. Label
 * values are bounded: `kind` is nic, rdma or hccn (LINK_KINDS), `source` net, infiniband or
 * devices (what could not be listed), `failure` one of HCCN_FAILURE_KINDS.
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from '../../../platform/index.js';
import { metricsIn } from '../metrics.js';
import { HCCN_FAILURE_KINDS } from './hccn.js';
import { LINK_KINDS } from './tracker.js';

/** What could not be read: `net` class/net, `infiniband` class/infiniband, `devices` the NPU device nodes. */
export const LINK_SOURCES = ['net', 'infiniband', 'devices'] as const;
export type LinkSourceName = (typeof LINK_SOURCES)[number];

/** The links check's instruments. */
export interface LinkMetrics {
  readonly watched: Gauge<'kind'>;
  readonly down: Gauge<'kind'>;
  readonly flaps: Counter<'kind'>;
  readonly readErrors: Counter<'source'>;
  readonly hccnInstalled: Gauge;
  readonly hccnFailures: Counter<'failure'>;
}

/** The instruments in `registry`, registered on first use. */
export function linkMetrics(registry: Registry): LinkMetrics {
  const { registers, once } = metricsIn(registry);
  const metrics: LinkMetrics = {
    watched: once(
      'node_links_watched',
      (name) =>
        new Gauge({
          name,
          help: 'Links the links check watches, by kind (nic, rdma, hccn: an Ascend NPU RoCE port)',
          labelNames: ['kind'],
          registers,
        }),
    ),
    down: once(
      'node_links_down',
      (name) =>
        new Gauge({
          name,
          help: 'Watched links down, gone or not present, by kind',
          labelNames: ['kind'],
          registers,
        }),
    ),
    flaps: once(
      'node_link_flaps_total',
      (name) =>
        new Counter({
          name,
          help: 'Times a watched link went down (kernel counters, or transitions seen), by kind',
          labelNames: ['kind'],
          registers,
        }),
    ),
    readErrors: once(
      'node_links_read_errors_total',
      (name) =>
        new Counter({
          name,
          help: 'Failed listings of the links check (net, infiniband, devices: the NPU device nodes); the links keep their last state',
          labelNames: ['source'],
          registers,
        }),
    ),
    hccnInstalled: once(
      'hccn_tool_installed',
      (name) =>
        new Gauge({ name, help: '1 when hccn_tool is installed (executable at its path)', registers }),
    ),
    hccnFailures: once(
      'hccn_tool_failures_total',
      (name) =>
        new Counter({
          name,
          help: 'hccn_tool runs that gave no link state, by failure (spawn, exit, aborted: timeout or stop, output: too much, garbage)',
          labelNames: ['failure'],
          registers,
        }),
    ),
  };
  // Every label value starts at 0, so an alert on increase() sees the first one.
  for (const kind of LINK_KINDS) {
    metrics.flaps.inc({ kind }, 0);
    metrics.watched.set({ kind }, 0);
    metrics.down.set({ kind }, 0);
  }
  for (const source of LINK_SOURCES) metrics.readErrors.inc({ source }, 0);
  for (const failure of HCCN_FAILURE_KINDS) metrics.hccnFailures.inc({ failure }, 0);
  return metrics;
}

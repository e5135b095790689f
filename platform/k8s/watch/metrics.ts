/**
 * The watches' metrics, in the registry the component passes in. Several loops (nodes,
 * namespaces, the rules ConfigMap) share one registry, so each metric is created by the
 * first loop and found by the others (`getSingleMetric`), never registered twice. Label
 * values are bounded: `resource` is a fixed word per loop, `reason`, `type` and `result`
 * come from the fixed sets below.
 */
import { Counter } from 'prom-client';
import { metricPrefix, type Registry } from '../../index.js';

/** Why a loop started over: a watchdog timeout, 410 Gone (re-list), an error, or the server ending the watch. */
export const RESTART_REASONS = ['watchdog', 'gone', 'error', 'ended'] as const;
/** One of RESTART_REASONS. */
export type RestartReason = (typeof RESTART_REASONS)[number];

/** The watch instruments. */
export interface WatchMetrics {
  /** `watch_restarts_total{resource,reason}`. */
  readonly restarts: Counter<'resource' | 'reason'>;
  /** `watch_events_total{resource,type}`, type the event's type in lower case. */
  readonly events: Counter<'resource' | 'type'>;
}

/** The watch metrics of `registry` under `npu_fault_<component>_`, created on first use. */
export function watchMetrics(registry: Registry, component = 'controller'): WatchMetrics {
  const prefix = metricPrefix(component);
  return {
    restarts: counter(
      registry,
      `${prefix}watch_restarts_total`,
      'Times a list+watch loop started its watch over, by reason (watchdog: no event or bookmark in time; gone: 410, re-listed; error: a failed list or watch; ended: the server closed it)',
      ['resource', 'reason'],
    ),
    events: counter(
      registry,
      `${prefix}watch_events_total`,
      'Watch events received, by resource and event type (added, modified, deleted, bookmark, error)',
      ['resource', 'type'],
    ),
  };
}

function counter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
): Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Counter) return existing as Counter<L>;
  if (existing) throw new RangeError(`metric ${name} is already registered with another type`);
  return new Counter({ name, help, labelNames, registers: [registry] });
}

/**
 * Prometheus metrics. Each component owns one private Registry, created in its main and
 * passed down (never prom-client's global one, so tests and several servers in one process
 * never collide). Names follow `npu_fault_<component>_<what>_<unit>`.
 */
import { Registry, collectDefaultMetrics } from 'prom-client';

/** Component names become part of metric names, so they are lower snake case. */
const COMPONENT = /^[a-z][a-z0-9_]*$/;

/** The name prefix of a component's metrics: `npu_fault_<component>_`. */
export function metricPrefix(component: string): string {
  if (!COMPONENT.test(component)) {
    throw new RangeError(
      `metrics component: expected lower snake case ([a-z][a-z0-9_]*), got "${component}"`,
    );
  }
  return `npu_fault_${component}_`;
}

/**
 * A fresh Registry for `component`, holding prom-client's default process metrics (CPU,
 * memory, event-loop lag, GC, handles) under the component's prefix, such as
 * `npu_fault_agent_process_resident_memory_bytes`. `eventLoopLagResolutionMs` is how often
 * the lag is sampled (prom-client's default 10 ms: a timer 100 times a second, which costs a
 * small daemon like the agent about half a percent of a core).
 */
export function createRegistry(
  component: string,
  options: { eventLoopLagResolutionMs?: number } = {},
): Registry {
  const registry = new Registry();
  collectDefaultMetrics({
    register: registry,
    prefix: metricPrefix(component),
    eventLoopMonitoringPrecision: options.eventLoopLagResolutionMs ?? 10,
  });
  return registry;
}

export { Registry };

/**
 * What the node checks' metrics share: the agent's prefix, and registration once per registry
 * (a check built twice in one registry, as tests and a rebuilt check do, reuses the metrics).
 */
import type { Metric } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';

/** Registers metrics in `registry` under `npu_fault_agent_`, each the first time it is asked for. */
export function metricsIn(registry: Registry): {
  registers: Registry[];
  once: <M extends Metric>(name: string, make: (fullName: string) => M) => M;
} {
  const prefix = metricPrefix('agent');
  return {
    registers: [registry],
    once: (name, make) => {
      const existing = registry.getSingleMetric(`${prefix}${name}`);
      return (existing as ReturnType<typeof make> | undefined) ?? make(`${prefix}${name}`);
    },
  };
}

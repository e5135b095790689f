/**
 * Test support shared by the node checks' tests.
 */
import type { Registry } from '../../platform/index.js';

/** The value of `npu_fault_agent_<name>` with `labels` in `registry`; undefined when there is none. */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const found = await registry.getSingleMetric(`npu_fault_agent_${name}`)?.get();
  return found?.values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value))
    ?.value;
}

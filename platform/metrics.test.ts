import { describe, expect, it } from '@jest/globals';
import { Counter, register as globalRegistry } from 'prom-client';
import { createRegistry, metricPrefix } from './metrics.js';

describe('createRegistry', () => {
  it('holds the default process metrics under the component prefix, and only there', async () => {
    const before = (await globalRegistry.getMetricsAsJSON()).length;
    const registry = createRegistry('agent');
    const names = (await registry.getMetricsAsJSON()).map((metric) => metric.name);
    expect(names).toContain('npu_fault_agent_process_resident_memory_bytes');
    expect(names).toContain('npu_fault_agent_nodejs_eventloop_lag_seconds');
    expect(names.every((name) => name.startsWith('npu_fault_agent_'))).toBe(true);
    expect((await globalRegistry.getMetricsAsJSON()).length).toBe(before);
  });

  it('gives each call its own registry, so two components never collide', async () => {
    const a = createRegistry('controller');
    const b = createRegistry('controller');
    expect(a).not.toBe(b);
    const counter = new Counter({ name: 'npu_fault_controller_publishes_total', help: 'h', registers: [a] });
    counter.inc();
    expect(await a.metrics()).toContain('npu_fault_controller_publishes_total 1');
    expect(await b.metrics()).not.toContain('npu_fault_controller_publishes_total');
  });
});

describe('metricPrefix', () => {
  it.each(['ingest', 'ingest_function'])('accepts %p', (name) => {
    expect(metricPrefix(name)).toBe(`npu_fault_${name}_`);
  });
  it.each(['Ingest', 'ingest-function', '', '1agent'])('refuses %p', (name) => {
    expect(() => metricPrefix(name)).toThrow(/^metrics component: expected lower snake case/);
  });
});

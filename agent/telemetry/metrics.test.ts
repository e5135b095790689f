import { describe, expect, it } from '@jest/globals';
import { createRegistry } from '../../platform/index.js';
import type { DeviceTelemetry } from './device-telemetry.js';
import { createDeviceMetrics, deviceMetricNames } from './metrics.js';

function row(overrides: Partial<DeviceTelemetry> = {}): DeviceTelemetry {
  return {
    labels: { node: 'node-a', device: 'npu0', pci: '0000:C1:00.0', model: '910B3', family: '910B' },
    temperatureC: 61,
    powerW: 250,
    memoryUsedBytes: 1024,
    memoryTotalBytes: 4096,
    eccCorrectable: 4,
    eccUncorrectable: 1,
    pcieLinkUp: 1,
    health: 'ok',
    status: 'failed',
    reasons: ['ecc-uncorrectable'],
    ...overrides,
  };
}

const L = 'node="node-a",device="npu0",pci="0000:C1:00.0",model="910B3",family="910B"';

describe('createDeviceMetrics', () => {
  it('exposes every reading, one series per status and health word, and the active reasons', async () => {
    const registry = createRegistry('agent');
    createDeviceMetrics(registry, () => [row()]);
    const text = await registry.metrics();
    for (const line of [
      `npu_fault_agent_device_temperature_celsius{${L}} 61`,
      `npu_fault_agent_device_power_watts{${L}} 250`,
      `npu_fault_agent_device_memory_used_bytes{${L}} 1024`,
      `npu_fault_agent_device_memory_total_bytes{${L}} 4096`,
      `npu_fault_agent_device_ecc_errors_total{${L},type="correctable"} 4`,
      `npu_fault_agent_device_ecc_errors_total{${L},type="uncorrectable"} 1`,
      `npu_fault_agent_device_pcie_link_up{${L}} 1`,
      `npu_fault_agent_device_health{${L},health="ok"} 1`,
      `npu_fault_agent_device_health{${L},health="critical"} 0`,
      `npu_fault_agent_device_status{${L},status="failed"} 1`,
      `npu_fault_agent_device_status{${L},status="healthy"} 0`,
      `npu_fault_agent_device_reason{${L},reason="ecc-uncorrectable"} 1`,
    ])
      expect(text.split('\n')).toContain(line);
  });

  it('reads at every scrape: a recovered device leaves no old series at 1', async () => {
    const registry = createRegistry('agent');
    let current = row();
    createDeviceMetrics(registry, () => [current]);
    await registry.metrics();
    current = row({ status: 'healthy', reasons: [], temperatureC: null, health: 'vendor-specific' });
    const lines = (await registry.metrics()).split('\n');
    expect(lines).toContain(`npu_fault_agent_device_status{${L},status="healthy"} 1`);
    expect(lines).toContain(`npu_fault_agent_device_status{${L},status="failed"} 0`);
    expect(lines).toContain(`npu_fault_agent_device_health{${L},health="other"} 1`);
    expect(lines.filter((l) => l.startsWith('npu_fault_agent_device_reason{'))).toEqual([]);
    expect(lines.filter((l) => l.startsWith('npu_fault_agent_device_temperature_celsius{'))).toEqual([]);
  });

  it('leaves the status out while it is not known', async () => {
    const registry = createRegistry('agent');
    createDeviceMetrics(registry, () => [row({ status: null, reasons: [] })]);
    const lines = (await registry.metrics()).split('\n');
    expect(lines.filter((l) => l.startsWith('npu_fault_agent_device_status{'))).toEqual([]);
    expect(lines).toContain(`npu_fault_agent_device_temperature_celsius{${L}} 61`);
  });

  it('names exactly the metrics it registers', async () => {
    const registry = createRegistry('agent');
    createDeviceMetrics(registry, () => []);
    const registered = (await registry.getMetricsAsJSON())
      .filter((m) => m.name.startsWith('npu_fault_agent_device_'))
      .map((m) => [m.name, String(m.type)]);
    expect(Object.fromEntries(registered)).toEqual(deviceMetricNames());
  });
});

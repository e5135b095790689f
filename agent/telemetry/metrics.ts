/**
 * The agent's device series, in the shape npu-exporter and dcgm-exporter users know: one
 * target per node, read at scrape time, labels `node`, `device`, `pci`, `model`, `family`
 * (bounded by the node's devices). Status and health take one series per state (1 for the
 * current one, 0 for the others), so an alert selects `{status="failed"} == 1` and a change
 * never leaves an old series at 1.
 */
import { Counter, Gauge } from 'prom-client';
import { deviceStatusSchema } from '../../contracts/index.js';
import { metricPrefix, type Registry } from '../../platform/index.js';
import type { DeviceLabels, DeviceTelemetry } from './device-telemetry.js';

const LABELS = ['node', 'device', 'pci', 'model', 'family'] as const;
type Label = (typeof LABELS)[number];

/** The health words the series carry; any other word a tool prints reads as `other`. */
export const HEALTH_WORDS = ['ok', 'warning', 'alarm', 'critical', 'unknown', 'other'] as const;
const STATUSES = deviceStatusSchema.options;

/** The metric names, for the rules, the dashboard and their tests. */
export function deviceMetricNames(component = 'agent'): Record<string, 'gauge' | 'counter'> {
  const p = `${metricPrefix(component)}device_`;
  return {
    [`${p}temperature_celsius`]: 'gauge',
    [`${p}power_watts`]: 'gauge',
    [`${p}memory_used_bytes`]: 'gauge',
    [`${p}memory_total_bytes`]: 'gauge',
    [`${p}ecc_errors_total`]: 'counter',
    [`${p}pcie_link_up`]: 'gauge',
    [`${p}health`]: 'gauge',
    [`${p}status`]: 'gauge',
    [`${p}reason`]: 'gauge',
  };
}

/** Registers the device series; `devices` is read at every scrape. */
export function createDeviceMetrics(
  registry: Registry,
  devices: () => readonly DeviceTelemetry[],
  component = 'agent',
): void {
  const p = `${metricPrefix(component)}device_`;
  const registers = [registry];
  // Each collector reads afresh: nine reads of a few devices per scrape cost microseconds.
  const current = devices;
  const labels = (l: DeviceLabels): Record<Label, string> => ({
    node: l.node,
    device: l.device,
    pci: l.pci,
    model: l.model,
    family: l.family,
  });
  const reading = (name: string, help: string, value: (d: DeviceTelemetry) => number | null): void => {
    new Gauge({
      name: `${p}${name}`,
      help,
      labelNames: LABELS,
      registers,
      collect() {
        this.reset();
        for (const d of current()) {
          const v = value(d);
          if (v !== null) this.set(labels(d.labels), v);
        }
      },
    });
  };
  reading('temperature_celsius', 'Device temperature from the node tool (°C)', (d) => d.temperatureC);
  reading('power_watts', 'Device power draw from the node tool (W)', (d) => d.powerW);
  reading('memory_used_bytes', 'Device memory in use (HBM or DDR), bytes', (d) => d.memoryUsedBytes);
  reading('memory_total_bytes', 'Device memory size (HBM or DDR), bytes', (d) => d.memoryTotalBytes);
  reading(
    'pcie_link_up',
    'PCIe link of the device: 1 up, 0 down (absent: not reported)',
    (d) => d.pcieLinkUp,
  );
  new Counter({
    name: `${p}ecc_errors_total`,
    help: 'ECC errors since the driver loaded, by type (correctable, uncorrectable)',
    labelNames: [...LABELS, 'type'],
    registers,
    collect() {
      this.reset();
      for (const d of current()) {
        const l = labels(d.labels);
        if (d.eccCorrectable !== null) this.inc({ ...l, type: 'correctable' }, d.eccCorrectable);
        if (d.eccUncorrectable !== null) this.inc({ ...l, type: 'uncorrectable' }, d.eccUncorrectable);
      }
    },
  });
  new Gauge({
    name: `${p}health`,
    help: 'The node tool’s health word for the device: 1 for the current word, 0 for the others',
    labelNames: [...LABELS, 'health'],
    registers,
    collect() {
      this.reset();
      for (const d of current()) {
        const l = labels(d.labels);
        const word = (HEALTH_WORDS as readonly string[]).includes(d.health) ? d.health : 'other';
        for (const health of HEALTH_WORDS) this.set({ ...l, health }, health === word ? 1 : 0);
      }
    },
  });
  new Gauge({
    name: `${p}status`,
    help: 'The device’s published npu-fault status: 1 for the current one, 0 for the others (absent while the agent has no recent answer)',
    labelNames: [...LABELS, 'status'],
    registers,
    collect() {
      this.reset();
      for (const d of current()) {
        if (d.status === null) continue;
        const l = labels(d.labels);
        for (const status of STATUSES) this.set({ ...l, status }, status === d.status ? 1 : 0);
      }
    },
  });
  new Gauge({
    name: `${p}reason`,
    help: 'The device’s active published reasons, 1 each (CONTRACT §2.6 names)',
    labelNames: [...LABELS, 'reason'],
    registers,
    collect() {
      this.reset();
      for (const d of current()) {
        const l = labels(d.labels);
        for (const reason of d.reasons) this.set({ ...l, reason }, 1);
      }
    },
  });
}

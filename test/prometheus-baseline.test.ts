/**
 * The pipeline benchmark's Prometheus baseline on real binaries (the Debian packages
 * `prometheus` and `prometheus-alertmanager`): a device flipped unhealthy in the simulated
 * exporter reaches the webhook as exactly one alert, for exactly that device. No Kubernetes
 * is needed; it lives here with the other real-process tests. Without the binaries the
 * Prometheus suite is skipped, saying why in its title.
 *
 * The exporter's own checks need nothing installed and always run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { HEALTH_METRIC, startDeviceExporter, type DeviceExporter } from '../bench/pipeline/exporter.js';
import {
  ALERT_NAME,
  missingBaselineBinaries,
  startPrometheusBaseline,
  type FiringAlert,
  type PrometheusBaseline,
} from '../bench/pipeline/prometheus-baseline.js';

/** 3 nodes × 2 devices, all healthy; tests flip them in place (the exporter reads at scrape time). */
function fleet(): { node: string; devices: { id: string; healthy: boolean }[] }[] {
  return ['node-a', 'node-b', 'node-c'].map((node) => ({
    node,
    devices: [
      { id: 'npu0', healthy: true },
      { id: 'npu1', healthy: true },
    ],
  }));
}

const SERIES = new RegExp(`^${HEALTH_METRIC}\\{id="(\\d+)",node="([^"]*)"\\} ([01])$`);

describe('device exporter', () => {
  const nodes = fleet();
  let exporter: DeviceExporter;
  beforeAll(async () => {
    exporter = await startDeviceExporter(() => nodes);
  });
  afterAll(async () => {
    await exporter.close();
  });

  it('serves each node its npu-exporter-shaped gauge, computed at scrape time', async () => {
    nodes[1]!.devices[1]!.healthy = false;
    expect(exporter.targets()).toEqual([
      { node: 'node-a', path: '/metrics/node-a' },
      { node: 'node-b', path: '/metrics/node-b' },
      { node: 'node-c', path: '/metrics/node-c' },
    ]);
    const response = await fetch(`http://127.0.0.1:${exporter.port}/metrics/node-b`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const lines = (await response.text()).trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^# HELP ${HEALTH_METRIC} \\S`));
    expect(lines[1]).toBe(`# TYPE ${HEALTH_METRIC} gauge`);
    const series = lines.slice(2).map((line) => {
      const match = SERIES.exec(line);
      if (match === null) throw new Error(`not a ${HEALTH_METRIC} sample: ${line}`);
      return { id: match[1], node: match[2], value: Number(match[3]) };
    });
    expect(series).toEqual([
      { id: '0', node: 'node-b', value: 1 },
      { id: '1', node: 'node-b', value: 0 },
    ]);
  });

  it('answers 404 for a node it does not have', async () => {
    const unknown = await fetch(`http://127.0.0.1:${exporter.port}/metrics/node-z`);
    expect(unknown.status).toBe(404);
    await unknown.arrayBuffer();
    const elsewhere = await fetch(`http://127.0.0.1:${exporter.port}/metrics`);
    expect(elsewhere.status).toBe(404);
    await elsewhere.arrayBuffer();
  });
});

const missing = missingBaselineBinaries();
const SKIP_REASON = `[skipped: not installed: ${missing.join(', ')}]`;
if (missing.length > 0) process.stderr.write(`prometheus-baseline.test.ts: ${SKIP_REASON}\n`);
const describeWithPrometheus = missing.length === 0 ? describe : describe.skip;

describeWithPrometheus(`Prometheus baseline${missing.length > 0 ? ` ${SKIP_REASON}` : ''}`, () => {
  const nodes = fleet();
  let exporter: DeviceExporter;
  let baseline: PrometheusBaseline | undefined;
  const log: string[] = [];

  beforeAll(async () => {
    exporter = await startDeviceExporter(() => nodes);
    baseline = await startPrometheusBaseline({
      exporterPort: exporter.port,
      targets: exporter.targets(),
      log: (line) => log.push(line),
    });
    await baseline.waitReady(60_000);
  }, 90_000);
  afterAll(async () => {
    await baseline?.stop();
    await exporter.close();
  });

  it('states its configuration, read from the running binaries', () => {
    const configuration = baseline!.configuration;
    expect(configuration['prometheus.version']).toMatch(/^prometheus, version \d+\.\d+/);
    expect(configuration['alertmanager.version']).toMatch(/^alertmanager, version \d+\.\d+/);
    expect(configuration).toMatchObject({
      'scrape_interval.s': 5,
      'evaluation_interval.s': 10,
      'alert.for.s': 0,
      'alertmanager.group_wait.s': 0,
      'scrape.targets': 3,
    });
    // Read back from Prometheus's /api/v1/status/flags, so a duration, not our placeholder.
    expect(configuration['rules.alert.resend-delay']).toMatch(/^\d+[smh]/);
  });

  it('delivers exactly the flipped device to the webhook, seconds after the flip', async () => {
    const b = baseline!;
    const isFlipped = (alert: FiringAlert): boolean => alert.node === 'node-b' && alert.device === '1';
    const arrived = new Promise<FiringAlert>((resolve, reject) => {
      const timer = setTimeout(() => {
        unsubscribe();
        reject(new Error(`no alert for node-b/1 within 60 s; webhook got ${JSON.stringify(b.firing)}`));
      }, 60_000);
      const unsubscribe = b.onFiring((alert) => {
        if (!isFlipped(alert)) return;
        clearTimeout(timer);
        unsubscribe();
        resolve(alert);
      });
    });
    expect(b.firing).toEqual([]);

    const flippedAt = Date.now();
    nodes[1]!.devices[1]!.healthy = false;
    const alert = await arrived;

    const latencyMs = alert.receivedAt - flippedAt;
    console.log(
      `prometheus baseline: flip → webhook ${latencyMs} ms (flip → startsAt ${Date.parse(alert.startsAt) - flippedAt} ms)`,
    );
    expect(latencyMs).toBeGreaterThan(0);
    // Every healthy device's alert would have come from the same evaluation: none did.
    expect(b.firing).toEqual([alert]);
    // And Prometheus itself has this one alert active, nothing for the healthy devices.
    const response = await fetch(`${b.urls.prometheus}/api/v1/alerts`);
    const body = (await response.json()) as { data: { alerts: { labels: Record<string, string> }[] } };
    expect(body.data.alerts.map(({ labels }) => [labels.alertname, labels.node, labels.id])).toEqual([
      [ALERT_NAME, 'node-b', '1'],
    ]);
  }, 90_000);
});

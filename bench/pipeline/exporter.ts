/**
 * The simulated nodes' device health as Prometheus metrics, for the Prometheus baseline of
 * the pipeline benchmark: one loopback HTTP server serves every node's exposition at
 * `/metrics/<node>`, computed from `source()` at scrape time, so a fault is visible to the
 * very next scrape and the baseline's latency is Prometheus's and Alertmanager's alone.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './loopback.js';

/** One simulated node and its devices' health now. */
export interface ExportedNode {
  node: string;
  devices: readonly { id: string; healthy: boolean }[];
}

/** A running exporter. */
export interface DeviceExporter {
  port: number;
  /** One scrape target per node `source()` yields now: its metrics path on `port`. */
  targets(): { node: string; path: string }[];
  close(): Promise<void>;
}

/**
 * The gauge mirrors Huawei's Ascend npu-exporter (`npu_chip_info_health_status`, 1 healthy,
 * 0 unhealthy, one series per chip); the label names `id` and `node` are ours.
 */
export const HEALTH_METRIC = 'npu_chip_info_health_status';

const METRICS_PREFIX = '/metrics/';
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** The metrics path of `node` (URL-encoded, so any node name is one path segment). */
export function metricsPath(node: string): string {
  return `${METRICS_PREFIX}${encodeURIComponent(node)}`;
}

/**
 * The Prometheus text exposition of one node: `id` is the device's index in its node's list
 * (npu-exporter's chip id), the value 1 healthy and 0 unhealthy.
 */
export function renderNodeMetrics(entry: ExportedNode): string {
  const lines = [
    `# HELP ${HEALTH_METRIC} Health of the chip: 1 healthy, 0 unhealthy (the shape of Ascend npu-exporter).`,
    `# TYPE ${HEALTH_METRIC} gauge`,
  ];
  const node = escapeLabelValue(entry.node);
  entry.devices.forEach((device, index) => {
    lines.push(`${HEALTH_METRIC}{id="${index}",node="${node}"} ${device.healthy ? 1 : 0}`);
  });
  return `${lines.join('\n')}\n`;
}

/** Starts the exporter on 127.0.0.1 on a free port. */
export async function startDeviceExporter(source: () => Iterable<ExportedNode>): Promise<DeviceExporter> {
  const find = (node: string): ExportedNode | undefined => {
    for (const entry of source()) if (entry.node === node) return entry;
    return undefined;
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = new URL(request.url ?? '/', 'http://exporter').pathname;
    const entry =
      request.method === 'GET' && path.startsWith(METRICS_PREFIX)
        ? find(safeDecode(path.slice(METRICS_PREFIX.length)))
        : undefined;
    if (entry === undefined) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end(`no such node: ${path}\n`);
      return;
    }
    response.writeHead(200, { 'content-type': CONTENT_TYPE }).end(renderNodeMetrics(entry));
  });
  const port = await listenOnLoopback(server, 'exporter');
  return {
    port,
    targets: () => Array.from(source(), ({ node }) => ({ node, path: metricsPath(node) })),
    close: async () => {
      // Prometheus keeps its scrape connections alive: close them, or close() waits for them.
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** A path segment decoded, or one no node is named (a malformed escape is just a 404). */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return '\0';
  }
}

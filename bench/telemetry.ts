/**
 * `npm run bench:telemetry`: the size and render time of the device series (issue 28) at a
 * fleet of `--nodes` × `--devices`, both ways they could be exported: by each agent for its own
 * devices (what ships: one scrape target per node) and by one process for the whole fleet (the
 * alternative, a controller exporting every device). Each device has every reading, a status and,
 * on one in ten, a reason. Render time is the median of `--rounds` renders of prom-client's
 * registry (CPU in-process; an agent's whole /metrics adds its process series).
 *
 *   npm run bench:telemetry -- [--nodes 1000] [--devices 8] [--rounds 21]
 */
import { parseArgs } from 'node:util';
import { createDeviceMetrics, type DeviceTelemetry } from '../agent/telemetry/index.js';
import { Registry } from '../platform/index.js';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '1000' },
    devices: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '21' },
  },
});
const NODES = Number(values.nodes);
const DEVICES = Number(values.devices);
const ROUNDS = Number(values.rounds);
if (!(NODES >= 1 && DEVICES >= 1 && ROUNDS >= 3))
  throw new Error('--nodes >= 1, --devices >= 1, --rounds >= 3');

function devicesOf(node: number): DeviceTelemetry[] {
  return Array.from({ length: DEVICES }, (_, d) => ({
    labels: {
      node: `gpu-node-${String(node).padStart(5, '0')}`,
      device: `npu${d}`,
      pci: `0000:${(0xc1 + d).toString(16).toUpperCase()}:00.0`,
      model: '910B3',
      family: '910B',
    },
    temperatureC: 50 + d,
    powerW: 210.5,
    memoryUsedBytes: 20480 * 2 ** 20,
    memoryTotalBytes: 65536 * 2 ** 20,
    eccCorrectable: 3,
    eccUncorrectable: 0,
    pcieLinkUp: 1,
    health: 'ok',
    status: (node * DEVICES + d) % 10 === 0 ? 'degraded' : 'healthy',
    reasons: (node * DEVICES + d) % 10 === 0 ? ['high-temp'] : [],
  }));
}

async function measure(rows: DeviceTelemetry[]): Promise<{ bytes: number; series: number; ms: number }> {
  const registry = new Registry();
  createDeviceMetrics(registry, () => rows);
  let text = '';
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    text = await registry.metrics();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return {
    bytes: Buffer.byteLength(text),
    series: text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length,
    ms: Math.round((times[Math.floor(times.length / 2)] ?? 0) * 1000) / 1000,
  };
}

const perAgent = await measure(devicesOf(0));
const fleet = await measure(Array.from({ length: NODES }, (_, n) => devicesOf(n)).flat());
process.stdout.write(
  `${JSON.stringify({
    nodes: NODES,
    devicesPerNode: DEVICES,
    perAgentTarget: perAgent,
    allAgents: { targets: NODES, bytes: perAgent.bytes * NODES, series: perAgent.series * NODES },
    oneFleetTarget: fleet,
  })}\n`,
);

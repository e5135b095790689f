/**
 * `npm run bench:capacity`: the controller's engine in-process with synthetic input for a
 * large cluster (default 10,000 nodes × 8 devices, one snapshot per node per second): CPU per
 * snapshot, memory per device, and the published document's size and render time as more
 * nodes fail, from which docs/capacity.md derives the write rate and the watch egress.
 *
 * Snapshots are built outside the timed sections; only `observe`, `tick` and `document` are
 * timed (process CPU time, so other load on the machine inflates wall time, not the figures).
 *
 *   npm run bench:capacity -- [--nodes 10000] [--rounds 8]
 */
import { parseArgs } from 'node:util';
import { createEngine } from '../core/engine/index.js';
import { at, npuSnapshot, type NpuSpec } from '../core/engine/testing.js';
import type { Snapshot } from '../contracts/index.js';

const { values } = parseArgs({
  options: { nodes: { type: 'string', default: '10000' }, rounds: { type: 'string', default: '8' } },
});
const NODES = Number(values.nodes);
const ROUNDS = Number(values.rounds);
if (!(NODES >= 10 && ROUNDS >= 3)) throw new Error('--nodes >= 10, --rounds >= 3');

const PUBLISHER = { identity: 'bench', term: 1 };
const gc = (globalThis as { gc?: () => void }).gc;

/** One round of snapshots (one per node) at second `t`; `failing(i)` marks nodes with a dead link. */
function round(t: number, failing: (i: number) => boolean): Snapshot[] {
  const out: Snapshot[] = [];
  for (let i = 0; i < NODES; i++) {
    const npus: NpuSpec[] = Array.from({ length: 8 }, (_, npu) => ({
      npu,
      temp: 50 + ((i + npu + t) % 7),
      ...(failing(i) && npu === 3 ? { link: 'down' as const, power: 90 } : {}),
    }));
    out.push(npuSnapshot({ node: `node-${i}`, boot: 'b1', seq: t + 1, t }, npus));
  }
  return out;
}

/** CPU milliseconds (user + system) of this process. */
function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

// Every round is built before anything is timed, so building them (and collecting their
// garbage) stays out of the figures.
const engine = createEngine();
gc?.();
const heapBefore = process.memoryUsage().heapUsed;
let rounds: Snapshot[][] | undefined = Array.from({ length: ROUNDS }, (_, r) => round(r, () => false));
const observeCpu: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const start = cpuMs();
  for (const snapshot of rounds[r] ?? []) engine.observe(snapshot, at(r) + 50);
  engine.tick(at(r) + 100);
  observeCpu.push(cpuMs() - start);
}
rounds = undefined;
gc?.();
const heapAfter = process.memoryUsage().heapUsed;
// The first two rounds create the state (and warm the JIT); the rest is the steady state.
const steady = observeCpu.slice(2);
const perSnapshotUs = (steady.reduce((a, b) => a + b, 0) * 1000) / (steady.length * NODES);

const documents: Record<string, unknown>[] = [];
for (const percent of [0, 1, 5, 20, 50]) {
  // A fresh engine per row: two healthy rounds, then a round in which `percent` of the nodes
  // lose a PCIe link (failed at once), so each row shows that share failing and no more.
  const rowEngine = createEngine();
  const every = Math.round(100 / Math.max(percent, 1));
  for (let r = 0; r < 3; r++) {
    const snapshots = round(r, (i) => percent > 0 && r === 2 && i % every === 0);
    for (const snapshot of snapshots) rowEngine.observe(snapshot, at(r) + 50);
    rowEngine.tick(at(r) + 100);
  }
  const start = cpuMs();
  const document = rowEngine.document(at(3), PUBLISHER);
  const json = JSON.stringify(document);
  const renderMs = cpuMs() - start;
  const bytes = Buffer.byteLength(json);
  // Writes: about one per 1.1 s tick when something changes (heartbeat at least once a second),
  // capped by the budget's 256 KiB/s average (contract §5.4).
  const writesPerSecond = Math.min(1 / 1.1, (256 * 1024) / bytes);
  documents.push({
    failingNodesPercent: percent,
    listedNodes: Object.keys(document.nodes).length,
    omittedNodes: (document as { omitted_nodes?: number }).omitted_nodes ?? 0,
    bytes,
    renderCpuMs: Math.round(renderMs * 10) / 10,
    writesPerSecond: Math.round(writesPerSecond * 100) / 100,
    egressPerWatcherKiBPerSecond: Math.round((bytes * writesPerSecond) / 1024),
  });
}

console.log(
  JSON.stringify({
    nodes: NODES,
    devices: NODES * 8,
    rounds: ROUNDS,
    observeCpuMsPerRound: steady.map((x) => Math.round(x)),
    cpuMicrosecondsPerSnapshot: Math.round(perSnapshotUs * 10) / 10,
    coresAt1Hz: Math.round(((perSnapshotUs * NODES) / 1e6) * 100) / 100,
    heapBytesPerDevice: gc ? Math.round((heapAfter - heapBefore) / (NODES * 8)) : 'run with --expose-gc',
    trackedDevices: engine.deviceCount(),
    documents,
  }),
);

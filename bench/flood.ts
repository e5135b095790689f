/**
 * `npm run bench:flood`: what one flooding agent can make a controller hold (issue 26).
 *
 * 1. In process: the engine's heap per node at `max_devices_per_node` (32 GPUs, every one
 *    with a latched XID and its ECC baselines) and at 8 devices, after a full collection.
 * 2. A real controller process (the compiled build, the shipped NODE_OPTIONS) on the test
 *    control plane, fed over HTTP as the ingest function feeds it: `--honest` nodes of 8
 *    devices once a second, one of them with XID 79, and one flooding node that sends, every
 *    second, a snapshot of 512 GPUs (dropped: too many devices) and `--burst` snapshots of 32
 *    GPUs with fresh uuids. Reports the controller's RSS before and during the flood, the
 *    devices it holds and has retired, and whether the other node's XID 79 stays published.
 *
 *   npm run bench:flood -- [--honest 200] [--seconds 60] [--burst 20] [--tsx]
 *
 * Prints one JSON line. Not part of the test suite.
 */
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import {
  CONTROLLER_TOKEN_AUDIENCE,
  DEFAULT_MAX_DEVICES_PER_NODE,
  type PublishedDocument,
} from '../contracts/index.js';
import { createEngine } from '../core/engine/index.js';
import { at, gpuSnapshot as engineGpuSnapshot, npuSnapshot } from '../core/engine/testing.js';
import { controllerNamespace } from './plane.js';
import { buildControlPlane, startControlPlane, stopControlPlane } from '../hack/control-plane.js';
import { shippedNode } from '../hack/shipped-node.js';
import { kubeConfigWithToken, startControllerProcess, writeKubeConfig } from '../stack/index.js';

const NS = 'ai-infra';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
const MiB = 1024 * 1024;

const { values } = parseArgs({
  options: {
    honest: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '60' },
    burst: { type: 'string', default: '20' },
    tsx: { type: 'boolean', default: false },
  },
});
const HONEST = Number(values.honest);
const SECONDS = Number(values.seconds);
const BURST = Number(values.burst);
if (!(Number.isInteger(HONEST) && HONEST >= 1 && SECONDS > 0 && Number.isInteger(BURST) && BURST >= 1))
  throw new Error('--honest >= 1, --seconds > 0, --burst >= 1');

/** Heap per node of an engine holding `nodes` nodes of `devices` GPUs each (latched XID 79 on every one). */
function heapPerNode(nodes: number, devices: number): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc (npm run bench:flood does)');
  const engine = createEngine();
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let n = 0; n < nodes; n++) {
    const gpus = Array.from({ length: devices }, (_, index) => ({
      index,
      corrected: 3,
      xids: [{ xid: 79, at: null }],
    }));
    for (let s = 1; s <= 2; s++)
      engine.observe(engineGpuSnapshot({ node: `n-${n}`, seq: s, t: s }, gpus), at(s));
  }
  engine.document(at(2), { identity: 'bench', term: 1 });
  gc();
  const bytes = process.memoryUsage().heapUsed - before;
  if (engine.deviceCount() !== nodes * devices) throw new Error('engine did not hold every device');
  return Math.round(bytes / nodes);
}

/** One sample of the exposition. */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? Number.NaN);
}

/** The sample of `name` with `label` among its labels. */
function labelled(text: string, name: string, label: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(label));
  return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? 0);
}

function sumOf(text: string, name: string): number {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

async function main(): Promise<void> {
  const engineFigures = {
    heap_per_node_at_cap_bytes: heapPerNode(1000, DEFAULT_MAX_DEVICES_PER_NODE),
    heap_per_node_8_devices_bytes: heapPerNode(1000, 8),
  };
  process.stderr.write(`[bench] engine: ${JSON.stringify(engineFigures)}\n`);

  const stateDir = await mkdtemp(join(tmpdir(), 'npu-fault-bench-flood-'));
  await buildControlPlane((l) => process.stderr.write(`${l}\n`));
  if (!values.tsx) await run('npm', ['run', 'build'], { cwd: ROOT });
  const state = await startControlPlane({ stateDir, log: (l) => process.stderr.write(`${l}\n`) });
  let controller: Awaited<ReturnType<typeof startControllerProcess>> | undefined;
  try {
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(state.kubeconfig);
    const { core, token } = await controllerNamespace(admin, NS);
    const functionToken = await token('npu-fault-function', [CONTROLLER_TOKEN_AUDIENCE]);
    controller = startControllerProcess({
      identity: 'flood-1',
      kubeconfig: writeKubeConfig(kubeConfigWithToken(admin, await token('npu-fault-controller'))),
      args: [`--namespace=${NS}`],
      ...(values.tsx ? {} : { entry: join(ROOT, 'dist/cli/run.js') }),
      env: { NODE_OPTIONS: shippedNode(join(ROOT, 'k8s/controller/deployment.yaml')).nodeOptions },
    });
    const url = `http://127.0.0.1:${await controller.port('observations')}`;
    const metricsUrl = `http://127.0.0.1:${await controller.port('metrics')}/metrics`;
    await controller.waitForLog((l) => l.msg === 'started leading', 60_000, 'leading');
    const post = async (snapshots: unknown[]): Promise<void> => {
      const response = await fetch(`${url}/v1/observations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${functionToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ observations: snapshots.map((snapshot) => ({ snapshot })) }),
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok) throw new Error(`observations: ${response.status} ${await response.text()}`);
    };
    const scrape = async (): Promise<string> => (await fetch(metricsUrl)).text();

    const honest = Array.from({ length: HONEST }, (_, i) => `honest-${String(i).padStart(4, '0')}`);
    let seq = 0;
    let floodSeq = 0;
    const second = async (flood: boolean): Promise<void> => {
      seq++;
      const t = Date.now();
      const snapshots: unknown[] = honest.map((node, i) =>
        npuSnapshot(
          { node, boot: 'b', seq, t: 0, collectedAt: new Date(t).toISOString() },
          Array.from({ length: 8 }, (_, npu) => ({
            npu,
            ...(i === 0 && npu === 3 ? { link: 'down' as const, power: 90 } : {}),
          })),
        ),
      );
      for (let i = 0; i < snapshots.length; i += 100) await post(snapshots.slice(i, i + 100));
      if (!flood) return;
      const gpus = (count: number, prefix: string): object[] =>
        Array.from({ length: count }, (_, index) => ({
          index,
          uuid: `GPU-${prefix}-${index}`,
          temperature_gpu: 40,
        }));
      const floodSnapshot = (count: number): object => ({
        schema: 'hdc.health/v1',
        node: 'flooder',
        boot_id: 'evil',
        seq: ++floodSeq,
        collected_at: new Date().toISOString(),
        collector: 'nvidia-smi',
        payload: { family: 'nvidia', gpus: gpus(count, `${floodSeq}`) },
      });
      await post([floodSnapshot(512)]);
      await post(Array.from({ length: BURST }, () => floodSnapshot(DEFAULT_MAX_DEVICES_PER_NODE)));
    };
    const pace = async (flood: boolean, seconds: number, onSecond?: () => Promise<void>): Promise<void> => {
      for (let s = 0; s < seconds; s++) {
        const start = Date.now();
        await second(flood);
        await onSecond?.();
        const left = 1000 - (Date.now() - start);
        if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
      }
    };

    const rss = async (): Promise<number> =>
      sample(await scrape(), 'npu_fault_controller_process_resident_memory_bytes');
    process.stderr.write(`[bench] ${HONEST} honest nodes: 15 s to warm up, then ${SECONDS} s measured\n`);
    await pace(false, 15);
    const rssStart = await rss();
    let honestPeak = rssStart;
    await pace(false, SECONDS, async () => void (honestPeak = Math.max(honestPeak, await rss())));
    const rssBefore = await rss();
    process.stderr.write(`[bench] + the flood for ${SECONDS} s\n`);
    let peak = rssBefore;
    await pace(true, SECONDS, async () => void (peak = Math.max(peak, await rss())));
    const after = await scrape();
    const cm = await core.readNamespacedConfigMap({ name: 'npu-fault-status-v3', namespace: NS });
    const doc = JSON.parse(cm.data?.['fault.json'] ?? '{}') as PublishedDocument;
    const failing = honest[0] as string;
    console.log(
      JSON.stringify({
        ...engineFigures,
        honest_nodes: HONEST,
        flood_seconds: SECONDS,
        flood_snapshots: floodSeq,
        rss_start_mib: +(rssStart / MiB).toFixed(1),
        rss_honest_peak_mib: +(honestPeak / MiB).toFixed(1),
        rss_before_mib: +(rssBefore / MiB).toFixed(1),
        rss_after_mib: +(sample(after, 'npu_fault_controller_process_resident_memory_bytes') / MiB).toFixed(
          1,
        ),
        rss_peak_mib: +(peak / MiB).toFixed(1),
        devices_held: sumOf(after, 'npu_fault_controller_devices'),
        devices_retired: sample(after, 'npu_fault_controller_devices_retired_total'),
        dropped_too_many_devices: labelled(
          after,
          'npu_fault_controller_observations_total',
          'result="too-many-devices"',
        ),
        other_node_failure_published: doc.nodes?.[failing]?.npus.some((d) => d.status === 'failed') === true,
        document_bytes: sample(after, 'npu_fault_controller_document_bytes'),
        omitted_nodes: doc.omitted_nodes ?? 0,
      }),
    );
  } finally {
    await controller?.stop('SIGTERM');
    await stopControlPlane(stateDir).catch(() => undefined);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:flood: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

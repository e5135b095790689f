/**
 * `npm run bench:controller -- [--nodes N] [--seconds S] [--warmup S]`: the controller under
 * load (issue "Controller", Performance): a real control plane (hack/), two replicas as real
 * processes under the shipped RBAC, N accelerator Nodes of 8 devices, each node's snapshot
 * posted once a second over HTTP to both replicas (batches of 50, as the ingest function's
 * micro-batching sends them, spread over the second as unsynchronised agents are), and a fault injected every 3 s on a random device (its PCIe
 * link down, restored 10 s later).
 *
 * Reports for the leader: CPU (share of one core, from process_cpu_seconds_total), peak RSS,
 * event-loop lag, and the pipeline latency (collected_at → status write acknowledged) from its
 * own histogram (p50/p95/p99 for devices becoming failed and for other changes), plus the same
 * latency seen from outside (collected_at of the first snapshot carrying a fault → a watcher of
 * the ConfigMap sees it), writes/s and bytes/s, and how busy the machine was (a run above 85%
 * CPU is marked saturated). The replicas run the compiled build (`npm run build`, as an image
 * runs it); `--tsx` runs the sources through tsx instead. Prints one JSON line. Not part of
 * the test suite.
 *
 * `--failover` (issue "End to end", the failover drill): both replicas record every accepted
 * snapshot (`--record-observations`); halfway through the measured seconds the leader (the
 * Lease holder) is SIGKILLed while the load goes on. Adds a `failover` object: the takeover time
 * (kill → the first document the other identity publishes, as the watcher sees it), the
 * watcher's latency for faults first collected in the 10 s after the kill against those before
 * it, and the transition check (bench/failover.ts): the survivor's recording replayed through
 * `npu-fault replay` against the transitions the watcher saw published over the whole run
 * (lost and duplicated expected 0). The leader's figures are then the survivor's.
 */
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CONTROLLER_TOKEN_AUDIENCE, type PublishedDocument, type Snapshot } from '../contracts/index.js';
import { npuSnapshot } from '../core/engine/testing.js';
import { controllerNamespace } from './plane.js';
import { buildControlPlane, startControlPlane, stopControlPlane } from '../hack/control-plane.js';
import { shippedNode } from '../hack/shipped-node.js';
import { PublishedTransitions, compareTransitions, parseReplay } from './failover.js';
import { histogramSummary } from './pipeline/histogram.js';
import { percentile } from './pipeline/summary.js';
import {
  startControllerProcess,
  writeKubeConfig,
  type ControllerProcess,
  kubeConfigWithToken,
} from '../stack/index.js';

const NS = 'ai-infra';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
const BATCH = 50;

function options(): {
  nodes: number;
  seconds: number;
  warmup: number;
  tsx: boolean;
  nodeOptions: string;
  failover: boolean;
} {
  const { values } = parseArgs({
    options: {
      nodes: { type: 'string' },
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      tsx: { type: 'boolean' },
      'node-options': { type: 'string' },
      failover: { type: 'boolean' },
    },
  });
  const nodes = Number(values.nodes ?? 1000);
  const seconds = Number(values.seconds ?? 60);
  const warmup = Number(values.warmup ?? 20);
  if (!Number.isInteger(nodes) || nodes < 1 || !(seconds > 0) || !(warmup >= 0))
    throw new Error('--nodes >= 1, --seconds > 0, --warmup >= 0');
  return {
    nodes,
    seconds,
    warmup,
    tsx: values.tsx === true,
    nodeOptions: values['node-options'] ?? shippedNodeOptions(),
    failover: values.failover === true,
  };
}

/** NODE_OPTIONS as the shipped Deployment sets them (k8s/controller/deployment.yaml). */
function shippedNodeOptions(): string {
  return shippedNode(join(ROOT, 'k8s/controller/deployment.yaml')).nodeOptions;
}

/** Machine CPU counters (jiffies) from /proc/stat. */
function machineCpu(): { idle: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return { idle: (fields[3] ?? 0) + (fields[4] ?? 0), total: fields.reduce((a, b) => a + b, 0) };
}

/** One sample value from an exposition. */
function sample(text: string, name: string, labels = ''): number {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}${labels} `) || (labels === '' && line.startsWith(`${name} `)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return Number.NaN;
}

/** p50/p95/p99 (ms) and count of the publish-latency histogram of one kind, between two scrapes. */
function latencySummary(
  text: string,
  baseline: string,
  kind: 'failed' | 'other',
): { p50: number; p95: number; p99: number; count: number } {
  const s = histogramSummary(baseline, text, 'npu_fault_controller_publish_latency_seconds', [
    `kind="${kind}"`,
  ]);
  const ms = (v: number | null): number => (v === null ? Number.NaN : Math.round(v));
  return { p50: ms(s.p50), p95: ms(s.p95), p99: ms(s.p99), count: s.count };
}

async function main(): Promise<void> {
  const opts = options();
  const stateDir = await mkdtemp(join(tmpdir(), 'npu-fault-bench-plane-'));
  const journalDir = await mkdtemp(join(tmpdir(), 'npu-fault-bench-journal-'));
  const replicas: ControllerProcess[] = [];
  let timer: NodeJS.Timeout | undefined;
  try {
    await buildControlPlane((l) => process.stderr.write(`${l}\n`));
    // The replicas run the compiled build, as an image does (--tsx: the sources through tsx).
    if (!opts.tsx) {
      process.stderr.write('[bench] npm run build\n');
      await run('npm', ['run', 'build'], { cwd: ROOT });
    }
    const state = await startControlPlane({ stateDir, log: (l) => process.stderr.write(`${l}\n`) });
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(state.kubeconfig);
    const { core, token } = await controllerNamespace(admin, NS);
    const functionToken = await token('npu-fault-function', [CONTROLLER_TOKEN_AUDIENCE]);
    const names = Array.from({ length: opts.nodes }, (_, i) => `bench-${String(i).padStart(4, '0')}`);
    process.stderr.write(`[bench] creating ${opts.nodes} Nodes\n`);
    for (let i = 0; i < names.length; i += 25) {
      await Promise.all(
        names.slice(i, i + 25).map((name) =>
          core.createNode({
            body: {
              metadata: { name },
              status: {
                capacity: { 'huawei.com/Ascend910': '8' },
                conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'bench' }],
              },
            },
          }),
        ),
      );
    }
    for (const identity of ['bench-1', 'bench-2']) {
      const kubeconfig = writeKubeConfig(kubeConfigWithToken(admin, await token('npu-fault-controller')));
      const replica = startControllerProcess({
        identity,
        kubeconfig,
        args: [
          `--namespace=${NS}`,
          ...(opts.failover ? [`--record-observations=${join(journalDir, `${identity}.jsonl`)}`] : []),
        ],
        ...(opts.tsx ? {} : { entry: join(ROOT, 'dist/cli/run.js') }),
        env: { NODE_OPTIONS: opts.nodeOptions },
      });
      replicas.push(replica);
    }
    const urls: string[] = [];
    for (const r of replicas) urls.push(`http://127.0.0.1:${await r.port('observations')}`);
    const metricsUrls: string[] = [];
    for (const r of replicas) metricsUrls.push(`http://127.0.0.1:${await r.port('metrics')}/metrics`);

    // Wait until a leader publishes (so start-up is not measured).
    for (const r of replicas) await r.waitForLog((l) => l.msg === 'seeded', 60_000, 'seeded');
    await Promise.any(
      replicas.map((r) => r.waitForLog((l) => l.msg === 'started leading', 60_000, 'leading')),
    );

    // The fleet: one snapshot object per node, mutated each second.
    const snapshots: Snapshot[] = names.map((node) =>
      npuSnapshot(
        { node, boot: 'b1', seq: 0, t: 0 },
        Array.from({ length: 8 }, (_, npu) => ({ npu })),
      ),
    );
    type Fault = { node: number; npu: number; firstCollected?: number; seen?: number; restoreAt: number };
    const faults = new Map<string, Fault>();
    // Every fault injected, kept after it is restored (the failover drill's latency windows).
    const injectedFaults: Fault[] = [];
    const published = new PublishedTransitions(names, 8);
    const publishers: { identity: string; seenAt: number }[] = [];
    const latencies: number[] = [];
    let injectedCount = 0;
    let failedPosts = 0;
    // Real agents are not synchronised: each batch goes out at its own offset within the
    // second (batch i at i × 1000 / batches ms), stamped when it is sent.
    const batches = Math.ceil(snapshots.length / BATCH);
    const post = async (): Promise<void> => {
      const secondStart = Date.now();
      const requests: Promise<unknown>[] = [];
      for (let b = 0; b < batches; b++) {
        const offset = secondStart + (b * 1000) / batches - Date.now();
        if (offset > 0) await new Promise((resolve) => setTimeout(resolve, offset));
        const collectedAt = new Date().toISOString();
        const collectedMs = Date.parse(collectedAt);
        const slice = snapshots.slice(b * BATCH, (b + 1) * BATCH);
        for (const s of slice) {
          (s as { seq: number }).seq++;
          (s as { collected_at: string }).collected_at = collectedAt;
        }
        for (const f of faults.values()) {
          if (f.node >= b * BATCH && f.node < (b + 1) * BATCH) f.firstCollected ??= collectedMs;
        }
        const body = JSON.stringify({ observations: slice.map((snapshot) => ({ snapshot })) });
        for (const url of urls) {
          requests.push(
            fetch(`${url}/v1/observations`, {
              method: 'POST',
              headers: { authorization: `Bearer ${functionToken}`, 'content-type': 'application/json' },
              body,
              signal: AbortSignal.timeout(5000),
            })
              .then((r) => r.arrayBuffer())
              // Handled now: a killed replica refuses at once, before the batches are settled below.
              .catch(() => void failedPosts++),
          );
        }
      }
      await Promise.allSettled(requests);
    };
    const setLink = (node: number, npu: number, down: boolean): void => {
      const payload = snapshots[node]!.payload as {
        npus: { pcie: { link: string | null }; power_w: number | null }[];
      };
      payload.npus[npu]!.pcie.link = down ? 'down' : 'up';
    };
    // A watcher of the ConfigMap: when each injected fault is first seen failed.
    const watch = new k8s.Watch(admin);
    let writes = 0;
    let bytes = 0;
    let counting = false;
    const abortWatch = await watch.watch(
      `/api/v1/namespaces/${NS}/configmaps`,
      { fieldSelector: 'metadata.name=npu-fault-status-v3' },
      (_type: string, cm: k8s.V1ConfigMap) => {
        const json = cm.data?.['fault.json'];
        if (!json) return;
        const now = Date.now();
        if (counting) {
          writes++;
          bytes += Buffer.byteLength(json);
        }
        const doc = JSON.parse(json) as PublishedDocument;
        if (opts.failover) {
          published.observe(doc, now);
          publishers.push({ identity: doc.publisher.identity, seenAt: now });
        }
        // Restored faults too: one restored while no replica leads is first published after it.
        for (const f of injectedFaults) {
          if (f.seen !== undefined || f.firstCollected === undefined) continue;
          const status = doc.nodes[names[f.node]!]?.npus.find((d) => d.id === `npu${f.npu}`)?.status;
          if (status === 'failed') {
            f.seen = now;
            if (counting) latencies.push(now - f.firstCollected);
          }
        }
      },
      () => undefined,
    );

    const started = Date.now();
    const total = (opts.warmup + opts.seconds) * 1000;
    let random = 12345;
    const next = (): number => (random = (random * 1103515245 + 12345) % 2147483648) / 2147483648;
    let before:
      { cpus: number[]; machine: { idle: number; total: number }; at: number; texts: string[] } | undefined;
    let kill: { at: number; index: number; identity: string } | undefined;
    let peakRss = 0;
    let lagMax = 0;
    const leaderIndex = async (): Promise<number> => {
      for (let i = 0; i < metricsUrls.length; i++) {
        if (i === kill?.index) continue;
        const text = await (await fetch(metricsUrls[i]!)).text();
        if (sample(text, 'npu_fault_controller_leader') === 1) return i;
      }
      // None leads (the failover gap): the survivor.
      return kill ? 1 - kill.index : 0;
    };
    process.stderr.write(
      `[bench] posting ${opts.nodes} nodes/s to 2 replicas: ${opts.warmup} s warm-up, ${opts.seconds} s measured\n`,
    );
    await new Promise<void>((resolve, reject) => {
      let second = 0;
      const tick = async (): Promise<void> => {
        const elapsed = Date.now() - started;
        if (elapsed >= total) return resolve();
        second++;
        const now = Date.now();
        for (const [key, f] of faults) {
          if (now >= f.restoreAt) {
            setLink(f.node, f.npu, false);
            faults.delete(key);
          }
        }
        if (second % 3 === 0) {
          const node = Math.floor(next() * names.length);
          const npu = Math.floor(next() * 8);
          const key = `${node}/${npu}`;
          if (!faults.has(key)) {
            setLink(node, npu, true);
            const fault = { node, npu, restoreAt: now + 10_000 };
            faults.set(key, fault);
            injectedFaults.push(fault);
            injectedCount++;
          }
        }
        if (!counting && elapsed >= opts.warmup * 1000) {
          counting = true;
          const texts = await Promise.all(metricsUrls.map(async (url) => (await fetch(url)).text()));
          before = {
            cpus: texts.map((text) => sample(text, 'npu_fault_controller_process_cpu_seconds_total')),
            machine: machineCpu(),
            at: Date.now(),
            texts,
          };
        }
        if (opts.failover && !kill && elapsed >= (opts.warmup + opts.seconds / 2) * 1000) {
          // The leader is the Lease holder: its latest leadership line says 'started leading'.
          const index = replicas.findIndex(
            (r) =>
              r.logs.filter((l) => l.msg === 'started leading' || l.msg === 'stopped leading').at(-1)?.msg ===
              'started leading',
          );
          if (index < 0) throw new Error('--failover: no replica leads at the kill');
          kill = { at: Date.now(), index, identity: replicas[index]!.identity };
          process.stderr.write(`[bench] SIGKILL the leader ${kill.identity}\n`);
          await replicas[index]!.stop('SIGKILL');
        }
        if (counting) {
          const text = await (await fetch(metricsUrls[await leaderIndex()]!)).text();
          peakRss = Math.max(peakRss, sample(text, 'npu_fault_controller_process_resident_memory_bytes'));
          lagMax = Math.max(lagMax, sample(text, 'npu_fault_controller_nodejs_eventloop_lag_p99_seconds'));
        }
        await post();
        timer = setTimeout(
          () => void tick().catch(reject),
          Math.max(0, started + second * 1000 - Date.now()),
        );
      };
      void tick().catch(reject);
    });
    const leader = await leaderIndex();
    const text = await (await fetch(metricsUrls[leader]!)).text();
    const followerText = kill ? '' : await (await fetch(metricsUrls[1 - leader]!)).text();
    const beforeText = before?.texts[leader] ?? '';
    const after = {
      cpu: sample(text, 'npu_fault_controller_process_cpu_seconds_total'),
      machine: machineCpu(),
      at: Date.now(),
    };
    abortWatch.abort();
    const failoverReport = async (
      killed: { at: number; identity: string },
      survivor: string,
    ): Promise<Record<string, unknown>> => {
      const takeover = publishers.find((p) => p.seenAt >= killed.at && p.identity === survivor);
      const lastByKilled = publishers.filter((p) => p.identity === killed.identity).at(-1);
      const latency = (from: number, to: number): Record<string, number> => {
        const inWindow = injectedFaults.filter(
          (f) => f.firstCollected !== undefined && f.firstCollected >= from && f.firstCollected < to,
        );
        const ms = inWindow.flatMap((f) => (f.seen === undefined ? [] : [f.seen - f.firstCollected!]));
        return {
          faults: inWindow.length,
          neverSeenFailed: inWindow.length - ms.length,
          p50: percentile(ms, 0.5),
          p95: percentile(ms, 0.95),
          max: ms.length === 0 ? Number.NaN : Math.max(...ms),
        };
      };
      const { stdout } = await run(
        process.execPath,
        [join(ROOT, 'bin/npu-fault.js'), 'replay', join(journalDir, `${survivor}.jsonl`)],
        { maxBuffer: 256 * 1024 * 1024 },
      );
      const replayed = parseReplay(stdout);
      const comparison = compareTransitions(published.steps, replayed, {
        publishIntervalMs: 1000,
        gap: { from: lastByKilled?.seenAt ?? killed.at, to: takeover?.seenAt ?? Number.POSITIVE_INFINITY },
        endAt: publishers.at(-1)?.seenAt ?? Date.now(),
      });
      const count = (t: Map<string, unknown[]>): number => [...t.values()].reduce((n, l) => n + l.length, 0);
      return {
        killed: killed.identity,
        survivor,
        takeoverMs: takeover ? takeover.seenAt - killed.at : null,
        failedPostsOverRun: failedPosts,
        lastDocumentByKilledBeforeKillMs: lastByKilled ? killed.at - lastByKilled.seenAt : null,
        latencySeenByWatcherMs: {
          beforeKill: latency(before?.at ?? started, killed.at),
          tenSecondsAfterKill: latency(killed.at, killed.at + 10_000),
        },
        transitions: {
          published: count(published.steps),
          replayed: count(replayed),
          ...comparison,
        },
      };
    };
    const window = (after.at - (before?.at ?? after.at)) / 1000;
    const busy =
      1 -
      (after.machine.idle - (before?.machine.idle ?? 0)) /
        (after.machine.total - (before?.machine.total ?? 0));
    const result = {
      machine: `${cpus().length} cores`,
      nodeOptions: opts.nodeOptions,
      nodes: opts.nodes,
      devices: opts.nodes * 8,
      measuredSeconds: Math.round(window),
      leader: {
        identity: replicas[leader]!.identity,
        cpuShareOfOneCore: Number(((after.cpu - (before?.cpus[leader] ?? 0)) / window).toFixed(3)),
        peakRssMiB: Math.round(peakRss / 1048576),
        eventLoopLagP99MaxMs: Math.round(lagMax * 1000),
        heapUsedMiB: Math.round(sample(text, 'npu_fault_controller_nodejs_heap_size_used_bytes') / 1048576),
      },
      follower: kill
        ? null
        : {
            cpuSecondsTotal: sample(followerText, 'npu_fault_controller_process_cpu_seconds_total'),
            rssMiB: Math.round(
              sample(followerText, 'npu_fault_controller_process_resident_memory_bytes') / 1048576,
            ),
          },
      latencyFromControllerHistogramMs: {
        failed: latencySummary(text, beforeText, 'failed'),
        other: latencySummary(text, beforeText, 'other'),
      },
      latencySeenByWatcherMs: {
        faults: latencies.length,
        injected: injectedCount,
        p50: percentile(latencies, 0.5),
        p95: percentile(latencies, 0.95),
        p99: percentile(latencies, 0.99),
        max: Math.max(...latencies),
      },
      statusWritesPerSecond: Number((writes / window).toFixed(2)),
      statusBytesPerSecond: Math.round(bytes / window),
      machineBusy: Number(busy.toFixed(2)),
      saturated: busy > 0.85,
      failover: kill ? await failoverReport(kill, replicas[1 - kill.index]!.identity) : undefined,
    };
    console.log(JSON.stringify(result));
  } catch (error) {
    // Which replica went away, and why (a crash at takeover is a finding).
    for (const r of replicas) {
      const tail = [...r.logs.slice(-3).map((l) => JSON.stringify(l)), ...r.other.slice(-5)].join('\n');
      process.stderr.write(
        `[bench] ${r.identity}: exit ${r.child.exitCode ?? r.child.signalCode ?? 'running'}\n${tail}\n`,
      );
    }
    throw error;
  } finally {
    clearTimeout(timer);
    await Promise.all(replicas.map((r) => r.stop('SIGTERM')));
    await stopControlPlane(stateDir).catch(() => undefined);
    await rm(stateDir, { recursive: true, force: true });
    await rm(journalDir, { recursive: true, force: true });
  }
}

await main();

/**
 * One pipeline-benchmark run at fleet size N on a running control plane: the shipped stack
 * (two controller replicas and an ingest function as processes under their ServiceAccounts'
 * tokens with the shipped RBAC, stack/pipeline-stack.ts), N synthetic agents (fleet.ts) each
 * under its own pod-bound token, and two probe agents, real `npu-fault agent` processes with
 * the sim collector, whose faults go in through their fault API: a 910B whose PCIe links go
 * down (the 1 Hz sampling path) and a GPU whose XIDs enter as kernel-log events (the event
 * path), each with an SSE consumer on its /v1/fault/stream.
 *
 * The measured window is split in phases with 10, 50 and 100 API watchers of the status
 * ConfigMap. Afterwards the leader's recorded observations are replayed through
 * `npu-fault replay` and compared, transition by transition, with what the primary watcher
 * saw published (bench/failover.ts).
 */
import * as k8s from '@kubernetes/client-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PublishedDevice, PublishedDocument } from '../../contracts/index.js';
import { buildFleet, type SimNode } from '../../core/sim/index.js';
import { deployPipeline, type DemoStack, createAgentIdentity } from '../../stack/index.js';
import { PublishedTransitions } from '../failover.js';
import { losslessCheck } from './lossless.js';
import { applyCordonMode, cordonLatencies, watchCordons } from './cordons.js';
import { apiserverCounters, apiserverScraper, type ApiserverCounters } from './apiserver.js';
import { SyntheticFleet, type FleetMember, type InjectedFault } from './fleet.js';
import { PROBE_FLEET, ProbeAgents } from './probes.js';
import { histogramSummary } from './histogram.js';
import { startDeviceExporter, type DeviceExporter } from './exporter.js';
import { startPrometheusBaseline, type PrometheusBaseline } from './prometheus-baseline.js';
import { PATHS, type BaselineResult, type PathName, type RunResult, type WatcherLoad } from './result.js';
import { summarise } from './summary.js';
import { UsageMeter, type Tracked } from './usage.js';
import { StatusWatchers } from './watchers.js';

const SATURATED = 0.85;
/** A failed device is explained by a fault injected on it until this long after it ended. */
const EXPLAINS_MS = 30_000;
/** Marks the run's namespace and Nodes (cleanup, and apart from the demo's). */
export const BENCH_LABEL = 'npu-fault.io/bench';

/** What one run needs. */
export interface PipelineRunOptions {
  admin: k8s.KubeConfig;
  nodes: number;
  warmupSeconds: number;
  measureSeconds: number;
  /** Watcher counts, one phase of the measured window each. */
  watcherSteps: readonly number[];
  faultIntervalMs: number;
  faultSeconds: number;
  /** Glitches per node-second. */
  glitchRate: number;
  /** A probe fault every this many ms (0: no probe agents). */
  probeIntervalMs: number;
  seed: number;
  /** The script controllers and the function run (dist/cli/run.js as an image does; default: the sources). */
  entry?: string;
  env?: Record<string, string>;
  /** More function flags (`--forward-leader-interval-ms=10`). */
  functionArgs?: readonly string[];
  /** More controller flags for both replicas (`--publish-early-min-gap-ms=100`). */
  controllerArgs?: readonly string[];
  /** Remediation in cordon mode (bench/pipeline/cordons.ts): fault → cordon is measured. */
  remediation?: boolean;
  /** Stop the components with SIGTERM, so that what they write on exit (CPU profiles) is written. */
  gracefulStop?: boolean;
  /** The function's node flags (its Deployment's command). */
  functionNodeArgs?: readonly string[];
  /** Real Prometheus and Alertmanager scraping the synthetic fleet's device health beside the run. */
  prometheus?: boolean;
  /** Where the run registers what kills its processes at once (Ctrl-C); it removes them when done. */
  killers?: Set<() => void>;
  /** Control-plane processes to account for (name → pid). */
  planePids: Record<string, number>;
  log: (line: string) => void;
}

/** Creates `count` accelerator Nodes, agent pods and pod-bound tokens, 20 at a time. */
export async function createMembers(
  core: k8s.CoreV1Api,
  namespace: string,
  count: number,
  labels: Record<string, string>,
): Promise<FleetMember[]> {
  const members: FleetMember[] = [];
  const names = Array.from({ length: count }, (_, i) => `bench-${String(i).padStart(4, '0')}`);
  for (let i = 0; i < names.length; i += 20) {
    const made = await Promise.all(
      names.slice(i, i + 20).map(async (node, j) => {
        const identity = await createAgentIdentity(core, namespace, node, `agent-${i + j}`, { labels });
        return { node, token: await identity.mintToken(7200) };
      }),
    );
    members.push(...made);
  }
  return members;
}

/** Resolves once `test` holds, re-checked every 100 ms, or rejects after `timeoutMs`. */
async function until(test: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function text(url: string): Promise<string> {
  return (await fetch(url, { signal: AbortSignal.timeout(5000) })).text();
}

/** What one run returns: its figures, and the baselines that ran beside it. */
export interface PipelineRunOutcome {
  run: RunResult;
  baselines: BaselineResult[];
  /** The synthetic faults injected in the window (epoch ms), for baselines run afterwards. */
  faults: InjectedFault[];
}

/** Runs the benchmark at `options.nodes` and returns its figures. */
export async function runPipeline(options: PipelineRunOptions): Promise<PipelineRunOutcome> {
  const { admin, log } = options;
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const journalDir = await mkdtemp(join(tmpdir(), 'npu-fault-bench-journal-'));
  const runLabel = { [BENCH_LABEL]: `n${options.nodes}-${Date.now()}` };
  const probeFleet: SimNode[] = options.probeIntervalMs > 0 ? buildFleet(PROBE_FLEET, 7) : [];
  let probes: ProbeAgents | undefined;
  let stack: DemoStack | undefined;
  let fleet: SyntheticFleet | undefined;
  let watchers: StatusWatchers | undefined;
  const apiserver = apiserverScraper(admin);
  let exporter: DeviceExporter | undefined;
  let prometheus: PrometheusBaseline | undefined;
  let killBaseline: (() => void) | undefined;
  let cordons: ReturnType<typeof watchCordons> | undefined;
  try {
    stack = await deployPipeline({
      admin,
      fleet: probeFleet,
      log,
      tuning: {
        rules: null,
        namespacePrefix: `npu-fault-bench-${options.nodes}`,
        label: BENCH_LABEL,
        controllerArgs: (identity) => [
          `--record-observations=${join(journalDir, `${identity}.jsonl`)}`,
          ...(options.controllerArgs ?? []),
        ],
        ...(options.entry ? { entry: options.entry } : {}),
        ...(options.env ? { env: options.env } : {}),
        ...(options.gracefulStop ? { gracefulStop: true } : {}),
        ...(options.functionArgs ? { functionArgs: options.functionArgs } : {}),
        ...(options.functionNodeArgs ? { functionNodeArgs: options.functionNodeArgs } : {}),
      },
    });
    const { namespace } = stack;
    const killStack = stack.killSync;
    options.killers?.add(killStack);
    log(`[bench] N=${options.nodes}: creating ${options.nodes} Nodes, agent pods and pod-bound tokens`);
    if (options.remediation) {
      await applyCordonMode(core, namespace);
      cordons = watchCordons(admin, `${BENCH_LABEL}=${runLabel[BENCH_LABEL]}`);
    }
    const members = await createMembers(core, namespace, options.nodes, runLabel);
    const functionUrl = `http://127.0.0.1:${await stack.function.port('http')}`;
    fleet = new SyntheticFleet({
      functionUrl,
      members,
      faultIntervalMs: options.faultIntervalMs,
      faultSeconds: options.faultSeconds,
      glitchRate: options.glitchRate,
      seed: options.seed,
    });
    const fleetNodes = new Set(fleet.nodes());
    const probeAgents = new ProbeAgents(stack.agents, { seed: options.seed + 1, log });
    probes = probeAgents;
    const published = new PublishedTransitions(
      [...fleet.nodes(), ...probeFleet.map((n) => n.name)],
      (node) => probeAgents.deviceIds(node) ?? fleet!.deviceIds(),
    );
    const seenFault = new Map<InjectedFault, number>();
    const falseFailed = new Set<string>();
    let measuring = false;
    let lastDocumentAt = 0;
    let statusWrites = 0;
    let statusBytes = 0;
    let leaderIdentity = '';

    // The primary watcher checks each failed device against the faults injected on it; one
    // with no fault behind it (glitch noise) is a false failure, whenever it shows.
    const explainFleet = (node: string, device: PublishedDevice, at: number): boolean => {
      const fault = fleet!.faultsOn(node, device.id).findLast((f) => f.injectedAt <= at);
      if (!fault || at > fault.restoreAt + EXPLAINS_MS) return false;
      if (!seenFault.has(fault)) seenFault.set(fault, at);
      return true;
    };
    const watcherCheck = (document: PublishedDocument, at: number): void => {
      for (const [node, entry] of Object.entries(document.nodes)) {
        const explain = fleetNodes.has(node)
          ? explainFleet
          : probeAgents.has(node)
            ? (n: string, d: PublishedDevice, t: number) => probeAgents.explain(n, d, t, EXPLAINS_MS)
            : null;
        if (!explain) continue;
        for (const device of entry.npus)
          if (device.status === 'failed' && !explain(node, device, at))
            falseFailed.add(`${node}/${device.id}`);
      }
    };
    const nsWatchers = new StatusWatchers(admin, namespace);
    watchers = nsWatchers;
    nsWatchers.startPrimary(({ at, bytes, document }) => {
      lastDocumentAt = at;
      leaderIdentity = document.publisher.identity;
      published.observe(document, at);
      watcherCheck(document, at);
      if (measuring) {
        statusWrites++;
        statusBytes += bytes;
      }
    });
    probeAgents.followStreams();

    if (options.prometheus) {
      const source = fleet;
      exporter = await startDeviceExporter(() => source.health());
      prometheus = await startPrometheusBaseline({
        exporterPort: exporter.port,
        targets: exporter.targets(),
        log,
      });
      const { pids } = prometheus;
      killBaseline = (): void => {
        for (const pid of [pids.prometheus, pids.alertmanager]) process.kill(pid, 'SIGKILL');
      };
      options.killers?.add(killBaseline);
    }
    fleet.start();
    log(
      `[bench] N=${options.nodes}: ${options.warmupSeconds} s warm-up (every token reviewed once, JIT warm)`,
    );
    await until(() => lastDocumentAt > 0, 60_000, 'the first published document');
    await new Promise((resolve) => setTimeout(resolve, options.warmupSeconds * 1000));
    if (prometheus) {
      await prometheus.waitReady(60_000);
      log(`[bench] N=${options.nodes}: Prometheus and Alertmanager ready, every target up`);
    }

    // The measured window.
    const tracked: Tracked[] = [
      ...stack.controllers.map((c) => ({
        name: c.identity === 'replica-1' ? 'controller-1' : 'controller-2',
        pid: c.child.pid ?? 0,
      })),
      { name: 'function', pid: stack.function.child.pid ?? 0 },
      ...stack.agents.map((a, i) => ({ name: `probe-agent-${i + 1}`, pid: a.process.child.pid ?? 0 })),
      { name: 'bench (fleet + watchers)', pid: process.pid },
      ...Object.entries(options.planePids).map(([name, pid]) => ({ name, pid })),
      ...(prometheus
        ? [
            { name: 'prometheus (baseline)', pid: prometheus.pids.prometheus },
            { name: 'alertmanager (baseline)', pid: prometheus.pids.alertmanager },
          ]
        : []),
    ];
    for (const [i, c] of stack.controllers.entries()) {
      const entry = tracked[i]!;
      entry.metrics = {
        url: `http://127.0.0.1:${await c.port('metrics')}/metrics`,
        prefix: 'npu_fault_controller_',
      };
    }
    tracked.find((t) => t.name === 'function')!.metrics = {
      url: `http://127.0.0.1:${await stack.function.port('http')}/metrics`,
      prefix: 'npu_fault_function_',
    };
    const meter = new UsageMeter(tracked);
    const metricsUrls = await Promise.all(
      stack.controllers.map(async (c) => `http://127.0.0.1:${await c.port('metrics')}/metrics`),
    );
    const leaderBefore = await Promise.all(metricsUrls.map(text));
    const apiBefore = apiserverCounters(await apiserver.scrape());
    fleet.startInjecting();
    probeAgents.startInjecting(options.probeIntervalMs);
    measuring = true;
    const startedAt = Date.now();
    const postsBefore = fleet.counters.posts;
    meter.begin(startedAt);
    const sampler = setInterval(() => void meter.sample(), 1000);
    const watcherLoads: WatcherLoad[] = [];
    let widestFanout: number[] = [];
    const phaseMs = (options.measureSeconds * 1000) / options.watcherSteps.length;
    try {
      for (const [i, count] of options.watcherSteps.entries()) {
        nsWatchers.resize(count);
        // Watch streams open within a second; the phase is counted after that.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        nsWatchers.takeFanout(Number.POSITIVE_INFINITY);
        const from: ApiserverCounters = apiserverCounters(await apiserver.scrape());
        const phaseStart = Date.now();
        const phaseEnd = startedAt + phaseMs * (i + 1);
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, phaseEnd - phaseStart)));
        const to = apiserverCounters(await apiserver.scrape());
        const seconds = (Date.now() - phaseStart) / 1000;
        const {
          samples: fanoutSamples,
          deliveredBytes,
          ...fanout
        } = nsWatchers.takeFanout(Date.now() - 1000);
        widestFanout = fanoutSamples;
        watcherLoads.push({
          watchers: nsWatchers.count(),
          seconds: Math.round(seconds),
          egressBytesPerSecond: Math.round((to.configMapWatchBytes - from.configMapWatchBytes) / seconds),
          deliveredDocumentBytesPerSecond: Math.round(deliveredBytes / seconds),
          eventsPerSecond: Number(
            ((to.configMapWatchEvents - from.configMapWatchEvents) / seconds).toFixed(1),
          ),
          fanout,
        });
        log(`[bench] N=${options.nodes}: ${JSON.stringify(watcherLoads.at(-1))}`);
      }
    } finally {
      clearInterval(sampler);
    }
    measuring = false;
    probeAgents.stopInjecting();
    fleet.stopInjecting();
    const usage = meter.end();
    const window = { from: new Date(startedAt).toISOString(), to: new Date().toISOString() };
    const postsInWindow = fleet.counters.posts - postsBefore;
    const apiAfter = apiserverCounters(await apiserver.scrape());
    const leaderIndex = stack.controllers.findIndex((c) => c.identity === leaderIdentity);
    const leaderAfter = await text(metricsUrls[Math.max(0, leaderIndex)]!);
    const collectedToWritten = histogramSummary(
      leaderBefore[Math.max(0, leaderIndex)] ?? '',
      leaderAfter,
      'npu_fault_controller_publish_latency_seconds',
      ['kind="failed"'],
    );

    // Every injected fault gets time to show (a fault injected in the last second included).
    const injected = fleet.faults.filter((f) => f.injectedAt <= startedAt + options.measureSeconds * 1000);
    const firstAlert = (f: InjectedFault): number | undefined =>
      prometheus?.firing.find(
        (a) => a.node === f.node && `npu${a.device}` === f.device && a.receivedAt >= f.injectedAt,
      )?.receivedAt;
    // An alert needs up to scrape + evaluation interval and the notification after the fault.
    const prometheusDeadline = Date.now() + (prometheus ? 30_000 : 0);
    await until(
      () =>
        (!prometheus ||
          Date.now() > prometheusDeadline ||
          injected.every((f) => firstAlert(f) !== undefined)) &&
        injected.every((f) => seenFault.has(f)) &&
        probeAgents.allSeen(),
      prometheus ? 40_000 : 20_000,
      'every fault to be seen',
    ).catch((error: unknown) => log(`[bench] ${String(error)}`));
    await fleet.stop();
    const endAt = lastDocumentAt;
    nsWatchers.stop();
    probeAgents.stop();

    // The lossless check: the leader's recorded observations through `npu-fault replay`.
    const lossless = await losslessCheck(
      join(journalDir, `${leaderIdentity || 'replica-1'}.jsonl`),
      published,
      endAt,
    );

    const samples: Partial<Record<PathName, number[]>> = {};
    const add = (path: PathName, value: number | undefined): void => {
      if (value === undefined || !Number.isFinite(value)) return;
      (samples[path] ??= []).push(value);
    };
    for (const f of injected) {
      const seen = seenFault.get(f);
      if (f.sentAt !== undefined) add('injected_to_sent', f.sentAt - f.injectedAt);
      if (f.sentAt !== undefined && f.answeredAt !== undefined)
        add('sent_to_answered', f.answeredAt - f.sentAt);
      if (seen !== undefined && f.sentAt !== undefined) add('collected_to_watch', seen - f.sentAt);
      if (seen !== undefined) add('injected_to_watch', seen - f.injectedAt);
    }
    for (const f of probeAgents.faults) {
      if (f.collectedAt !== undefined) add('injected_to_sent', Math.max(0, f.collectedAt - f.injectedAt));
      if (f.watchAt !== undefined && f.collectedAt !== undefined)
        add('collected_to_watch', f.watchAt - f.collectedAt);
      if (f.watchAt !== undefined)
        add(f.kind === 'xid' ? 'event_to_watch' : 'injected_to_watch', f.watchAt - f.injectedAt);
      if (f.sseAt !== undefined) add('injected_to_sse', f.sseAt - f.injectedAt);
      if (f.sseAt !== undefined && f.watchAt !== undefined) add('watch_to_sse', f.sseAt - f.watchAt);
    }
    // Fault → cordon (and published failed → cordon), with remediation on.
    if (cordons) {
      const { cordonedAt } = cordons;
      for (const latency of cordonLatencies(injected, cordonedAt)) add('injected_to_cordon', latency);
      for (const latency of cordonLatencies(injected, cordonedAt, (f) => seenFault.get(f)))
        add('watch_to_cordon', latency);
    }
    // The fan-out samples of the phase with the most watchers (every phase is in `watchers`).
    samples.watch_fanout = widestFanout;
    const missed =
      injected.filter((f) => !seenFault.has(f)).length +
      probeAgents.faults.filter((f) => f.watchAt === undefined).length;
    const seconds = usage.seconds;
    const baselines: BaselineResult[] = [];
    const latency = Object.fromEntries(
      PATHS.map((p) => [p, summarise(samples[p] ?? [])]),
    ) as RunResult['latency'];
    latency.collected_to_written = collectedToWritten;
    if (prometheus) {
      const latencies = injected.flatMap((f) => {
        const at = firstAlert(f);
        return at === undefined ? [] : [at - f.injectedAt];
      });
      baselines.push({
        name: 'prometheus-alertmanager',
        configuration: { ...prometheus.configuration, nodes: options.nodes },
        latency: summarise(latencies),
        samples: latencies,
        injected: injected.length,
        seen: latencies.length,
        missed: injected.length - latencies.length,
        findings: {
          'what it sees':
            'the device gauge at each scrape; a fault shorter than the scrape interval can fall between scrapes',
          'faults lasted (s)': options.faultSeconds,
          'alerts received': prometheus.firing.length,
        },
        sameRun: {
          nodes: options.nodes,
          machineBusy: usage.machineBusy,
          saturated: usage.machineBusy > SATURATED,
          pipeline: latency.injected_to_watch,
        },
      });
    }
    const result: RunResult = {
      nodes: options.nodes,
      devices: options.nodes * 8,
      measuredSeconds: Math.round(seconds),
      window,
      snapshotsPerSecond: Number((postsInWindow / seconds).toFixed(1)),
      machineBusy: usage.machineBusy,
      saturated: usage.machineBusy > SATURATED,
      faults: {
        injected: injected.length + probeAgents.faults.length,
        seenFailed:
          injected.filter((f) => seenFault.has(f)).length +
          probeAgents.faults.filter((f) => f.watchAt).length,
        missed,
        falseFailed: falseFailed.size,
      },
      fleet: { ...fleet.counters },
      latency,
      samples,
      components: usage.components,
      api: {
        statusWritesPerSecond: Number((statusWrites / seconds).toFixed(2)),
        statusBytesPerSecond: Math.round(statusBytes / seconds),
        allWritesPerSecond: Number(((apiAfter.writes - apiBefore.writes) / seconds).toFixed(1)),
      },
      watchers: watcherLoads,
      lossless,
    };
    return { run: result, baselines, faults: injected };
  } finally {
    await prometheus?.stop().catch(() => undefined);
    if (killBaseline) options.killers?.delete(killBaseline);
    await exporter?.close().catch(() => undefined);
    probes?.stop();
    watchers?.stop();
    cordons?.stop();
    await fleet?.stop().catch(() => undefined);
    await apiserver.close().catch(() => undefined);
    await cleanupMembers(core, runLabel, stack?.namespace).catch(() => undefined);
    await stack?.dispose().catch(() => undefined);
    if (stack) options.killers?.delete(stack.killSync);
    // NPU_FAULT_BENCH_KEEP_JOURNALS=1 keeps the recorded observations (to replay by hand).
    if (process.env.NPU_FAULT_BENCH_KEEP_JOURNALS) log(`[bench] journals kept in ${journalDir}`);
    else await rm(journalDir, { recursive: true, force: true });
  }
}

/**
 * Deletes the run's synthetic Nodes and their agent pods (at once: no kubelet runs them to
 * confirm a graceful deletion, so the namespace could not go otherwise).
 */
export async function cleanupMembers(
  core: k8s.CoreV1Api,
  label: Record<string, string>,
  namespace: string | undefined,
): Promise<void> {
  const selector = Object.entries(label)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  await core.deleteCollectionNode({ labelSelector: selector });
  if (namespace) await core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
}

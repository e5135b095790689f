/**
 * `npm run bench -- pipeline [options]`: the full pipeline on the local control plane
 * (bench/pipeline/run.ts) at each fleet size, a fresh control plane per size, then the
 * baselines, written to bench/results/<timestamp>.json with a Markdown report and SVG CDFs.
 *
 *   --nodes 100,250,500,1000   fleet sizes (8 devices a node)
 *   --seconds 60               measured seconds per size (split among the watcher counts)
 *   --warmup 20                seconds before measuring (tokens reviewed, JIT warm)
 *   --watchers 10,50,100       API watchers of the status ConfigMap, one phase each
 *   --fault-interval-ms 1000   a synthetic fault (PCIe link down on a random device) this often
 *   --fault-seconds 10         how long each lasts
 *   --glitch-rate 0.02         glitches per node-second (spikes, correctable ECC, a missed push)
 *   --probe-interval-ms 3000   a fault on a real probe agent this often (0: no probe agents)
 *   --baselines                after the sweep, each on a fresh plane: Prometheus + Alertmanager
 *                              beside the pipeline at the smallest size on the same faults (the
 *                              Debian packages prometheus, prometheus-alertmanager), Kubernetes
 *                              Events through client-go's EventRecorder under a storm (Go builds
 *                              it once), node loss against the Ready condition's timeout
 *   --out bench/results        where the results go
 *   --existing-cluster         run on $KUBECONFIG's cluster (one run per size, no fresh plane)
 *   --tsx                      run the components from the sources (default: `npm run build`, dist/)
 *   --remediation cordon       remediation in cordon mode in every run of the sweep: fault → cordon
 *                              is measured (off: none)
 *   --remediation cordon       remediation in cordon mode in the sweep: fault → cordon measured (off: none)
  --early-min-gap-ms MS      the controllers' publish.earlyMinGapMs (default: theirs, 150)
  --leader-interval-ms MS    the function's forward.leaderIntervalMs (default: its own)
  --profile DIR              V8 CPU profiles of the controllers and the function into DIR
 *                              (they are stopped with SIGTERM so that the profiles are written)
 *   --seed 1
 * Heavy: not part of the test suite (test/pipeline-bench.test.ts runs a 20-node smoke).
 */
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import {
  buildControlPlane,
  killControlPlaneSync,
  startControlPlane,
  stopControlPlane,
  type ControlPlaneState,
} from '../../hack/control-plane.js';
import { buildEventRecorder } from '../../hack/event-recorder.js';
import { shippedNode } from '../../hack/shipped-node.js';
import { apiserverEventTtl, runEventsBaseline, stormFaults } from './events-baseline.js';
import { writeResults } from './output.js';
import { DEFAULT_TARGETS } from './report.js';
import type { BaselineResult, BenchResult, RunResult } from './result.js';
import { runNodeLoss } from './node-loss-run.js';
import { runPipeline, type PipelineRunOptions } from './run.js';
import { knee } from './summary.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
/** kube-controller-manager's default --node-monitor-grace-period since Kubernetes 1.32 (the plane runs 1.34). */
const NODE_MONITOR_GRACE_PERIOD_SECONDS = 50;

/** `npu-fault bench pipeline --help`. */
export const PIPELINE_USAGE = `Usage: npu-fault bench pipeline [options]   (npm run bench -- pipeline [options])

The whole pipeline on a local control plane (a fresh one per fleet size): two controller
replicas and an ingest function under the shipped RBAC, N simulated agents under pod-bound
tokens posting 1 Hz snapshots, two real probe agents (a 910B, a GPU with kernel-log XIDs)
with SSE consumers, 10/50/100 API watchers. Writes <out>/<timestamp>.json, .md and SVG CDFs.

  --nodes 100,250,500,1000   fleet sizes (8 devices a node)
  --seconds 60               measured seconds per size (split among the watcher counts)
  --warmup 20                seconds before measuring
  --watchers 10,50,100       API watchers of the status ConfigMap, one phase each
  --fault-interval-ms 1000   a synthetic fault (PCIe link down) this often
  --fault-seconds 10         how long each lasts
  --glitch-rate 0.02         glitches per node-second (never a failure)
  --probe-interval-ms 3000   a fault on a probe agent this often (0: no probes)
  --baselines                then Prometheus + Alertmanager beside the pipeline at the smallest
                             size, Kubernetes Events (client-go's recorder) under a storm, and
                             node loss against the Ready condition (each on a fresh plane)
  --out bench/results        where the results go
  --existing-cluster         run on $KUBECONFIG's cluster
  --tsx                      run the components from the sources (default: dist/)
  --remediation cordon       remediation in cordon mode in the sweep: fault → cordon measured (off: none)
  --early-min-gap-ms MS      the controllers' publish.earlyMinGapMs (default: theirs, 150)
  --leader-interval-ms MS    the function's forward.leaderIntervalMs (default: its own)
  --profile DIR              V8 CPU profiles (.cpuprofile) of the controllers and the function
                             into DIR; summarise with bench/profile-summary.ts
  --seed 1

Exit 0 when no fault was missed or invented and the replay matched; 1 otherwise; 2 for a bad argument.
`;

/** The bench's options. */
export interface PipelineBenchOptions {
  nodes: number[];
  seconds: number;
  warmup: number;
  watchers: number[];
  faultIntervalMs: number;
  faultSeconds: number;
  glitchRate: number;
  probeIntervalMs: number;
  baselines: boolean;
  out: string;
  existingCluster: boolean;
  tsx: boolean;
  /** The function's forward.leaderIntervalMs, when not its default. */
  leaderIntervalMs: number | undefined;
  /** The controllers' publish.earlyMinGapMs, when not their default. */
  earlyMinGapMs: number | undefined;
  /** Remediation in cordon mode in the sweep's runs (fault → cordon). */
  remediation: boolean;
  /** Where the components write V8 CPU profiles (undefined: none). */
  profile: string | undefined;
  seed: number;
}

const list = (value: string, name: string): number[] => {
  const values = value.split(',').map(Number);
  if (values.some((v) => !Number.isInteger(v) || v < 1))
    throw new Error(`--${name}: whole numbers >= 1, comma-separated`);
  return values;
};
const number = (value: string | undefined, name: string, fallback: number, min = 0): number => {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min) throw new Error(`--${name}: a number >= ${min}`);
  return n;
};

/** Parses the command line (one-line errors naming the option). */
export function parsePipelineArgs(args: readonly string[]): PipelineBenchOptions {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      nodes: { type: 'string' },
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      watchers: { type: 'string' },
      'fault-interval-ms': { type: 'string' },
      'fault-seconds': { type: 'string' },
      'glitch-rate': { type: 'string' },
      'probe-interval-ms': { type: 'string' },
      baselines: { type: 'boolean' },
      out: { type: 'string' },
      'existing-cluster': { type: 'boolean' },
      tsx: { type: 'boolean' },
      profile: { type: 'string' },
      remediation: { type: 'string' },
      'early-min-gap-ms': { type: 'string' },
      'leader-interval-ms': { type: 'string' },
      seed: { type: 'string' },
    },
  });
  if (positionals.length > 0) throw new Error(`unexpected argument: ${positionals[0]}`);
  const glitchRate = number(values['glitch-rate'], 'glitch-rate', 0.02);
  if (glitchRate > 1) throw new Error('--glitch-rate: at most 1 (glitches per node-second)');
  const remediation = values.remediation ?? 'cordon';
  if (remediation !== 'cordon' && remediation !== 'off')
    throw new Error(`--remediation: cordon or off, got ${remediation.slice(0, 40)}`);
  return {
    nodes: list(values.nodes ?? '100,250,500,1000', 'nodes'),
    seconds: number(values.seconds, 'seconds', 60, 3),
    warmup: number(values.warmup, 'warmup', 20),
    watchers: list(values.watchers ?? '10,50,100', 'watchers'),
    faultIntervalMs: number(values['fault-interval-ms'], 'fault-interval-ms', 1000),
    faultSeconds: number(values['fault-seconds'], 'fault-seconds', 10, 1),
    glitchRate,
    probeIntervalMs: number(values['probe-interval-ms'], 'probe-interval-ms', 3000),
    baselines: values.baselines === true,
    out: values.out ?? join(ROOT, 'bench/results'),
    existingCluster: values['existing-cluster'] === true,
    tsx: values.tsx === true,
    profile: values.profile,
    remediation: remediation === 'cordon',
    leaderIntervalMs:
      values['leader-interval-ms'] === undefined
        ? undefined
        : number(values['leader-interval-ms'], 'leader-interval-ms', 2),
    earlyMinGapMs:
      values['early-min-gap-ms'] === undefined
        ? undefined
        : number(values['early-min-gap-ms'], 'early-min-gap-ms', 250),
    seed: number(values.seed, 'seed', 1),
  };
}

/** Runs the sweep; returns the result written and where. */
export async function pipelineBench(
  opts: PipelineBenchOptions,
  log: (line: string) => void,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<{ result: BenchResult; files: { json: string; markdown: string; charts: string[] } }> {
  const startedAt = new Date().toISOString();
  // Ctrl-C or SIGTERM mid-run: every process of the run goes with the bench.
  const killers = new Set<() => void>();
  const onSignal = (signal: NodeJS.Signals): void => {
    for (const kill of killers) kill();
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await sweep(opts, log, env, startedAt, killers);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * Runs `body` on a fresh local control plane (the node-lifecycle controller on if asked),
 * registered with `killers` while it runs and stopped and removed afterwards.
 */
async function withFreshPlane<T>(
  options: { log: (line: string) => void; killers: Set<() => void>; nodeLifecycle?: boolean },
  body: (admin: k8s.KubeConfig, state: ControlPlaneState) => Promise<T>,
): Promise<T> {
  const stateDir = await mkdtemp(join(tmpdir(), 'npu-fault-bench-plane-'));
  const killPlane = (): void => killControlPlaneSync(stateDir);
  options.killers.add(killPlane);
  try {
    const state = await startControlPlane({
      stateDir,
      log: options.log,
      ...(options.nodeLifecycle ? { nodeLifecycle: {} } : {}),
    });
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(state.kubeconfig);
    return await body(admin, state);
  } finally {
    await stopControlPlane(stateDir).catch(() => undefined);
    options.killers.delete(killPlane);
    await rm(stateDir, { recursive: true, force: true });
  }
}

async function sweep(
  opts: PipelineBenchOptions,
  log: (line: string) => void,
  env: Readonly<Record<string, string | undefined>>,
  startedAt: string,
  killers: Set<() => void>,
): Promise<{ result: BenchResult; files: { json: string; markdown: string; charts: string[] } }> {
  if (!opts.existingCluster) await buildControlPlane(log);
  if (!opts.tsx) {
    log('[bench] npm run build (the components run dist/, as an image does)');
    await run('npm', ['run', 'build'], { cwd: ROOT });
  }
  // As the Deployments run them: the controllers with their NODE_OPTIONS (heap caps), the
  // function with the node flags of its command (which outrank the same flags in NODE_OPTIONS).
  const nodeOptions = shippedNode(join(ROOT, 'k8s/controller/deployment.yaml')).nodeOptions;
  const functionNodeArgs = shippedNode(join(ROOT, 'k8s/functions/base/deployment.yaml')).nodeArgs;
  const profileFlags = opts.profile ? ` --cpu-prof --cpu-prof-dir=${opts.profile}` : '';
  const shipped = {
    entry: join(ROOT, 'dist/cli/run.js'),
    env: { NODE_OPTIONS: `${nodeOptions}${profileFlags}`.trim() },
    functionNodeArgs,
  };
  const profiled = opts.profile ? { env: { NODE_OPTIONS: profileFlags.trim() }, gracefulStop: true } : {};
  const runOptions = (admin: k8s.KubeConfig, nodes: number, seed: number): PipelineRunOptions => ({
    admin,
    nodes,
    warmupSeconds: opts.warmup,
    measureSeconds: opts.seconds,
    watcherSteps: opts.watchers,
    faultIntervalMs: opts.faultIntervalMs,
    faultSeconds: opts.faultSeconds,
    glitchRate: opts.glitchRate,
    probeIntervalMs: opts.probeIntervalMs,
    seed,
    planePids: {},
    ...(opts.tsx ? profiled : { ...shipped, gracefulStop: opts.profile !== undefined }),
    log,
    killers,
  });
  const runs: RunResult[] = [];
  const baselines: BaselineResult[] = [];
  const sizes = [...opts.nodes].sort((a, b) => a - b);
  for (const [i, nodes] of sizes.entries()) {
    const measure = async (admin: k8s.KubeConfig, state?: ControlPlaneState): Promise<void> => {
      log(`[bench] N=${nodes}: ${opts.warmup} s warm-up, ${opts.seconds} s measured`);
      const outcome = await runPipeline({
        ...runOptions(admin, nodes, opts.seed + i),
        planePids: state?.pids ?? {},
        remediation: opts.remediation,
        ...(opts.earlyMinGapMs === undefined
          ? {}
          : { controllerArgs: [`--publish-early-min-gap-ms=${opts.earlyMinGapMs}`] }),
        ...(opts.leaderIntervalMs === undefined
          ? {}
          : { functionArgs: [`--forward-leader-interval-ms=${opts.leaderIntervalMs}`] }),
      });
      runs.push(outcome.run);
      const { samples: _samples, ...figures } = outcome.run;
      log(`[bench] N=${nodes}: ${JSON.stringify(figures)}`);
    };
    if (opts.existingCluster) {
      if (!env.KUBECONFIG) throw new Error('--existing-cluster: KUBECONFIG is unset');
      const admin = new k8s.KubeConfig();
      admin.loadFromFile(env.KUBECONFIG);
      await measure(admin);
    } else await withFreshPlane({ log, killers }, measure);
  }
  const failures: string[] = [];
  if (opts.baselines) {
    const runOn = async (
      what: string,
      nodeLifecycle: boolean,
      body: (admin: k8s.KubeConfig, state: ControlPlaneState) => Promise<BaselineResult>,
    ): Promise<void> => {
      if (opts.existingCluster) {
        log(`[bench] ${what}: skipped with --existing-cluster (needs a plane of its own)`);
        return;
      }
      try {
        const baseline = await withFreshPlane({ log, killers, nodeLifecycle }, body);
        log(`[bench] ${what}: ${JSON.stringify(baseline)}`);
        baselines.push(baseline);
      } catch (error) {
        // The sweep's figures are still written; the report says this baseline is missing.
        log(`[bench] ${what} failed: ${(error as Error).message}`);
        failures.push(`${what}: ${(error as Error).message}`);
      }
    };
    // Prometheus and Alertmanager beside the pipeline at the smallest size, on the same
    // faults and clock: a run of its own, so their cost does not skew the sweep's figures.
    await runOn('prometheus + alertmanager', false, async (admin, state) => {
      const outcome = await runPipeline({
        ...runOptions(admin, sizes[0]!, opts.seed),
        planePids: state.pids,
        prometheus: true,
      });
      const baseline = outcome.baselines[0];
      if (!baseline) throw new Error('the run returned no Prometheus baseline');
      return baseline;
    });
    await runOn('kubernetes events', false, async (admin, state) => {
      const nodes = Array.from({ length: 100 }, (_, i) => `events-node-${String(i).padStart(3, '0')}`);
      nodes.push('node-storm', 'node-repeat');
      return runEventsBaseline({
        admin,
        kubeconfigForRecorder: state.kubeconfig,
        recorderBinary: await buildEventRecorder(log),
        // 100 nodes with one fault each over 30 s, one node's ECC storm (40 faults in 10 s
        // over its 8 devices), one fault repeated on another node.
        faults: stormFaults(nodes, {
          seed: opts.seed,
          spreadMs: 30_000,
          burst: { node: 'node-storm', faults: 40, startMs: 5_000, windowMs: 10_000 },
          repeat: { node: 'node-repeat', times: 3, startMs: 2_000, intervalMs: 5_000 },
        }),
        eventTtl: await apiserverEventTtl(state.pids['kube-apiserver']),
        log,
      });
    });
    await runOn('node loss', true, (admin) =>
      runNodeLoss({
        admin,
        gracePeriodSeconds: NODE_MONITOR_GRACE_PERIOD_SECONDS,
        ...(opts.tsx ? {} : shipped),
        log,
      }),
    );
  }
  const result: BenchResult = {
    kind: 'npu-fault-pipeline-bench',
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      model: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
    },
    command:
      `npm run bench -- pipeline ${process.argv.slice(process.argv.indexOf('pipeline') + 1).join(' ')}`.trim(),
    targets: { ...DEFAULT_TARGETS },
    runs,
    baselines,
    ...(failures.length ? { notes: failures } : {}),
    knee: ['collected_to_written', 'collected_to_watch', 'injected_to_watch']
      .map((p) => knee(runs, p as 'collected_to_written'))
      .join(' '),
  };
  const files = await writeResults(result, opts.out);
  return { result, files };
}

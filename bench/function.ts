/**
 * `npm run bench:function -- [--rates 1000,2000,3000,4000] [--seconds S] [--nodes N]
 * [--node-options=<NODE_OPTIONS>] [--node-args="<node flags>"] [--function-args "<extra flags>"]
 * [--skip-build] [--entry <run.js>[,<run.js of another build>…]] [--rounds N]
 * [--generator node|wrk] [--connections C1,C2] [--pace R] [--warmup-seconds W]`: one
 * ingest function process pinned to one core (taskset -c 0), fed by agent-shaped clients with
 * real pod-bound tokens (TokenReview against the local control plane, cached as in
 * production), forwarding to two replicas that answer like controllers (the leader and a
 * follower, each a process of its own, on the other cores). Each rate runs open-loop for S seconds:
 * one 8-device 910B snapshot per request, requests spread evenly. Reports per rate the
 * achieved snapshots/s, the function's CPU per snapshot (of which in the kernel) and requests
 * to the replicas per snapshot, errors, and latency p50/p99/max at the client, which is what the
 * function adds (the stand-in replicas answer in well under a millisecond). The function runs
 * the compiled build (`npm run build` first, unless --skip-build or --entry) as its
 * Deployment runs it: the node flags of its `command` and its NODE_OPTIONS (none), unless
 * --node-args or --node-options say otherwise (write them with `=`: their values start with
 * dashes). Prints one JSON line. Not part of the test suite.
 *
 * `--generator wrk [--connections 16,32,64] [--pace <snapshots/s>]`: the load comes from wrk
 * (bench/wrk.ts; `apt-get install wrk`) instead of this process: a C client that costs a
 * fraction of a Node one, so more of the other core is left to the stand-in replicas and the
 * latency is less the client's own queueing. Closed loop per connection count (the most the
 * function serves at that concurrency), or paced at `--pace` snapshots/s on wrk's clock.
 * Each run is preceded by the same load for `--warmup-seconds` (default 5), not measured.
 *
 * **Comparing builds.** `--entry a/run.js,b/run.js --rounds N` starts one function per entry
 * (same flags, replicas and tokens) and measures them in turn, N rounds of A then B, each
 * pinned to core 0 while it is measured. This machine's speed drifts by tens of percent within
 * minutes (a fixed JSON workload in fresh processes took 0.90–1.37 s), so only builds
 * measured in alternation, over several rounds, compare; even so, a difference of a few
 * percent in CPU per snapshot is within the noise here (ten alternating pairs of two builds
 * differed by -37 to +46 µs of some 250, around a mean of -6).
 */
import * as k8s from '@kubernetes/client-node';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Agent, request } from 'undici';
import type { Snapshot } from '../contracts/index.js';
import { npuSnapshot } from '../core/engine/testing.js';
import { buildControlPlane, startControlPlane, stopControlPlane } from '../hack/control-plane.js';
import { shippedNode } from '../hack/shipped-node.js';
import {
  functionRbacObjects,
  startControllerProcess,
  writeKubeConfig,
  type ControllerProcess,
  kubeConfigWithToken,
} from '../stack/index.js';
import { percentile } from './pipeline/summary.js';
import { runWrk, wrkAvailable, wrkThreads, writeWrkScript } from './wrk.js';

const NS = 'ai-infra';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);

/** Records one run's figures. */
type Report = (result: Record<string, unknown>) => void;

function options(): {
  rates: number[];
  seconds: number;
  warmupSeconds: number;
  nodes: number;
  nodeOptions: string;
  nodeArgs: string[];
  functionArgs: string[];
  build: boolean;
  entries: string[];
  rounds: number;
  generator: 'node' | 'wrk';
  connections: number[];
  pace: number | null;
} {
  const shipped = shippedNode(join(ROOT, 'k8s/functions/base/deployment.yaml'));
  const { values } = parseArgs({
    options: {
      rates: { type: 'string' },
      seconds: { type: 'string' },
      'warmup-seconds': { type: 'string' },
      nodes: { type: 'string' },
      'node-options': { type: 'string' },
      'node-args': { type: 'string' },
      'function-args': { type: 'string' },
      'skip-build': { type: 'boolean' },
      entry: { type: 'string' },
      rounds: { type: 'string' },
      generator: { type: 'string' },
      connections: { type: 'string' },
      pace: { type: 'string' },
    },
  });
  const pace = values.pace === undefined ? null : Number(values.pace);
  if (pace !== null && !(pace > 0)) throw new Error('--pace <snapshots/s> > 0');
  const generator = values.generator ?? 'node';
  if (generator !== 'node' && generator !== 'wrk') throw new Error('--generator node|wrk');
  const connections = (values.connections ?? '4,8,16').split(',').map(Number);
  if (connections.some((c) => !Number.isInteger(c) || c < 1)) throw new Error('--connections c1,c2 >= 1');
  const rates = (values.rates ?? '1000,2000,3000,4000').split(',').map(Number);
  const seconds = Number(values.seconds ?? 15);
  const warmupSeconds = Number(values['warmup-seconds'] ?? 5);
  if (!(warmupSeconds >= 0)) throw new Error('--warmup-seconds >= 0');
  const rounds = Number(values.rounds ?? 1);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds >= 1');
  const nodes = Number(values.nodes ?? 100);
  if (rates.some((r) => !(r > 0)) || !(seconds > 0) || !Number.isInteger(nodes) || nodes < 1)
    throw new Error('--rates r1,r2 > 0, --seconds > 0, --nodes >= 1');
  return {
    rates,
    seconds,
    warmupSeconds,
    nodes,
    nodeOptions: values['node-options'] ?? shipped.nodeOptions,
    nodeArgs: values['node-args']?.split(' ').filter(Boolean) ?? shipped.nodeArgs,
    functionArgs: (values['function-args'] ?? '').split(' ').filter(Boolean),
    build: values['skip-build'] !== true && values.entry === undefined,
    entries: values.entry?.split(',').filter(Boolean) ?? [join(ROOT, 'dist/cli/run.js')],
    rounds,
    generator,
    connections,
    pace,
  };
}

/**
 * A stand-in controller replica (bench/stand-in-replica.ts) in a process of its own: answers
 * every batch at once, as the leader or a follower.
 */
async function standIn(
  identity: string,
  leader: boolean,
): Promise<{ url: string; pid: number | undefined; close: () => void }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'bench/stand-in-replica.ts'), identity, leader ? 'leader' : 'follower'],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout });
  const [line] = (await once(lines, 'line')) as [string];
  lines.close();
  const { url } = JSON.parse(line) as { url: string };
  return { url, pid: child.pid, close: () => child.stdin.end() };
}

async function main(): Promise<void> {
  const opts = options();
  if (opts.generator === 'wrk' && !(await wrkAvailable()))
    throw new Error('--generator wrk: wrk is not installed (Debian: apt-get install wrk)');
  const stateDir = await mkdtemp(join(tmpdir(), 'npu-fault-bench-plane-'));
  const functions: ControllerProcess[] = [];
  const closers: (() => void)[] = [];
  try {
    await buildControlPlane((l) => process.stderr.write(`${l}\n`));
    if (opts.build) {
      process.stderr.write('[bench] npm run build\n');
      await run('npm', ['run', 'build'], { cwd: ROOT });
    }
    const state = await startControlPlane({ stateDir, log: (l) => process.stderr.write(`${l}\n`) });
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(state.kubeconfig);
    const core = admin.makeApiClient(k8s.CoreV1Api);
    const objects = k8s.KubernetesObjectApi.makeApiClient(admin);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    for (const object of functionRbacObjects(NS)) await objects.create(object);
    for (const sa of ['npu-fault-function', 'npu-fault-agent'])
      await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: sa } } });
    const fnToken = await core.createNamespacedServiceAccountToken({
      name: 'npu-fault-function',
      namespace: NS,
      body: { spec: { audiences: [], expirationSeconds: 7200 } },
    });
    // One node, pod and pod-bound token per simulated agent.
    process.stderr.write(`[bench] ${opts.nodes} nodes, pods and pod-bound tokens\n`);
    const agents: { node: string; token: string; snapshot: Snapshot }[] = [];
    for (let i = 0; i < opts.nodes; i++) {
      const node = `bench-${String(i).padStart(4, '0')}`;
      await core.createNode({ body: { metadata: { name: node } } });
      const pod = await core.createNamespacedPod({
        namespace: NS,
        body: {
          metadata: { name: `agent-${i}` },
          spec: {
            nodeName: node,
            serviceAccountName: 'npu-fault-agent',
            containers: [{ name: 'a', image: 'a' }],
          },
        },
      });
      const minted = await core.createNamespacedServiceAccountToken({
        name: 'npu-fault-agent',
        namespace: NS,
        body: {
          spec: {
            audiences: ['npu-fault'],
            expirationSeconds: 7200,
            boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: `agent-${i}`, uid: pod.metadata?.uid },
          },
        },
      });
      agents.push({
        node,
        token: minted.status?.token ?? '',
        snapshot: npuSnapshot(
          { node, boot: 'b', seq: 0, t: 0 },
          Array.from({ length: 8 }, (_, npu) => ({ npu })),
        ),
      });
    }
    const leader = await standIn('leader', true);
    const follower = await standIn('follower', false);
    closers.push(leader.close, follower.close);
    const standInPids = [leader.pid, follower.pid].filter((pid) => pid !== undefined);
    const nodeOptions = opts.nodeOptions;
    // One function per entry, all alike but for their build.
    const targets: { entry: string; pid: number | undefined; port: number; url: string }[] = [];
    // As in a pod, the function reads its own token (for the replicas) from a file.
    const tokenFile = join(stateDir, 'function-token');
    await writeFile(tokenFile, fnToken.status?.token ?? '', { mode: 0o600 });
    for (const [i, entry] of opts.entries.entries()) {
      const fn = startControllerProcess({
        identity: opts.entries.length === 1 ? 'function' : `function-${i}`,
        command: 'function',
        entry,
        kubeconfig: writeKubeConfig(kubeConfigWithToken(admin, fnToken.status?.token ?? '')),
        args: [
          `--namespace=${NS}`,
          `--controllers=leader=${leader.url},follower=${follower.url}`,
          `--token-file=${tokenFile}`,
          '--log-level=info',
          // The load is made of simulated snapshots (collector "sim"), refused by default.
          '--allow-simulated-collectors',
          ...opts.functionArgs,
        ],
        env: { NODE_OPTIONS: nodeOptions },
        nodeArgs: opts.nodeArgs,
      });
      functions.push(fn);
      const port = await fn.port('http');
      targets.push({ entry, pid: fn.child.pid, port, url: `http://127.0.0.1:${port}/v1/snapshots` });
    }
    // The function measured on core 0; this process (the clients), the stand-ins, the control
    // plane and any function not being measured on the others.
    const cores = cpus().length;
    const pin = async (pid: number | undefined, list: string): Promise<void> => {
      if (cores > 1 && pid !== undefined) await run('taskset', ['-a', '-p', '-c', list, String(pid)]);
    };
    // The control plane too: kwok's node heartbeats and the controller-manager's loops would
    // otherwise land on the function's core now and then, as stalls of its own.
    for (const pid of [process.pid, ...standInPids, ...Object.values(state.pids)])
      await pin(pid, `1-${cores - 1}`);
    const pinForMeasuring = async (target: (typeof targets)[number]): Promise<void> => {
      for (const other of targets) await pin(other.pid, other === target ? '0' : `1-${cores - 1}`);
    };
    const dispatcher = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
    const post = async (
      url: string,
      agent: (typeof agents)[number],
    ): Promise<{ ms: number; status: number }> => {
      (agent.snapshot as { seq: number }).seq++;
      (agent.snapshot as { collected_at: string }).collected_at = new Date().toISOString();
      const body = JSON.stringify(agent.snapshot);
      const started = performance.now();
      const response = await request(url, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
        body,
      });
      await response.body.dump();
      return { ms: performance.now() - started, status: response.statusCode };
    };
    // Warm-up: every token reviewed once (cached afterwards, as in production), JIT warm.
    for (const target of targets)
      for (let round = 0; round < 3; round++) await Promise.all(agents.map((a) => post(target.url, a)));
    const results: Record<string, unknown>[] = [];
    /**
     * Counters of the function's /metrics read between runs: CPU (user, system), requests to
     * the replicas, and its request-duration histogram's cumulative buckets (`le` → count).
     */
    const counters = async (
      port: number,
    ): Promise<{
      user: number;
      system: number;
      forwards: number;
      majorGcs: number;
      gcSeconds: number;
      residentBytes: number;
      buckets: Map<string, number>;
      leaderBuckets: Map<string, number>;
    }> => {
      const lines = (await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).split('\n');
      const sum = (prefix: string): number =>
        lines
          .filter((l) => l.startsWith(prefix))
          .reduce((total, l) => total + Number(l.split(' ').at(-1)), 0);
      const buckets = new Map<string, number>();
      const leaderBuckets = new Map<string, number>();
      for (const l of lines) {
        const le = /^npu_fault_function_request_duration_seconds_bucket\{le="([^"]+)"\} (\S+)$/.exec(l);
        if (le) buckets.set(le[1] ?? '', Number(le[2]));
        const leader =
          /^npu_fault_function_forward_duration_seconds_bucket\{le="([^"]+)",replica_role="leader"\} (\S+)$/.exec(
            l,
          );
        if (leader) leaderBuckets.set(leader[1] ?? '', Number(leader[2]));
      }
      return {
        user: sum('npu_fault_function_process_cpu_user_seconds_total '),
        system: sum('npu_fault_function_process_cpu_system_seconds_total '),
        forwards: sum('npu_fault_function_forward_duration_seconds_count{'),
        majorGcs: sum('npu_fault_function_nodejs_gc_duration_seconds_count{kind="major"}'),
        gcSeconds: sum('npu_fault_function_nodejs_gc_duration_seconds_sum{'),
        residentBytes: sum('npu_fault_function_process_resident_memory_bytes '),
        buckets,
        leaderBuckets,
      };
    };
    /** What the kubelet and Prometheus ask of a running function: its probes and its metrics. */
    const probe = async (port: number): Promise<void> => {
      for (const path of ['/healthz', '/readyz', '/metrics'])
        await (await fetch(`http://127.0.0.1:${port}${path}`)).text();
    };
    /**
     * The upper bound (ms) of the histogram bucket holding the `q` quantile of what was observed
     * between two reads: the function's own time per request, first byte parsed to answer sent.
     */
    const bucketQuantile = (before: Map<string, number>, after: Map<string, number>, q: number): string => {
      const deltas = [...after].map(([le, n]) => [le, n - (before.get(le) ?? 0)] as const);
      const total = deltas.find(([le]) => le === '+Inf')?.[1] ?? 0;
      const hit = deltas.find(([, n]) => n >= q * total)?.[0];
      return hit === undefined || hit === '+Inf'
        ? `> ${deltas.at(-2)?.[0] ?? '?'} s`
        : `<= ${Number(hit) * 1000}`;
    };
    /** What the function itself did between two reads of its counters, for `snapshots` in `seconds`. */
    const functionFigures = (
      before: Awaited<ReturnType<typeof counters>>,
      after: Awaited<ReturnType<typeof counters>>,
      snapshots: number,
      seconds: number,
    ): Record<string, unknown> => {
      const system = after.system - before.system;
      const cpu = after.user - before.user + system;
      return {
        // The function's own CPU: what one core's capacity is judged by when the clients,
        // sharing the other cores, cannot push it to saturation.
        functionCpuShareOfOneCore: Number((cpu / seconds).toFixed(3)),
        functionCpuMicrosecondsPerSnapshot: Math.round((cpu * 1e6) / snapshots),
        // Of which in the kernel (sockets): what no change to the function's code can cut.
        functionSystemCpuMicrosecondsPerSnapshot: Math.round((system * 1e6) / snapshots),
        // Requests to the two replicas (micro-batching shares them among snapshots).
        replicaRequestsPerSnapshot: Number(((after.forwards - before.forwards) / snapshots).toFixed(3)),
        // Full (mark-compact) collections, and the share of the time spent in any collection's
        // pauses: what sets the tail once the core has room.
        functionFullGcs: after.majorGcs - before.majorGcs,
        functionGcPauseShare: Number(((after.gcSeconds - before.gcSeconds) / seconds).toFixed(3)),
        // Resident memory at the end of the run: what the young generation's size costs.
        functionResidentMiB: Math.round(after.residentBytes / 2 ** 20),
        // Latency inside the function (its histogram's bucket bounds): what it adds, without
        // the clients' and stand-ins' queueing on the other core.
        functionLatencyMs: {
          p50: bucketQuantile(before.buckets, after.buckets, 0.5),
          p99: bucketQuantile(before.buckets, after.buckets, 0.99),
        },
        // One request to the leading stand-in, sent to answered (its histogram's bucket
        // bounds): the part of the latency that waits on the other core.
        leaderRequestMs: {
          p50: bucketQuantile(before.leaderBuckets, after.leaderBuckets, 0.5),
          p99: bucketQuantile(before.leaderBuckets, after.leaderBuckets, 0.99),
        },
      };
    };
    // One request per agent, each under its own token (cached by the function since the
    // warm-up), sent by wrk on the other cores.
    const requests = agents.map((agent) => ({
      headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(agent.snapshot),
    }));
    /** The wrk runs against one function: each warmed up, then measured. */
    const measureWithWrk = async (target: (typeof targets)[number], report: Report): Promise<void> => {
      for (const connections of opts.connections) {
        const threads = wrkThreads(connections);
        const pacing = opts.pace === null ? null : { rate: opts.pace, threads };
        const script = writeWrkScript(stateDir, '/v1/snapshots', requests, pacing);
        // The same load first, unmeasured: a function that has served only the few hundred
        // requests above still runs unoptimised code, and at full rate requests queue
        // behind the JIT (every request over 15 ms of a cold 10 s run at 3,000/s fell in
        // its first 2 s). A function in production runs warm, and has answered its probes
        // and Prometheus all along: the first of those in a measured run deoptimised the
        // HTTP server's code (a second shape of request and response), and it was compiled
        // again during the measurement.
        await probe(target.port);
        if (opts.warmupSeconds > 0)
          await runWrk(target.url, script, { connections, seconds: opts.warmupSeconds, threads });
        const before = await counters(target.port);
        const measured = await runWrk(target.url, script, {
          connections,
          seconds: opts.seconds,
          threads,
        });
        const after = await counters(target.port);
        report({
          generator: 'wrk',
          pacedAtPerSecond: opts.pace ?? 'closed loop',
          ...measured,
          ...functionFigures(before, after, measured.requests, opts.seconds),
        });
      }
    };
    /** One open-loop run from this process at `rate` snapshots/s against one function. */
    const measureAtRate = async (
      target: (typeof targets)[number],
      rate: number,
      report: Report,
    ): Promise<void> => {
      await probe(target.port);
      const before = await counters(target.port);
      const latencies: number[] = [];
      let errors = 0;
      const statuses: Record<string, number> = {};
      const total = rate * opts.seconds;
      const started = performance.now();
      const inflight: Promise<void>[] = [];
      let sent = 0;
      await new Promise<void>((resolve) => {
        const tick = (): void => {
          const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
          while (sent < due) {
            const agent = agents[sent % agents.length]!;
            sent++;
            inflight.push(
              post(target.url, agent).then(
                (r) => {
                  latencies.push(r.ms);
                  statuses[r.status] = (statuses[r.status] ?? 0) + 1;
                  if (r.status !== 200) errors++;
                },
                () => void errors++,
              ),
            );
          }
          if (sent >= total) resolve();
          else setTimeout(tick, 2);
        };
        tick();
      });
      await Promise.all(inflight);
      const seconds = (performance.now() - started) / 1000;
      const after = await counters(target.port);
      latencies.sort((a, b) => a - b);
      report({
        targetPerSecond: rate,
        achievedPerSecond: Math.round(latencies.length / seconds),
        errors,
        statuses,
        latencyMs: {
          p50: Number(percentile(latencies, 0.5).toFixed(2)),
          p99: Number(percentile(latencies, 0.99).toFixed(2)),
          max: Number((latencies.at(-1) ?? Number.NaN).toFixed(2)),
        },
        ...functionFigures(before, after, latencies.length, seconds),
      });
    };
    // Round by round, each function in turn.
    const schedule = Array.from({ length: opts.rounds }, (_, round) =>
      targets.map((target) => ({ round, target })),
    ).flat();
    for (const { round, target } of schedule) {
      await pinForMeasuring(target);
      const labels = {
        ...(targets.length > 1 ? { entry: target.entry } : {}),
        ...(opts.rounds > 1 ? { round } : {}),
      };
      const report: Report = (result) => {
        results.push({ ...labels, ...result });
        process.stderr.write(`[bench] ${JSON.stringify(results.at(-1))}\n`);
      };
      if (opts.generator === 'wrk') await measureWithWrk(target, report);
      for (const rate of opts.generator === 'node' ? opts.rates : [])
        await measureAtRate(target, rate, report);
    }
    console.log(
      JSON.stringify({
        machine: `${cpus().length} cores`,
        functionArgs: opts.functionArgs,
        functionPinnedToCore: cores > 1 ? 0 : 'n/a',
        rounds: opts.rounds,
        nodeOptions,
        nodeArgs: opts.nodeArgs,
        nodes: opts.nodes,
        seconds: opts.seconds,
        warmupSeconds: opts.generator === 'wrk' ? opts.warmupSeconds : 0,
        results,
      }),
    );
    await dispatcher.close();
  } finally {
    for (const close of closers) close();
    await Promise.all(functions.map((fn) => fn.stop('SIGTERM')));
    await stopControlPlane(stateDir).catch(() => undefined);
    await rm(stateDir, { recursive: true, force: true });
  }
}

await main();

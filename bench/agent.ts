/**
 * `npm run bench:agent -- [--seconds S] [--xid-every S] [--one-shot] [--hostile stdout|stderr] [--env K=V]… [--tsx]`: one node agent's
 * cost and event latency (issue "Agent", Performance): the agent (the compiled build, as an
 * image runs it, with the DaemonSet's NODE_OPTIONS) samples a node of 8 GPUs once a second
 * through the nvidia-smi collector, follows a kernel log (a file here) and pushes to a
 * stand-in ingest function on loopback that answers as the real one does. The tool is a
 * stand-in printing the query CSV: by default the agent keeps it running in loop mode (one
 * perl process printing every period), with `--one-shot` it starts one per sample (sh + awk).
 *
 * Reports: CPU as a share of one core over the run (the agent's own user+system time, and
 * its tools': the reaped ones and the live loop, from /proc/<pid>/stat), RSS every 10 s (the
 * trend: a linear fit's slope in MiB per 10 minutes, and first/last/max), the stand-in tool's
 * own cost per one-shot run, and for an NVIDIA XID line appended to the kernel log every
 * `--xid-every` seconds the time until the snapshot carrying it reaches the function
 * (p50/p95/max). Prints one JSON line. Not part of the test suite. Targets: <= 2% of a core,
 * <= 80 MiB RSS and flat, event to snapshot sent <= 50 ms.
 *
 * `--hostile stdout`: every run of the tool prints 200 MB (the agent cuts it at its 4 MiB cap
 * and fails the run, so it sends liveness snapshots); `--hostile stderr`: every run prints 50 MB
 * on stderr before its good rows (read, since only stdout counts). Both one-shot. Target: RSS
 * under 90 MiB for 10 minutes (issue 34). */
import { execFile } from 'node:child_process';
import { appendFileSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { shippedNode } from '../hack/shipped-node.js';
import { WITHOUT_NODE_CHECKS } from '../stack/index.js';
import { startControllerProcess, type ControllerProcess } from '../stack/index.js';
import { percentile } from './pipeline/summary.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
const NODE = 'bench-gpu-node';
const GPUS = 8;
/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

function options(): {
  seconds: number;
  xidEvery: number;
  tsx: boolean;
  build: boolean;
  oneShot: boolean;
  hostile: 'stdout' | 'stderr' | undefined;
  env: Record<string, string>;
} {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string' },
      'xid-every': { type: 'string' },
      tsx: { type: 'boolean' },
      'no-build': { type: 'boolean' },
      'one-shot': { type: 'boolean' },
      hostile: { type: 'string' },
      env: { type: 'string', multiple: true },
    },
  });
  const env: Record<string, string> = {};
  for (const pair of values.env ?? []) {
    const at = pair.indexOf('=');
    if (at < 1) throw new Error(`--env KEY=VALUE, got ${JSON.stringify(pair)}`);
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  const seconds = Number(values.seconds ?? 600);
  const xidEvery = Number(values['xid-every'] ?? 15);
  if (!(seconds >= 20) || !(xidEvery >= 2)) throw new Error('--seconds >= 20, --xid-every >= 2');
  const hostile = values.hostile;
  if (hostile !== undefined && hostile !== 'stdout' && hostile !== 'stderr')
    throw new Error('--hostile stdout|stderr');
  return {
    seconds,
    xidEvery,
    tsx: values.tsx === true,
    build: values['no-build'] !== true,
    oneShot: values['one-shot'] === true || hostile !== undefined,
    hostile,
    env,
  };
}

/** The DaemonSet's NODE_OPTIONS (k8s/agent/daemonset.yaml). */
function shippedNodeOptions(): string {
  return shippedNode(join(ROOT, 'k8s/agent/daemonset.yaml')).nodeOptions;
}

/**
 * A stand-in nvidia-smi: prints one CSV row per GPU for whatever --query-gpu asks, once (awk),
 * or with `-lms N` every N ms until killed (one perl process, as the real loop is one process).
 */
function fakeNvidiaSmi(dir: string, hostile?: 'stdout' | 'stderr'): string {
  const path = join(dir, 'nvidia-smi');
  // Before the rows: 200 MB on stdout (cut by the agent's cap), or 50 MB on stderr (drained).
  const before =
    hostile === 'stdout'
      ? 'head -c 209715200 /dev/zero | tr "\\0" x\n'
      : hostile === 'stderr'
        ? 'head -c 52428800 /dev/zero | tr "\\0" w >&2\n'
        : '';
  const rows = `
  k = split(q, f, ",")
  for (i = 0; i < n; i++) {
    line = ""
    for (j = 1; j <= k; j++) {
      x = f[j]; v = "0"
      if (x == "index") v = i
      else if (x == "count") v = n
      else if (x == "uuid") v = sprintf("GPU-bench-%04d", i)
      else if (x == "pci.bus_id") v = sprintf("00000000:%02X:00.0", 16 + i)
      else if (x == "name") v = "NVIDIA H100 80GB HBM3"
      else if (x == "temperature.gpu") v = 40 + i
      else if (x == "power.draw") v = "300.00"
      else if (x == "pcie.link.gen.current") v = 5
      else if (x == "pcie.link.width.current") v = 16
      line = line (j > 1 ? ", " : "") v
    }
    print line
  }`;
  writeFileSync(
    path,
    `#!/bin/sh
q=""; ms=""; prev=""
for a in "$@"; do
  case "$a" in --query-gpu=*) q="\${a#--query-gpu=}";; esac
  [ "$prev" = "-lms" ] && ms="$a"; prev="$a"
done
${before}[ -z "$ms" ] && exec awk -v q="$q" -v n=${GPUS} 'BEGIN {${rows}
}'
# Loop mode: the rows once, kept, then printed every period by one process.
rows=$(awk -v q="$q" -v n=${GPUS} 'BEGIN {${rows}
}')
exec perl -e 'use Time::HiRes qw(sleep); $| = 1; my ($rows, $s) = @ARGV; while (1) { print "$rows\n"; sleep($s / 1000); }' "$rows" "$ms"
`,
    { mode: 0o755 },
  );
  return path;
}

/** A stand-in ingest function: answers 200 as the real one does, and reports each snapshot. */
async function standInFunction(
  onSnapshot: (snapshot: { seq: number; payload: { gpus?: { xid_events: { xid: number }[] }[] } }) => void,
): Promise<{ url: string; server: Server; requests: () => number }> {
  let requests = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      requests++;
      const parsed = JSON.parse(body) as { snapshots?: unknown[] } & Record<string, unknown>;
      const snapshots = (parsed.snapshots ?? [parsed]) as Parameters<typeof onSnapshot>[0][];
      for (const s of snapshots) onSnapshot(s);
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          leader: 'bench-leader',
          term: 1,
          results: snapshots.map(() => ({ node: NODE, accepted: true, entry: null })),
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    requests: () => requests,
  };
}

/** utime+stime (own) and cutime+cstime (reaped children) of one process, seconds. */
function processCpu(pid: number): { own: number; reaped: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const n = (i: number): number => Number(fields[i - 3]);
  return { own: (n(14) + n(15)) / USER_HZ, reaped: (n(16) + n(17)) / USER_HZ };
}

/** The live descendants of `pid` (children of every thread, recursively). */
function descendants(pid: number): number[] {
  const found: number[] = [];
  const visit = (parent: number): void => {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${parent}/task`);
    } catch {
      return; // gone meanwhile
    }
    for (const task of tasks) {
      let children = '';
      try {
        children = readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const child of children.trim().split(' ').filter(Boolean).map(Number)) {
        found.push(child);
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}

/**
 * CPU seconds of the agent (`own`) and of its tools (`children`): the children it reaped plus
 * the live ones (the nvidia-smi loop runs the whole time and is never reaped), with their own
 * reaped children. A tool live at one reading and reaped by the next counts once: the
 * difference of the two readings is the rest of its time.
 */
function cpuSeconds(pid: number): { own: number; children: number } {
  const agent = processCpu(pid);
  let children = agent.reaped;
  for (const child of descendants(pid)) {
    try {
      const cpu = processCpu(child);
      children += cpu.own + cpu.reaped;
    } catch {
      // exited meanwhile: its time is in its parent's reaped time by the next reading
    }
  }
  return { own: agent.own, children };
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** Least-squares slope of y over x. */
function slope(points: readonly [number, number][]): number {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p[0], 0) / n;
  const my = points.reduce((s, p) => s + p[1], 0) / n;
  const num = points.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0);
  const den = points.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** The stand-in tool's own CPU per run, measured apart from the agent (ms). */
async function toolCostMs(tool: string): Promise<number> {
  const runs = 20;
  const t0 = performance.now();
  for (let i = 0; i < runs; i++)
    await run(tool, ['--query-gpu=index,uuid,pci.bus_id,temperature.gpu', '--format=csv,noheader,nounits']);
  return round((performance.now() - t0) / runs, 1);
}

async function main(): Promise<void> {
  const opts = options();
  const dir = await mkdtemp(join(tmpdir(), 'npu-fault-bench-agent-'));
  let agent: ControllerProcess | undefined;
  let fn: Awaited<ReturnType<typeof standInFunction>> | undefined;
  try {
    if (opts.build && !opts.tsx) {
      process.stderr.write('[bench] npm run build\n');
      await run('npm', ['run', 'build'], { cwd: ROOT });
    }
    const tool = fakeNvidiaSmi(dir, opts.hostile);
    const kmsg = join(dir, 'kmsg');
    writeFileSync(kmsg, '');
    const token = join(dir, 'token');
    writeFileSync(token, 'bench-token', { mode: 0o600 });
    // XID injections waiting for their snapshot: the time each was appended.
    const pending: { xid: number; gpu: number; at: number }[] = [];
    const latencies: number[] = [];
    let snapshots = 0;
    fn = await standInFunction((snapshot) => {
      snapshots++;
      const now = performance.now();
      for (const [gpu, g] of (snapshot.payload.gpus ?? []).entries()) {
        for (const event of g.xid_events) {
          const i = pending.findIndex((p) => p.gpu === gpu && p.xid === event.xid);
          if (i >= 0) latencies.push(now - pending.splice(i, 1)[0]!.at);
        }
      }
    });
    agent = startControllerProcess({
      identity: 'agent',
      command: 'agent',
      ...(opts.tsx ? {} : { entry: join(ROOT, 'dist/cli/run.js') }),
      args: [
        '--collector=nvidia-smi',
        `--nvidia-smi-command=${tool}`,
        `--node=${NODE}`,
        `--function-url=${fn.url}`,
        `--token-file=${token}`,
        `--events-kmsg-path=${kmsg}`,
        '--no-events-device-nodes',
        ...(opts.oneShot ? ['--no-nvidia-smi-loop'] : []),
        '--no-inventory-enabled',
        ...WITHOUT_NODE_CHECKS,
        '--log-level=info', // the 'listening' line carries the port
      ],
      env: {
        NODE_OPTIONS: shippedNodeOptions(),
        ...shippedNode(join(ROOT, 'k8s/agent/daemonset.yaml')).mallocEnv,
        ...opts.env,
      },
    });
    const agentPort = await agent.port('http');
    /** The agent's V8 heap in use and committed, from its own /metrics (MiB). */
    const heap = async (): Promise<{ used: number; total: number }> => {
      const text = await (await fetch(`http://127.0.0.1:${agentPort}/metrics`)).text();
      const value = (name: string): number =>
        Number(new RegExp(`^npu_fault_agent_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN) / 2 ** 20;
      return { used: value('nodejs_heap_size_used_bytes'), total: value('nodejs_heap_size_total_bytes') };
    };
    const pid = agent.child.pid!;
    process.stderr.write(`[bench] agent pid ${pid}; ${opts.seconds} s\n`);
    // Warm up past the probe's 5 s warm-up and the first pushes, then measure.
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const start = { cpu: cpuSeconds(pid), at: performance.now(), snapshots };
    const rss: [number, number][] = [[0, rssMiB(pid)]];
    const heaps = [await heap()];
    let xids = 0;
    const xidValues = [13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 74, 94, 95];
    const end = performance.now() + opts.seconds * 1000;
    let nextXid = performance.now() + opts.xidEvery * 1000;
    let nextRss = performance.now() + 10_000;
    while (performance.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 200));
      const now = performance.now();
      if (now >= nextXid) {
        const gpu = xids % GPUS;
        const xid = xidValues[xids % xidValues.length]!;
        xids++;
        const bus = (16 + gpu).toString(16).padStart(2, '0');
        pending.push({ xid, gpu, at: performance.now() });
        appendFileSync(
          kmsg,
          `[${(now / 1000).toFixed(6)}] NVRM: Xid (PCI:0000:${bus}:00): ${xid}, pid=4242, name=python3, bench\n`,
        );
        nextXid = now + opts.xidEvery * 1000;
      }
      if (now >= nextRss) {
        rss.push([(now - start.at) / 1000, rssMiB(pid)]);
        heaps.push(await heap());
        nextRss = now + 10_000;
      }
    }
    const finish = { cpu: cpuSeconds(pid), at: performance.now(), snapshots };
    const wall = (finish.at - start.at) / 1000;
    const own = finish.cpu.own - start.cpu.own;
    const children = finish.cpu.children - start.cpu.children;
    const sorted = [...latencies].sort((a, b) => a - b);
    const rssValues = rss.map((p) => p[1]);
    process.stdout.write(
      `${JSON.stringify({
        seconds: round(wall, 1),
        snapshotsPerSecond: round((finish.snapshots - start.snapshots) / wall),
        requests: fn.requests(),
        cpuPercentOfCore: round((100 * (own + children)) / wall, 2),
        cpuAgentPercent: round((100 * own) / wall, 2),
        cpuToolChildrenPercent: round((100 * children) / wall, 2),
        // The hostile tools print hundreds of MB: their cost is not the point.
        standInToolWallMsPerRun: opts.hostile === undefined ? await toolCostMs(tool) : null,
        rssMiB: {
          first: round(rssValues[0]!, 1),
          last: round(rssValues.at(-1)!, 1),
          max: round(Math.max(...rssValues), 1),
          slopeMiBPer10Min: round(slope(rss) * 600, 2),
          every10s: rssValues.map((v) => round(v, 1)),
        },
        // V8's heap beside RSS: live data (used, read after whatever GC last ran) against what
        // V8 keeps committed; used flat while RSS climbs is V8 holding memory, not a leak.
        heapMiB: {
          usedEvery10s: heaps.map((h) => round(h.used, 1)),
          totalEvery10s: heaps.map((h) => round(h.total, 1)),
        },
        xidToSnapshotMs: {
          injected: xids,
          seen: latencies.length,
          p50: round(percentile(sorted, 0.5), 1),
          p95: round(percentile(sorted, 0.95), 1),
          max: round(sorted.at(-1) ?? Number.NaN, 1),
        },
        mode: opts.oneShot ? 'one-shot' : 'loop',
        hostile: opts.hostile ?? null,
        nodeOptions: shippedNodeOptions(),
        env: opts.env,
      })}\n`,
    );
  } finally {
    await agent?.stop('SIGTERM');
    fn?.server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();

/**
 * `npm run bench:replay -- [--mb N] [--nodes N] [--keep]`: the cost of `npu-fault replay`
 * on large traces (issue "Detection core hardening", items 2 and 3).
 *
 * Writes two traces of about N MB each (default 1024) for a round-robin fleet of 910B, 310P
 * and H100 nodes sampling once a second, with a few faults: one whose collected_at are whole
 * seconds, one with ±20 ms of jitter as real agents produce. Each is replayed by the real
 * command line in a child process (`npu-fault replay <file>`, output discarded), which
 * reports its wall time and peak RSS (getrusage maxRSS). Prints a table and one JSON line.
 * Not part of the test suite.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Snapshot } from '../contracts/index.js';
import { createRng, generateTrace, roundRobinFleet } from '../core/sim/index.js';

interface Options {
  mb: number;
  nodes: number;
  keep: boolean;
}

function options(): Options {
  const { values } = parseArgs({
    options: { mb: { type: 'string' }, nodes: { type: 'string' }, keep: { type: 'boolean' } },
  });
  const mb = Number(values.mb ?? 1024);
  const nodes = Number(values.nodes ?? 1000);
  if (!(mb > 0) || !Number.isInteger(nodes) || nodes < 1) throw new Error('--mb > 0 and --nodes >= 1');
  return { mb, nodes, keep: values.keep === true };
}

/** One template snapshot per node (its second 0), mutated per second while writing. */
function templates(nodes: number): Snapshot[] {
  return generateTrace({ nodes: roundRobinFleet(nodes, 1), seconds: 1, faults: [], seed: 1 }).snapshots;
}

/** Sets every device's temperature (and for `link`, the first device's PCIe link). */
function shape(snapshot: Snapshot, temperature: number, linkDown: boolean): void {
  const p = snapshot.payload;
  if (p.family === '910B')
    p.npus.forEach((d, i) => {
      d.temp_c = temperature;
      if (i === 0 && d.pcie) d.pcie.link = linkDown ? 'down' : 'up';
    });
  else if (p.family === 'nvidia') for (const g of p.gpus) g.temperature_gpu = temperature;
  else if (p.family === '310P')
    p.cards.forEach((card, i) => {
      for (const chip of card.chips) chip.temperature = temperature;
      if (i === 0) card.pcie_link = linkDown ? 0 : 1;
    });
}

/** Writes a trace of about `bytes`; returns the snapshot count. */
async function writeTrace(path: string, bytes: number, nodes: number, jitterMs: number): Promise<number> {
  const base = templates(nodes);
  const start = Date.parse(base[0]?.collected_at ?? '2026-11-29T08:00:00Z');
  const rng = createRng(`replay-bench-${jitterMs}`);
  const out = createWriteStream(path);
  let written = 0;
  let count = 0;
  for (let second = 0; written < bytes; second++) {
    const lines: string[] = [];
    base.forEach((snapshot, i) => {
      // 2% of nodes run hot for a minute every ten; 1% lose a link for 20 s every five minutes.
      const hot = i % 50 === 0 && second % 600 < 60;
      const down = i % 100 === 7 && second % 300 < 20;
      shape(snapshot, hot ? 91 : 55 + (i % 7), down);
      snapshot.seq = second + 1;
      const jitter = jitterMs === 0 ? 0 : Math.round((rng.next() * 2 - 1) * jitterMs);
      snapshot.collected_at = new Date(start + second * 1000 + jitter).toISOString();
      lines.push(JSON.stringify(snapshot));
    });
    const text = `${lines.join('\n')}\n`;
    written += Buffer.byteLength(text);
    count += lines.length;
    if (!out.write(text)) await new Promise<void>((resolve) => out.once('drain', resolve));
  }
  await new Promise<void>((resolve, reject) =>
    out.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
  return count;
}

interface Run {
  seconds: number;
  /** CPU time of the whole child (tsx start-up included): steadier than wall time on a busy machine. */
  cpuSeconds: number;
  maxRssMiB: number;
  transitions: number;
}

/** Replays `path` through the real CLI in a child process that reports its cost. */
function replayInChild(path: string): Promise<Run> {
  const child = `
    const { register } = await import('tsx/esm/api');
    register();
    const { main } = await import(${JSON.stringify(new URL('../cli/main.ts', import.meta.url).href)});
    let transitions = 0;
    const io = { ...(await import(${JSON.stringify(new URL('../cli/process-io.ts', import.meta.url).href)})).processIO(),
      stdout: (text) => { for (const c of text) if (c === '\\n') transitions++; } };
    const started = process.hrtime.bigint();
    const code = await main(['replay', process.argv[1]], io);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const cpu = process.cpuUsage();
    process.stderr.write(JSON.stringify({ code, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, maxRssKiB: process.resourceUsage().maxRSS, transitions }) + '\\n');
  `;
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--input-type=module', '-e', child, path], {
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    let err = '';
    proc.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    proc.on('error', reject);
    proc.on('close', () => {
      const last = err.trim().split('\n').at(-1) ?? '';
      try {
        const r = JSON.parse(last) as Omit<Run, 'maxRssMiB'> & { code: number; maxRssKiB: number };
        if (r.code !== 0) throw new Error(`replay exited ${r.code}`);
        resolve({
          seconds: r.seconds,
          cpuSeconds: r.cpuSeconds,
          maxRssMiB: r.maxRssKiB / 1024,
          transitions: r.transitions,
        });
      } catch (error) {
        reject(new Error(`replay child failed: ${err.slice(0, 500)}`, { cause: error }));
      }
    });
  });
}

async function main(): Promise<void> {
  const opts = options();
  const dir = await mkdtemp(join(tmpdir(), 'npu-fault-replay-bench-'));
  const results: Record<string, unknown> = { bench: 'replay', node: process.version, nodes: opts.nodes };
  try {
    for (const [name, jitter] of [
      ['aligned', 0],
      ['jittered', 20],
    ] as const) {
      const path = join(dir, `${name}.jsonl`);
      const snapshots = await writeTrace(path, opts.mb * 1024 * 1024, opts.nodes, jitter);
      const size = (await stat(path)).size;
      const run = await replayInChild(path);
      const line = `${name.padEnd(9)} ${(size / 1048576).toFixed(0)} MiB, ${snapshots.toLocaleString('en-US')} snapshots: ${run.seconds.toFixed(1)} s (${run.cpuSeconds.toFixed(1)} s CPU), peak RSS ${run.maxRssMiB.toFixed(0)} MiB, ${run.transitions} transitions`;
      process.stdout.write(`${line}\n`);
      results[name] = { bytes: size, snapshots, ...run };
    }
    process.stdout.write(`${JSON.stringify(results)}\n`);
  } finally {
    if (!opts.keep) await rm(dir, { recursive: true, force: true });
    else process.stdout.write(`traces kept in ${dir}\n`);
  }
}

await main();

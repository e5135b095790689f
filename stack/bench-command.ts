/**
 * `npu-fault bench [--devices N] [--seconds S] [--runs R] [--check]`: measures the detection
 * engine on one core (bench/): state-machine throughput in device-samples per second
 * (target >= 200,000), heap per tracked device, and the cost of normalisation, snapshot
 * validation and document rendering. Prints a table, then one JSON line with the figures.
 *
 * Heap figures need a forced GC: without `global.gc` the command re-runs itself as
 * `node --expose-gc bin/npu-fault.js bench …` (same arguments) and relays its output.
 * Exit 0; with --check, exit 1 when throughput is under the target.
 */
import { spawn } from 'node:child_process';
import { arch, availableParallelism, platform } from 'node:os';
import { createEngine } from '../core/engine/index.js';
import { measureMemory, measurePaths, measureThroughput, type Gc } from '../bench/measure.js';
import { buildWorkload } from '../bench/workload.js';
import { booleanOption, isExit, numberOption, settleCommandLine, type ParsedArgs } from '../cli/args.js';
import { EXIT_DATA, EXIT_USAGE, type CliIO, type Subcommand } from '../cli/io.js';
import { BENCH, MEMORY_SIZES, THROUGHPUT_TARGET } from '../cli/specs.js';

export { MEMORY_SIZES, THROUGHPUT_TARGET };

interface BenchArgs {
  devices: number;
  seconds: number;
  runs: number;
  check: boolean;
}

const CHILD_ENV = 'NPU_FAULT_BENCH_CHILD';

function toBenchArgs(args: ParsedArgs): BenchArgs {
  const whole = (name: string, fallback: number): number =>
    numberOption(args, name, { integer: true, min: 1 }) ?? fallback;
  return {
    devices: whole('devices', 8000),
    seconds: whole('seconds', 60),
    runs: whole('runs', 5),
    check: booleanOption(args, 'check'),
  };
}

/** Re-runs this command under `node --expose-gc`, relaying its output; resolves to its exit code. */
function respawnWithGc(args: readonly string[], io: CliIO): Promise<number> {
  const script = process.argv[1] ?? '';
  const child = spawn(process.execPath, ['--expose-gc', ...process.execArgv, script, 'bench', ...args], {
    env: { ...process.env, [CHILD_ENV]: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk: Buffer) => io.stdout(chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => io.stderr(chunk.toString()));
  return new Promise((resolve) => {
    child.on('error', (error) => {
      io.stderr(`npu-fault bench: could not re-run with --expose-gc: ${error.message}\n`);
      resolve(EXIT_DATA);
    });
    child.on('close', (code) => resolve(code ?? EXIT_DATA));
  });
}

const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/**
 * `npu-fault bench pipeline …` (bench/pipeline/main.ts): the whole pipeline on a local
 * control plane. Exit 0 when every fault was seen, none was invented and the replay matched;
 * 1 otherwise; 2 for a bad argument.
 */
async function pipelineSubcommand(args: string[], io: CliIO): Promise<number> {
  const { parsePipelineArgs, pipelineBench, PIPELINE_USAGE } = await import('../bench/pipeline/main.js');
  if (args.includes('--help') || args.includes('-h')) {
    io.stdout(PIPELINE_USAGE);
    return 0;
  }
  let options;
  try {
    options = parsePipelineArgs(args);
  } catch (error) {
    io.stderr(`npu-fault bench pipeline: ${(error as Error).message}\n`);
    return EXIT_USAGE;
  }
  const { result, files } = await pipelineBench(options, (line) => io.stderr(`${line}\n`));
  io.stdout(`report: ${files.markdown}\nresults: ${files.json}\ncharts: ${files.charts.length}\n`);
  // A saturated run's documents come seconds apart, so short excursions (agent-unreachable
  // flaps of the overload itself) fall between them: only a lost failure counts there.
  const broken = result.runs.filter(
    (r) =>
      r.faults.missed > 0 ||
      r.faults.falseFailed > 0 ||
      (r.lossless.lostByStatus?.failed ?? 0) > 0 ||
      (!r.saturated && (r.lossless.lost > 0 || r.lossless.duplicated > 0)),
  );
  for (const r of broken)
    io.stderr(
      `N=${r.nodes}: ${r.faults.missed} missed, ${r.faults.falseFailed} false failed, ${r.lossless.lost} lost, ${r.lossless.duplicated} duplicated\n`,
    );
  return broken.length === 0 ? 0 : EXIT_DATA;
}

/** The bench subcommand. */
export const bench: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  if (args[0] === 'pipeline') return pipelineSubcommand(args.slice(1), io);
  const parsed = settleCommandLine(BENCH, args, io, toBenchArgs);
  if (isExit(parsed)) return parsed.exit;
  const gcFn = (globalThis as { gc?: () => void }).gc;
  // Only the CLI entry point can be re-run as a script; anything else measures without GC.
  if (!gcFn && !process.env[CHILD_ENV] && /npu-fault(\.js)?$/.test(process.argv[1] ?? ''))
    return respawnWithGc(args, io);
  const gc: Gc = gcFn ?? (() => undefined);
  const line = (label: string, value: string): void => io.stdout(`  ${label.padEnd(34)} ${value}\n`);

  io.stdout(
    `npu-fault bench: node ${process.version}, ${platform()} ${arch()}, ${availableParallelism()} CPUs (the engine runs on one)\n`,
  );
  const built = process.hrtime.bigint();
  const workload = buildWorkload({ devices: parsed.devices, seconds: parsed.seconds });
  const buildS = Number(process.hrtime.bigint() - built) / 1e9;
  io.stdout(
    `workload: ${fmt(workload.nodes)} nodes x 8 devices x ${workload.seconds} s = ${fmt(workload.deviceSamples)} device-samples ` +
      `(${fmt(workload.snapshots.length)} snapshots, built in ${fmt(buildS, 1)} s, not timed)\n\n`,
  );

  const t = measureThroughput(workload, createEngine, parsed.runs, gc);
  const pass = t.samplesPerSecond >= THROUGHPUT_TARGET;
  line(
    '1. state machine (engine.observe)',
    `${fmt(t.samplesPerSecond)} device-samples/s  (target ${fmt(THROUGHPUT_TARGET)}: ${pass ? 'ok' : 'BELOW'})`,
  );
  line(
    '',
    `runs ${t.runsMs.map((ms) => `${fmt(ms)} ms`).join(', ')}; median ${fmt(t.medianMs)} ms; ${fmt(t.accepted)} accepted, ${fmt(t.transitions)} transitions`,
  );

  const memory = gcFn ? MEMORY_SIZES.map((n) => measureMemory(n, createEngine, gc)) : [];
  if (memory.length === 0) line('2. heap per tracked device', 'skipped: needs node --expose-gc');
  for (const m of memory)
    line(
      m === memory[0] ? '2. heap per tracked device' : '',
      `${fmt(m.devices)} devices: ${fmt(m.bytesPerDevice)} B/device (${fmt(m.heapBytes / 1048576, 1)} MiB)`,
    );

  const p = measurePaths(workload, createEngine, parsed.runs);
  line('3. normalisation', `${fmt(p.normaliseUsPerDevice, 3)} µs/device`);
  line('   validation (JSON.parse + zod)', `${fmt(p.validateUsPerSnapshot, 1)} µs/snapshot of 8 devices`);
  line(
    '   document rendering',
    `${fmt(p.documentMs, 2)} ms + ${fmt(p.stringifyMs, 2)} ms JSON.stringify; ${fmt(p.documentNodes)} of ${fmt(workload.nodes)} nodes listed, ${fmt(p.documentBytes)} bytes`,
  );

  const figures = {
    bench: 'npu-fault',
    node: process.version,
    cpus: availableParallelism(),
    devices: workload.devices,
    seconds: workload.seconds,
    device_samples: workload.deviceSamples,
    throughput_samples_per_s: Math.round(t.samplesPerSecond),
    throughput_target: THROUGHPUT_TARGET,
    throughput_ok: pass,
    observe_runs_ms: t.runsMs.map((ms) => Math.round(ms * 10) / 10),
    heap_bytes_per_device: Object.fromEntries(memory.map((m) => [m.devices, Math.round(m.bytesPerDevice)])),
    normalise_us_per_device: Math.round(p.normaliseUsPerDevice * 1000) / 1000,
    validate_us_per_snapshot: Math.round(p.validateUsPerSnapshot * 10) / 10,
    document_ms: Math.round(p.documentMs * 100) / 100,
    document_stringify_ms: Math.round(p.stringifyMs * 100) / 100,
    document_bytes: p.documentBytes,
  };
  io.stdout(`\n${JSON.stringify(figures)}\n`);
  return parsed.check && !pass ? EXIT_DATA : 0;
};

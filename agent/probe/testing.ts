/**
 * Test support for the probe and the collectors: fake tools as real bash scripts (so the real
 * exec, process groups and pipes are exercised), an in-process fake ExecTool, a scripted fake
 * collector, a logger that keeps its lines, and process checks.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { payloadSchema, type Payload } from '../../contracts/index.js';
import { createLogger, type Logger } from '../../platform/index.js';
import type { Collector } from '../collectors/index.js';
import { ExecToolError, type ExecTool } from './exec.js';
import type { StreamTool, ToolStreamHandlers } from './stream.js';

/** A fresh temporary directory; `remove()` deletes it. */
export function tempDir(prefix = 'npu-fault-agent-'): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** What a fake tool does for one argument list. */
export interface FakeToolResponse {
  /** Printed on stdout first. */
  stdout?: string;
  /** Printed on stderr after stdout. */
  stderr?: string;
  /** Exit code (default 0). */
  exitCode?: number;
  /**
   * After printing, start a sleeping child (in the tool's process group) and wait for it: the
   * tool hangs, and `pids()` gives the tool's and the child's pids. With `stdout` set this is
   * a tool that prints part of its output and then stalls past any timeout.
   */
  hang?: boolean;
}

/** A bash script standing in for a tool, answering per argument list. */
export interface FakeTool {
  /** The script's path: the command to run. */
  readonly path: string;
  /** Sets the answer to `args` (one string: the arguments joined by single blanks). */
  respond(args: string | readonly string[], response: FakeToolResponse): void;
  /** Sets the answer to any argument list without an answer of its own. */
  respondAll(response: FakeToolResponse): void;
  /** Every call so far, each as its arguments joined by single blanks. */
  calls(): string[];
  /** `[tool, child]` pids of the latest hanging call, or null while it has not written them. */
  pids(): [number, number] | null;
}

/** The file-name key of an argument list (the script computes the same with md5sum). */
function keyOf(args: string | readonly string[]): string {
  const text = typeof args === 'string' ? args : args.join(' ');
  return createHash('md5').update(text).digest('hex');
}

/**
 * Writes an executable bash script `name` into `dir` that looks up its answer by the md5 of
 * its arguments, logs each call, and prints, exits or hangs as told.
 */
export function createFakeTool(dir: string, name: string): FakeTool {
  const state = join(dir, `${name}.d`);
  mkdirSync(state, { recursive: true });
  const path = join(dir, name);
  const script = `#!/bin/bash
state='${state}'
printf '%s\\n' "$*" >> "$state/calls"
key=$(printf '%s' "$*" | md5sum | cut -c1-32)
r="$state/$key"
[ -e "$r.set" ] || r="$state/default"
[ -e "$r.stdout" ] && cat "$r.stdout"
[ -e "$r.stderr" ] && cat "$r.stderr" >&2
if [ -e "$r.hang" ]; then
  sleep 1000 &
  echo "$$ $!" > "$state/pids.tmp" && mv "$state/pids.tmp" "$state/pids"
  wait
fi
exit "$(cat "$r.code" 2>/dev/null || echo 0)"
`;
  writeFileSync(path, script, { mode: 0o755 });
  const write = (base: string, response: FakeToolResponse): void => {
    for (const ext of ['set', 'stdout', 'stderr', 'code', 'hang']) rmSync(`${base}.${ext}`, { force: true });
    if (response.stdout !== undefined) writeFileSync(`${base}.stdout`, response.stdout);
    if (response.stderr !== undefined) writeFileSync(`${base}.stderr`, response.stderr);
    if (response.exitCode !== undefined) writeFileSync(`${base}.code`, String(response.exitCode));
    if (response.hang) writeFileSync(`${base}.hang`, '');
    writeFileSync(`${base}.set`, '');
  };
  return {
    path,
    respond: (args, response) => write(join(state, keyOf(args)), response),
    respondAll: (response) => write(join(state, 'default'), response),
    calls: () => {
      const file = join(state, 'calls');
      return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(0, -1) : [];
    },
    pids: () => {
      const file = join(state, 'pids');
      if (!existsSync(file)) return null;
      const [tool, child] = readFileSync(file, 'utf8').trim().split(' ').map(Number);
      return tool && child ? [tool, child] : null;
    },
  };
}

/**
 * True when `pid` no longer runs: no such process, or a zombie that is not ours to reap (an
 * orphan waits for its adopter; where PID 1 does not reap, as in some sandboxes, it stays a
 * zombie, killed but listed).
 */
export function isProcessGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (fields[0] === 'Z' || fields[0] === 'X') && Number(fields[1]) !== process.pid;
  } catch {
    return true;
  }
}

/**
 * Resolves once `condition()` holds, checking every few milliseconds (a condition on another
 * process or the file system, which sends no event); rejects after `timeoutMs`.
 */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline)
      throw new Error(`waitFor: ${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The open file descriptors of this process (the directory read's own one is closed by then). */
export function openFileDescriptors(): number {
  return readdirSync('/proc/self/fd').length;
}

/** One answer of the fake ExecTool. */
export type FakeExecAnswer = string | Error | { hang: true };

/** A recorded call of the fake ExecTool. */
export interface FakeExecCall {
  command: string;
  args: readonly string[];
}

/** An in-process ExecTool answering from `answer`, recording calls; `hang` waits for the signal. */
export function fakeExecTool(
  answer: (command: string, args: readonly string[]) => FakeExecAnswer,
): ExecTool & { calls: FakeExecCall[] } {
  const calls: FakeExecCall[] = [];
  const exec = (
    command: string,
    args: readonly string[],
    options: { signal: AbortSignal },
  ): Promise<string> => {
    calls.push({ command, args: [...args] });
    const result = answer(command, args);
    if (typeof result === 'string') return Promise.resolve(result);
    if (result instanceof Error) return Promise.reject(result);
    return new Promise<string>((_, reject) => {
      const stop = (): void => reject(new ExecToolError('aborted', `${command} was stopped`));
      if (options.signal.aborted) stop();
      else options.signal.addEventListener('abort', stop, { once: true });
    });
  };
  return Object.assign(exec, { calls });
}

/**
 * What the scripted collector does on one call: a payload, a failure, hang until aborted, or
 * `defer`: answer with what the test hands `release` (a tool that is slow, not stuck).
 */
export type ScriptedStep = Payload | Error | 'hang' | 'ignore-abort' | 'defer';

/**
 * A collector that plays `steps` in order (the last one repeats), counting calls. `hang`
 * rejects when the signal aborts; `ignore-abort` never settles (a collector that does not
 * honour its signal).
 */
export function scriptedCollector(
  steps: ScriptedStep[],
  name = 'fake',
): Collector & { calls: number; steps: ScriptedStep[]; release: (payload: Payload) => void } {
  let deferred: ((payload: Payload) => void) | undefined;
  const collector = {
    name,
    calls: 0,
    steps,
    release(payload: Payload): void {
      deferred?.(structuredClone(payload));
      deferred = undefined;
    },
    collect(signal: AbortSignal): Promise<Payload> {
      const step = collector.steps[Math.min(collector.calls, collector.steps.length - 1)];
      collector.calls++;
      if (step === undefined) return Promise.reject(new Error('scriptedCollector: no steps'));
      if (step === 'ignore-abort') return new Promise<Payload>(() => undefined);
      if (step === 'defer') return new Promise<Payload>((resolve) => (deferred = resolve));
      if (step === 'hang')
        return new Promise<Payload>((_, reject) => {
          if (signal.aborted) reject(signal.reason as Error);
          signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
        });
      if (step instanceof Error) return Promise.reject(step);
      return Promise.resolve(structuredClone(step));
    },
  };
  return collector;
}

/** A logger at debug level whose lines are kept, parsed, in `lines`. */
export function memoryLogger(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({
    level: 'debug',
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  return { log, lines };
}

/** A small valid nvidia payload (two GPUs at `temperature`), for tests that need any payload. */
export function twoGpuPayload(temperature = 40): Payload {
  const gpu = (index: number): Record<string, unknown> => ({
    index,
    uuid: `GPU-${index}`,
    bus_id: `0000:1${index}:00.0`,
    name: 'NVIDIA H100 80GB HBM3',
    temperature_gpu: temperature,
    power_draw_w: 100,
    ecc_corrected_volatile: 0,
    ecc_uncorrected_volatile: 0,
    pcie_link_gen: 5,
    pcie_link_width: 16,
  });
  return payloadSchema.parse({ family: 'nvidia', gpus: [gpu(0), gpu(1)] });
}

/** One stream the fake StreamTool started. */
export interface FakeStream {
  command: string;
  args: readonly string[];
  handlers: ToolStreamHandlers;
  stopped: boolean;
  /** Prints stdout lines (each without its `\n`), as the tool would. */
  print(...lines: string[]): void;
}

/** An in-process StreamTool recording what it starts; the test plays the tool through each stream. */
export function fakeStreamTool(): StreamTool & { streams: FakeStream[] } {
  const streams: FakeStream[] = [];
  const start: StreamTool = (command, args, handlers) => {
    const stream: FakeStream = {
      command,
      args: [...args],
      handlers,
      stopped: false,
      print: (...lines) => {
        for (const line of lines) if (!stream.stopped) handlers.onLine(line);
      },
    };
    streams.push(stream);
    return {
      stop: () => {
        stream.stopped = true;
      },
    };
  };
  return Object.assign(start, { streams });
}

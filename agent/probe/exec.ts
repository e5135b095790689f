/**
 * Runs the node's health tools (`hdc`, `npu-smi`, `nvidia-smi`) as child processes,
 * hardened for a daemon that runs them every second for months:
 *
 * - each run is detached into its own process group (and session), and on abort, timeout or
 *   exit the whole group gets SIGKILL: a tool that forked a helper and hung leaves neither
 *   behind (a helper that made a session of its own escapes; no tool seen does that);
 * - on abort the promise rejects at once and the pipes are destroyed, even when a descendant
 *   that escaped the group still holds them, so no file descriptor outlives a run;
 * - stdout is capped (maxOutputBytes, default 4 MiB): a tool printing without end is killed
 *   and the run fails, keeping nothing of what it printed; stderr is drained into its first
 *   and last few KiB, however much is printed there, so a noisy stderr neither fails a run
 *   nor grows the agent's memory;
 * - a non-zero exit fails with one line naming the exit code and the tool's first error line,
 *   and the error keeps stdout and stderr's excerpt (nvidia-smi prints good rows and exits 15
 *   when one GPU is lost, and the collector still wants the rows); other failures keep only
 *   stderr's excerpt.
 *
 * Zombies: Node reaps its direct children; a killed grandchild is reaped by whoever adopts
 * orphans, the container runtime's shim (a child subreaper) in a pod. Tools run in the C
 * locale, the number format the parsers read.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { excerpt } from '../../core/errors.js';
import { AppError } from '../../platform/index.js';

/** Runs a command; resolves with stdout; kills the whole process group on abort. */
export type ExecTool = (
  command: string,
  args: readonly string[],
  options: { signal: AbortSignal; maxOutputBytes?: number },
) => Promise<string>;

/** The default cap on each of stdout and stderr. */
export const DEFAULT_MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

/**
 * How a run failed: `spawn` (not found, not executable), `exit` (non-zero exit, or killed by
 * a signal it was not sent by us), `aborted` (the caller's signal: a timeout or a shutdown),
 * `output` (stdout or stderr over the cap).
 */
export type ExecFailureKind = 'spawn' | 'exit' | 'aborted' | 'output';

/** A failed tool run; the message is one line. */
export class ExecToolError extends AppError {
  readonly kind: ExecFailureKind;
  /** The tool's exit code, when it exited. */
  readonly exitCode: number | undefined;
  /** What the tool printed before it failed (possibly cut at the cap). */
  readonly stdout: string;
  readonly stderr: string;
  constructor(
    kind: ExecFailureKind,
    message: string,
    details: { exitCode?: number; stdout?: string; stderr?: string; cause?: unknown } = {},
  ) {
    super(`exec_${kind}`, message, { cause: details.cause });
    this.kind = kind;
    this.exitCode = details.exitCode;
    this.stdout = details.stdout ?? '';
    this.stderr = details.stderr ?? '';
  }
}

/** The first non-blank line of `text`, cut short for a one-line message. */
export function firstLine(text: string): string {
  for (const line of text.split('\n')) if (line.trim() !== '') return excerpt(line.trim(), 160);
  return '';
}

/**
 * SIGKILL to the process group `pgid`. Never throws (it runs in event handlers, where a throw
 * would end the agent): a group already gone (ESRCH) is the usual case; false on any failure.
 */
export function killProcessGroup(pgid: number): boolean {
  try {
    process.kill(-pgid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

const decoder = new TextDecoder('utf-8');

/** What is kept of stderr: its start (where tools say what failed) and its end. */
export const STDERR_HEAD_BYTES = 2048;
export const STDERR_TAIL_BYTES = 6144;

/**
 * stdout, collected up to a cap: only stdout's size decides whether a run printed too much,
 * and a run that did keeps nothing of it.
 */
class CappedOutput {
  readonly #chunks: Buffer[] = [];
  #bytes = 0;
  constructor(readonly max: number) {}
  /** Adds a chunk; false (and nothing kept) once the output passes the cap. */
  push(chunk: Buffer): boolean {
    this.#bytes += chunk.length;
    if (this.#bytes > this.max) {
      this.#chunks.length = 0;
      return false;
    }
    this.#chunks.push(chunk);
    return true;
  }
  text(): string {
    return decoder.decode(Buffer.concat(this.#chunks));
  }
}

/**
 * stderr drained into its first and last few KiB, however much a tool prints there: a noisy
 * stderr never fails a run whose stdout is good, and never grows the agent's memory.
 */
class StderrExcerpt {
  #head: Buffer = Buffer.alloc(0);
  #tail: Buffer[] = [];
  #tailBytes = 0;
  #dropped = 0;
  push(chunk: Buffer): void {
    if (this.#head.length < STDERR_HEAD_BYTES) {
      const take = Math.min(STDERR_HEAD_BYTES - this.#head.length, chunk.length);
      this.#head = Buffer.concat([this.#head, chunk.subarray(0, take)]);
      chunk = chunk.subarray(take);
      if (chunk.length === 0) return;
    }
    this.#tail.push(chunk);
    this.#tailBytes += chunk.length;
    while (this.#tailBytes - (this.#tail[0]?.length ?? 0) >= STDERR_TAIL_BYTES) {
      const gone = this.#tail.shift() as Buffer;
      this.#tailBytes -= gone.length;
      this.#dropped += gone.length;
    }
  }
  text(): string {
    let tail = Buffer.concat(this.#tail);
    let dropped = this.#dropped;
    if (tail.length > STDERR_TAIL_BYTES) {
      dropped += tail.length - STDERR_TAIL_BYTES;
      tail = tail.subarray(tail.length - STDERR_TAIL_BYTES);
    }
    if (dropped === 0) return decoder.decode(Buffer.concat([this.#head, tail]));
    // Cut on character boundaries: no half of a UTF-8 sequence at either side of the gap.
    let start = 0;
    while (start < tail.length && ((tail[start] as number) & 0xc0) === 0x80) start++;
    const head = new TextDecoder('utf-8').decode(this.#head, { stream: true });
    return `${head}\n[${dropped} bytes of stderr left out]\n${decoder.decode(tail.subarray(start))}`;
  }
}

/** A run that did not start (not found, not executable): one line naming the errno. */
function spawnFailure(name: string, error: unknown, stderr = ''): ExecToolError {
  const failure = (error ?? {}) as { code?: string; message?: string };
  const why = failure.code ?? firstLine(failure.message ?? 'unknown error');
  return new ExecToolError('spawn', `${name} could not be started: ${why}`, { stderr, cause: error });
}

/**
 * A run that ended on its own but not well. The error keeps stdout only for a non-zero exit
 * (nvidia-smi's good rows beside a lost GPU), and stderr's excerpt: a failing tool costs the
 * agent what one bounded run prints, not copies of its output.
 */
function exitFailure(
  name: string,
  code: number | null,
  killedBy: NodeJS.Signals | null,
  outputs: { stdout: string; stderr: string },
): ExecToolError {
  const { stdout, stderr } = outputs;
  if (code === null)
    return new ExecToolError('exit', `${name} was killed by ${killedBy ?? 'a signal'}`, { stderr });
  const said = firstLine(stderr) || firstLine(stdout);
  return new ExecToolError('exit', `${name} exited with code ${code}${said ? `: ${said}` : ''}`, {
    stdout,
    stderr,
    exitCode: code,
  });
}

function abortReason(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return firstLine(reason.message) || reason.name;
  return reason === undefined ? 'aborted' : firstLine(String(reason)) || 'aborted';
}

/**
 * The environment a tool runs in: `base` with LC_ALL=C (the number format the parsers read)
 * and, when `libraryPath` is given, LD_LIBRARY_PATH set to it, ahead of any value `base`
 * carries. Only the tools get the drivers' libraries: the agent's own process (Node, its
 * native modules) never loads from those directories.
 */
export function toolEnvironment(base: NodeJS.ProcessEnv, libraryPath?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, LC_ALL: 'C' };
  if (libraryPath) {
    const inherited = base.LD_LIBRARY_PATH;
    env.LD_LIBRARY_PATH = inherited ? `${libraryPath}:${inherited}` : libraryPath;
  }
  return env;
}

/** What the real ExecTool is built with. */
export interface ExecToolDeps {
  /** The environment the tools see (default: this process's); LC_ALL is always C. */
  env?: NodeJS.ProcessEnv;
  /** Directories (`a:b`) put first in the tools' LD_LIBRARY_PATH (toolEnvironment). */
  libraryPath?: string;
  /**
   * Called after every `reclaimEveryBytes` read from a tool: a young-generation collection
   * (platform's v8MinorCollection) frees the read buffers already done with. Without it, a
   * tool printing tens of MB a run leaves them to V8's external-memory heuristic, which lets
   * some 64 MiB of them pile up before it collects.
   */
  reclaim?: () => void;
  /** Default 2 MiB. */
  reclaimEveryBytes?: number;
  /** Starts a process (default node:child_process spawn; tests give a stand-in). */
  spawn?: typeof spawn;
}

/**
 * The real ExecTool on node:child_process. Not execa: with the outputs read here (bounded) and
 * the group killed here, it added nothing the agent uses, and loading it cost the agent ~17 MiB
 * of RSS (docs/decisions/0004-agent-tools-without-execa.md).
 */
export function createExecTool(deps: ExecToolDeps = {}): ExecTool {
  const env = toolEnvironment(deps.env ?? process.env, deps.libraryPath);
  const reclaimEvery = deps.reclaimEveryBytes ?? 2 * 1024 * 1024;
  let sinceReclaim = 0;
  const read = (bytes: number): void => {
    if (deps.reclaim === undefined) return;
    sinceReclaim += bytes;
    if (sinceReclaim < reclaimEvery) return;
    sinceReclaim = 0;
    deps.reclaim();
  };
  const start = deps.spawn ?? spawn;
  return (command, args, options) => run(command, args, options, { env, read, spawn: start });
}

function run(
  command: string,
  args: readonly string[],
  options: { signal: AbortSignal; maxOutputBytes?: number },
  how: { env: NodeJS.ProcessEnv; read: (bytes: number) => void; spawn: typeof spawn },
): Promise<string> {
  const { env, read } = how;
  const { signal } = options;
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const name = excerpt(command, 80);
  if (signal.aborted)
    return Promise.reject(new ExecToolError('aborted', `${name} was stopped: ${abortReason(signal)}`));
  let child: ChildProcess;
  try {
    // Detached: the tool leads a process group (and session) of its own, which is what is killed.
    child = how.spawn(command, [...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env });
  } catch (error) {
    return Promise.reject(spawnFailure(name, error));
  }
  const pid = child.pid;
  const stdout = new CappedOutput(maxOutputBytes);
  const stderr = new StderrExcerpt();
  return new Promise<string>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      outcome();
    };
    const killGroup = (): void => {
      if (pid !== undefined) killProcessGroup(pid);
    };
    const stop = (): void => {
      killGroup();
      // A descendant outside the group may still hold the pipes: close our ends now.
      child.stdout?.destroy();
      child.stderr?.destroy();
    };
    const onAbort = (): void => {
      stop();
      settle(() => reject(new ExecToolError('aborted', `${name} was stopped: ${abortReason(signal)}`)));
    };
    // First: Node reports some failures to start (EMFILE, ENFILE) only by this event, with no
    // pipes, and an 'error' nobody listens to would end the agent.
    child.once('error', (error) => {
      stop();
      settle(() => reject(spawnFailure(name, error, stderr.text())));
    });
    if (child.stdout === null || child.stderr === null) return;
    signal.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      read(chunk.length);
      if (settled || stdout.push(chunk)) return;
      stop();
      settle(() =>
        reject(
          new ExecToolError('output', `${name} printed more than ${maxOutputBytes} bytes`, {
            stderr: stderr.text(),
          }),
        ),
      );
    });
    child.stderr.on('data', (chunk: Buffer) => {
      read(chunk.length);
      stderr.push(chunk);
    });
    // Whatever the tool left running in its group goes with it. The group's id is not handed
    // to a new process while any member lives, so this reaches only the tool's descendants.
    child.once('exit', killGroup);
    // 'close': the tool has exited and both pipes are drained, so stdout is whole.
    child.once('close', (code: number | null, killedBy: NodeJS.Signals | null) =>
      settle(() => {
        if (code === 0) resolve(stdout.text());
        else reject(exitFailure(name, code, killedBy, { stdout: stdout.text(), stderr: stderr.text() }));
      }),
    );
  });
}

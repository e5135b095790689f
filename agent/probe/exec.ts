/**
 * Runs the node's health tools (`hdc`, `npu-smi`, `nvidia-smi`) as child processes with execa,
 * hardened for a daemon that runs them every second for months:
 *
 * - each run is detached into its own process group (and session), and on abort, timeout or
 *   exit the whole group gets SIGKILL: a tool that forked a helper and hung leaves neither
 *   behind (a helper that made a session of its own escapes; no tool seen does that);
 * - on abort the promise rejects at once and the pipes are destroyed, even when a descendant
 *   that escaped the group still holds them, so no file descriptor outlives a run;
 * - stdout and stderr are capped (maxOutputBytes, default 4 MiB): a tool printing without
 *   end is killed and the run fails, it never grows the agent's memory;
 * - a non-zero exit fails with one line naming the exit code and the tool's first error line,
 *   and the error keeps both outputs (nvidia-smi prints good rows and exits 15 when one GPU
 *   is lost, and the collector still wants the rows).
 *
 * Zombies: Node reaps its direct children; a killed grandchild is reaped by whoever adopts
 * orphans, the container runtime's shim (a child subreaper) in a pod. Tools run in the C
 * locale, the number format the parsers read.
 */
import type { ResultPromise, execa as Execa } from 'execa';
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

/** Output as text (execa gives bytes under `encoding: 'buffer'`, so the cap counts bytes). */
function text(output: unknown): string {
  if (output instanceof Uint8Array) return decoder.decode(output);
  return typeof output === 'string' ? output : '';
}

/** What execa's error says, read defensively (the fields differ by how the run ended). */
interface ExecaFailure {
  code?: string;
  exitCode?: number;
  signal?: string;
  isMaxBuffer?: boolean;
  isCanceled?: boolean;
  stdout?: unknown;
  stderr?: unknown;
  shortMessage?: string;
  message?: string;
}

/** Turns execa's error into an ExecToolError with a one-line message. */
function toExecToolError(
  command: string,
  error: unknown,
  maxOutputBytes: number,
  signal?: AbortSignal,
): ExecToolError {
  const failure = (error ?? {}) as ExecaFailure;
  const stdout = text(failure.stdout);
  const stderr = text(failure.stderr);
  const name = excerpt(command, 80);
  const outputs = { stdout, stderr, cause: error };
  if (failure.isMaxBuffer)
    return new ExecToolError('output', `${name} printed more than ${maxOutputBytes} bytes`, outputs);
  if (failure.isCanceled)
    return new ExecToolError('aborted', `${name} was stopped: ${abortReason(signal)}`, outputs);
  if (failure.code === 'ENOENT' || failure.code === 'EACCES' || failure.exitCode === undefined) {
    if (failure.signal) return new ExecToolError('exit', `${name} was killed by ${failure.signal}`, outputs);
    const why = failure.code ?? firstLine(failure.shortMessage ?? failure.message ?? 'unknown error');
    return new ExecToolError('spawn', `${name} could not be started: ${why}`, outputs);
  }
  const said = firstLine(stderr) || firstLine(stdout);
  return new ExecToolError('exit', `${name} exited with code ${failure.exitCode}${said ? `: ${said}` : ''}`, {
    ...outputs,
    exitCode: failure.exitCode,
  });
}

function abortReason(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return firstLine(reason.message) || reason.name;
  return reason === undefined ? 'aborted' : firstLine(String(reason)) || 'aborted';
}

/**
 * The real ExecTool on execa. `env` replaces the environment the tools see (default: this
 * process's); LC_ALL is always C.
 */
export function createExecTool(deps: { env?: NodeJS.ProcessEnv } = {}): ExecTool {
  const env = { ...(deps.env ?? process.env), LC_ALL: 'C' };
  // Loaded on the first run: an agent on the nvidia-smi loop may never need it (execa and
  // its dependencies are about 4 MiB of the agent's memory).
  let loading: Promise<typeof Execa> | undefined;
  return async (command, args, options) => {
    loading ??= import('execa').then((module) => module.execa);
    return run(await loading, command, args, options, env);
  };
}

function run(
  execa: typeof Execa,
  command: string,
  args: readonly string[],
  options: { signal: AbortSignal; maxOutputBytes?: number },
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const { signal } = options;
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const name = excerpt(command, 80);
  if (signal.aborted)
    return Promise.reject(new ExecToolError('aborted', `${name} was stopped: ${abortReason(signal)}`));
  let subprocess: ResultPromise;
  try {
    subprocess = execa(command, [...args], {
      detached: true,
      cancelSignal: signal,
      killSignal: 'SIGKILL',
      forceKillAfterDelay: false,
      stdin: 'ignore',
      encoding: 'buffer',
      maxBuffer: maxOutputBytes,
      stripFinalNewline: false,
      env,
      extendEnv: false,
      // Detached children are not killed with the agent anyway; group kills do the work.
      cleanup: false,
    });
  } catch (error) {
    return Promise.reject(toExecToolError(command, error, maxOutputBytes));
  }
  const pid = subprocess.pid;
  return new Promise<string>((resolve, reject) => {
    const killGroup = (): void => {
      if (pid !== undefined) killProcessGroup(pid);
    };
    const onAbort = (): void => {
      killGroup();
      // A descendant outside the group may still hold the pipes: close our ends now.
      subprocess.stdout?.destroy();
      subprocess.stderr?.destroy();
      reject(new ExecToolError('aborted', `${name} was stopped: ${abortReason(signal)}`));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    // Whatever the tool left running in its group goes with it. The group's id is not handed
    // to a new process while any member lives, so this reaches only the tool's descendants.
    subprocess.once('exit', killGroup);
    subprocess.then(
      (result) => {
        signal.removeEventListener('abort', onAbort);
        resolve(text(result.stdout));
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(toExecToolError(command, error, maxOutputBytes, signal));
      },
    );
  });
}

/**
 * Runs a tool that keeps printing (`nvidia-smi … -lms 1000`) as one long-lived child, line by
 * line, hardened like the one-shot runs in exec.ts:
 *
 * - the child is detached into its own process group, and `stop()` sends the whole group
 *   SIGKILL and closes our ends of its pipes (idempotent; also done when it ends by itself);
 * - a line longer than maxLineBytes ends the stream (a tool printing without a line end never
 *   grows the agent's memory);
 * - `onEnd` is called exactly once, with a one-line reason: the tool exited (its code or
 *   signal, and its first stderr line), could not be started, or printed an overlong line.
 *   After `stop()` nothing more is called.
 *
 * If the agent itself dies, the orphaned tool's next write finds the pipe closed and the tool
 * dies of SIGPIPE within one period (and in a pod the container's end kills it anyway).
 */
import { spawn } from 'node:child_process';
import { excerpt } from '../../core/errors.js';
import { LineSplitter } from '../events/index.js';
import { firstLine, killProcessGroup, toolEnvironment } from './exec.js';

/** What a running stream tells its owner. */
export interface ToolStreamHandlers {
  /** One stdout line, without its `\n`. */
  onLine(line: string): void;
  /** One stderr line (warnings, or the tool's error about a device). */
  onStderr(line: string): void;
  /** The stream is over (exit, spawn failure, overlong line); called once, never after stop(). */
  onEnd(reason: string): void;
}

/** A running stream. */
export interface ToolStream {
  /** Kills the tool's process group and closes the pipes; idempotent. */
  stop(): void;
}

/** Starts `command args` as a stream. */
export type StreamTool = (
  command: string,
  args: readonly string[],
  handlers: ToolStreamHandlers,
  options?: { maxLineBytes?: number },
) => ToolStream;

/** The default cap on one line. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024;

/**
 * The real StreamTool. `env` replaces the environment the tool sees (default: this process's);
 * LC_ALL is always C and `libraryPath` leads LD_LIBRARY_PATH, as for the one-shot runs.
 */
export function createStreamTool(deps: { env?: NodeJS.ProcessEnv; libraryPath?: string } = {}): StreamTool {
  const env = toolEnvironment(deps.env ?? process.env, deps.libraryPath);
  return (command, args, handlers, options = {}) => startStream(command, args, handlers, env, options);
}

function startStream(
  command: string,
  args: readonly string[],
  handlers: ToolStreamHandlers,
  env: NodeJS.ProcessEnv,
  options: { maxLineBytes?: number },
): ToolStream {
  const name = excerpt(command, 80);
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  let over = false;
  let firstError = '';
  const child = spawn(command, [...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env });
  const stop = (): void => {
    if (child.pid !== undefined) killProcessGroup(child.pid);
    child.stdout.destroy();
    child.stderr.destroy();
  };
  const end = (reason: string): void => {
    if (over) return;
    over = true;
    stop();
    handlers.onEnd(reason);
  };
  // Lines are handed on whole; a piece at the cap means the line had no end within it.
  const lines = (deliver: (line: string) => void): LineSplitter =>
    new LineSplitter((line) => {
      if (over) return;
      if (line.length >= maxLineBytes) end(`${name} printed a line longer than ${maxLineBytes} bytes`);
      else deliver(line);
    }, maxLineBytes);
  const out = lines((line) => handlers.onLine(line));
  const err = lines((line) => {
    if (firstError === '' && line.trim() !== '') firstError = firstLine(line);
    handlers.onStderr(line);
  });
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  child.on('error', (error: NodeJS.ErrnoException) =>
    end(`${name} could not be started: ${error.code ?? firstLine(error.message)}`),
  );
  // 'close' (not 'exit'): the pipes are drained by then, so the last lines came first.
  child.on('close', (code, signal) => {
    const how = code === null ? `was killed by ${signal ?? 'a signal'}` : `exited with code ${code}`;
    end(`${name} ${how}${firstError ? `: ${firstError}` : ''}`);
  });
  return {
    stop: () => {
      over = true;
      stop();
    },
  };
}

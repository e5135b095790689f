/**
 * A component (controller replica, ingest function or node agent) as a real process (`node bin/npu-fault.js controller …`) under a
 * ServiceAccount kubeconfig, with its JSON log lines collected so a caller (a test, the
 * pipeline demo) can wait on what it says it did (listening, ready, leading) instead of
 * sleeping. Shared by test/setup/, the benchmarks and the pipeline demo.
 */
import type * as k8s from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/npu-fault.js', import.meta.url));

/** One JSON log line. */
export type LogLine = Record<string, unknown> & { msg?: string };

/** A running replica. */
export interface ControllerProcess {
  identity: string;
  child: ChildProcess;
  logs: LogLine[];
  /** Non-JSON output (stack traces would land here: a test may assert there are none). */
  other: string[];
  /** Resolves with the first log line (seen or to come) matching `predicate`. */
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs: number, what: string): Promise<LogLine>;
  /** Port of the named server (`observations` or `metrics`; a function's is `http`), from its `listening` line. */
  port(server: 'observations' | 'metrics' | 'http'): Promise<number>;
  /** Sends `signal` and resolves with the exit code (or the signal name). */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
  exited: Promise<number | string>;
}

/** Writes a kubeconfig file for `kc` (a ServiceAccount's) and returns its path. */
export function writeKubeConfig(kc: k8s.KubeConfig): string {
  const dir = mkdtempSync(join(tmpdir(), 'npu-fault-kc-'));
  const file = join(dir, 'kubeconfig');
  writeFileSync(file, kc.exportConfig(), { mode: 0o600 });
  return file;
}

/** Starts `npu-fault controller` with `args` (ports default to :0, logs at debug). */
export function startControllerProcess(options: {
  identity: string;
  /** Absent for the agent, which never talks to the API. */
  kubeconfig?: string;
  args: string[];
  env?: Record<string, string>;
  /** The script to run (default bin/npu-fault.js; a benchmark passes dist/cli/run.js). */
  entry?: string;
  /** Flags for node itself, before the script (a manifest's command line: hack/shipped-node.ts). */
  nodeArgs?: readonly string[];
  /**
   * `function` runs an ingest function instead, `agent` a node agent (one port, no identity;
   * `identity` then only names it).
   */
  command?: 'controller' | 'function' | 'agent';
}): ControllerProcess {
  const command = options.command ?? 'controller';
  const own =
    command === 'controller'
      ? [`--identity=${options.identity}`, '--listen=127.0.0.1:0', '--metrics-listen=127.0.0.1:0']
      : ['--listen=127.0.0.1:0'];
  const child = spawn(
    process.execPath,
    [
      ...(options.nodeArgs ?? []),
      options.entry ?? BIN,
      command,
      ...(options.kubeconfig === undefined ? [] : [`--kubeconfig=${options.kubeconfig}`]),
      ...own,
      ...options.args,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env },
    },
  );
  const logs: LogLine[] = [];
  const other: string[] = [];
  const waiters: { predicate: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];
  const onLine = (text: string): void => {
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      other.push(text);
      return;
    }
    logs.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.predicate(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const waitForLog = (
    predicate: (line: LogLine) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<LogLine> => {
    const seen = logs.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise<LogLine>((resolve, reject) => {
      const waiter = {
        predicate,
        resolve: (line: LogLine) => {
          clearTimeout(timer);
          resolve(line);
        },
      };
      const timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(waiter), 1);
        const tail = [...logs.slice(-8).map((l) => JSON.stringify(l)), ...other.slice(-5)].join('\n');
        reject(
          new Error(
            `${options.identity}: timed out after ${timeoutMs} ms waiting for ${what}; last lines:\n${tail}`,
          ),
        );
      }, timeoutMs);
      waiters.push(waiter);
      void exited.then((code) => {
        if (!waiters.includes(waiter)) return;
        waiters.splice(waiters.indexOf(waiter), 1);
        clearTimeout(timer);
        const tail = [...logs.slice(-8).map((l) => JSON.stringify(l)), ...other.slice(-10)].join('\n');
        reject(
          new Error(`${options.identity}: exited (${code}) while waiting for ${what}; last lines:\n${tail}`),
        );
      });
    });
  };
  return {
    identity: options.identity,
    child,
    logs,
    other,
    waitForLog,
    async port(server) {
      const line = await waitForLog(
        (l) => l.msg === 'listening' && l.server === server,
        60_000,
        `${server} listening`,
      );
      return line.port as number;
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    exited,
  };
}

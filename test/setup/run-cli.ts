/**
 * Runs `npu-fault <args>` as a user would, against the integration project's control plane
 * (KUBECONFIG), to its end: the demo and the pipeline benchmark are tested this way.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/npu-fault.js', import.meta.url));

/** What the command did. */
export interface CliRun {
  code: number | string;
  stdout: string;
  stderr: string;
}

/** Spawns the CLI with a minimal environment (plus `env`) and resolves when it exits. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      KUBECONFIG: process.env.NPU_FAULT_TEST_KUBECONFIG ?? '',
      ...env,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    child.on('close', (code, signal) => resolve({ code: code ?? signal ?? 'unknown', stdout, stderr }));
  });
}

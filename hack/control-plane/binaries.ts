/**
 * The plane's binaries: built from Go modules by hack/build-control-plane.sh and cached
 * outside the repository; kubectl among them.
 */
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ControlPlaneState } from './state.js';

const execFileAsync = promisify(execFile);
const buildScript = fileURLToPath(new URL('../build-control-plane.sh', import.meta.url));

/** Runs hack/build-control-plane.sh (a no-op when the cache is warm) and returns the bin dir. */
export async function buildControlPlane(log: (line: string) => void): Promise<string> {
  return await new Promise((resolvePromise, reject) => {
    const child = spawn('bash', [buildScript], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      // Only the script's own progress lines: Go's download chatter would drown them.
      for (const line of chunk.toString().split('\n'))
        if (line.startsWith('[build-control-plane]')) log(line);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      // The script's last stdout line is the bin dir.
      if (code === 0) resolvePromise(out.trim().split('\n').pop() ?? '');
      else {
        const lastErrors = err.trim().split('\n').slice(-3).join(' | ');
        reject(new Error(`build-control-plane.sh failed (exit ${code}): ${lastErrors}`));
      }
    });
  });
}

/** Runs the cached kubectl against the control plane (for `kubectl kustomize` and dry runs). */
export async function kubectl(
  state: Pick<ControlPlaneState, 'binDir' | 'kubeconfig'>,
  args: string[],
): Promise<string> {
  const { stdout } = await execFileAsync(
    join(state.binDir, 'kubectl'),
    [`--kubeconfig=${state.kubeconfig}`, ...args],
    { maxBuffer: 64 * 1024 * 1024 }, // `kubectl kustomize` of a whole tree can be large
  );
  return stdout;
}

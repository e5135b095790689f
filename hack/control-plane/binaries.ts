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

/** The release of each binary the plane runs, as NPU_FAULT_K8S_VERSION selects it. */
export interface PlaneVersions {
  kubernetes: string;
  etcd: string;
  kwok: string;
  /** The oldest Go that builds them. */
  go: string;
  binDir: string;
}

/**
 * The versions hack/build-control-plane.sh builds (and the plane then runs) under `env`:
 * the script's table is the one place they are written down; this asks it, building nothing.
 */
export async function planeVersions(env: NodeJS.ProcessEnv = process.env): Promise<PlaneVersions> {
  const { stdout } = await execFileAsync('bash', [buildScript, '--versions'], { env });
  const fields = new Map(
    stdout
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const),
  );
  const field = (name: string): string => {
    const value = fields.get(name);
    if (!value) throw new Error(`build-control-plane.sh --versions printed no ${name}: ${stdout}`);
    return value;
  };
  return {
    kubernetes: field('kubernetes'),
    etcd: field('etcd'),
    kwok: field('kwok'),
    go: field('go'),
    binDir: field('bin'),
  };
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

/**
 * promtool, Prometheus's rule checker and rule unit-test runner: found or built by
 * hack/build-promtool.sh (an explicit $NPU_FAULT_PROMTOOL, the cached pinned build, `promtool`
 * on PATH, else a build from Go modules cached under ~/.cache/npu-fault/promtool/).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const buildScript = fileURLToPath(new URL('./build-promtool.sh', import.meta.url));

/**
 * Runs hack/build-promtool.sh (immediate when promtool is cached or installed) and returns the
 * path of the promtool binary. Rejects with the script's own one-line error (what to install)
 * when neither promtool nor Go is there. `env` is the script's environment (PATH, HOME,
 * NPU_FAULT_CACHE, NPU_FAULT_PROMTOOL, PROMETHEUS_VERSION).
 */
export async function findPromtool(
  log: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  return await new Promise((resolvePromise, reject) => {
    const child = spawn('/bin/bash', [buildScript], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      // Only the script's own progress lines: Go's download chatter would drown them.
      for (const line of chunk.toString().split('\n')) if (line.startsWith('[build-promtool]')) log(line);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      // The script's last stdout line is the promtool path.
      if (code === 0) resolvePromise(out.trim().split('\n').pop() ?? '');
      else {
        const errorLine = err
          .trim()
          .split('\n')
          .filter((line) => line.startsWith('error:'))
          .pop();
        const lastLines = err.trim().split('\n').slice(-3).join(' | ');
        reject(new Error(`build-promtool.sh failed (exit ${code}): ${errorLine ?? lastLines}`));
      }
    });
  });
}

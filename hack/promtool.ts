/**
 * promtool, Prometheus's rule checker and rule unit-test runner: found or built by
 * hack/build-promtool.sh (an explicit $NPU_FAULT_PROMTOOL, the cached pinned build, `promtool`
 * on PATH, else a build from Go modules cached under ~/.cache/npu-fault/promtool/).
 */
import { fileURLToPath } from 'node:url';
import { runCacheScript } from './cache-script.js';

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
  return runCacheScript(buildScript, 'build-promtool', log, env);
}

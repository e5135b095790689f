/**
 * helm, for the chart's tests (charts/npu-fault): found or built by hack/build-helm.sh (an
 * explicit $NPU_FAULT_HELM, the cached pinned build, a Helm 4 `helm` on PATH, else a build of
 * helm.sh/helm/v4 from Go modules cached under ~/.cache/npu-fault/helm/).
 */
import { fileURLToPath } from 'node:url';
import { runCacheScript } from './cache-script.js';

const buildScript = fileURLToPath(new URL('./build-helm.sh', import.meta.url));

/**
 * Runs hack/build-helm.sh (immediate when helm is cached or installed) and returns the path
 * of the helm binary. Rejects with the script's own one-line error (what to install) when
 * neither helm 4 nor a recent enough Go is there. `env` is the script's environment (PATH,
 * HOME, NPU_FAULT_CACHE, NPU_FAULT_HELM, HELM_VERSION).
 */
export async function findHelm(
  log: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  return runCacheScript(buildScript, 'build-helm', log, env);
}

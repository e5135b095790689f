/**
 * The Kubernetes Events baseline's recorder (bench/baselines/event-recorder: client-go's own
 * EventRecorder behind a JSON-lines stdin), built by hack/build-event-recorder.sh from Go
 * modules and cached under ~/.cache/npu-fault/event-recorder/ (or $NPU_FAULT_EVENT_RECORDER).
 */
import { fileURLToPath } from 'node:url';
import { runCacheScript } from './cache-script.js';

const buildScript = fileURLToPath(new URL('./build-event-recorder.sh', import.meta.url));

/**
 * Runs hack/build-event-recorder.sh (immediate when the binary for the current sources is
 * cached) and returns the binary's path. Rejects with the script's own one-line error (what to
 * install) when Go is missing. `env` is the script's environment (PATH, HOME, NPU_FAULT_CACHE,
 * NPU_FAULT_EVENT_RECORDER).
 */
export async function buildEventRecorder(
  log: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  return runCacheScript(buildScript, 'build-event-recorder', log, env);
}

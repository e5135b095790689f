/**
 * The Knative Serving CRDs, for validating k8s/functions/knative/ against the real API without
 * Knative installed: fetched once from the Go module knative.dev/serving by
 * hack/knative-crds.sh and cached under ~/.cache/npu-fault/knative/<version>/.
 */
import type * as k8s from '@kubernetes/client-node';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCacheScript } from './cache-script.js';
import { parseAllDocuments } from 'yaml';

const fetchScript = fileURLToPath(new URL('./knative-crds.sh', import.meta.url));

/**
 * Runs hack/knative-crds.sh (immediate when the CRDs are cached) and returns the directory of
 * the CRD files. Rejects with the script's own one-line error (what to install) when the
 * cache is cold and Go is missing. `env` is the script's environment (PATH, HOME,
 * NPU_FAULT_CACHE, KNATIVE_SERVING_VERSION).
 */
export async function findKnativeCrds(
  log: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  return runCacheScript(fetchScript, 'knative-crds', log, env);
}

/**
 * Reads every CRD in `dir` (as hack/knative-crds.sh leaves it), sorted by file name. Throws,
 * naming the file, when one holds anything but a CustomResourceDefinition.
 */
export async function readKnativeCrds(dir: string): Promise<k8s.V1CustomResourceDefinition[]> {
  const files = (await readdir(dir)).filter((name) => name.endsWith('.yaml')).sort();
  const crds: k8s.V1CustomResourceDefinition[] = [];
  for (const file of files) {
    for (const document of parseAllDocuments(await readFile(join(dir, file), 'utf8'))) {
      const object = document.toJS() as k8s.V1CustomResourceDefinition | null;
      if (object === null) continue; // an empty document (a trailing ---)
      if (object.kind !== 'CustomResourceDefinition')
        throw new Error(`${file}: expected a CustomResourceDefinition, found kind ${String(object.kind)}`);
      crds.push(object);
    }
  }
  if (crds.length === 0) throw new Error(`${dir}: no CustomResourceDefinition files`);
  return crds;
}

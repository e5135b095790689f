/**
 * The shipped manifests as tests see them: rendered with the plane's `kubectl kustomize`
 * (optionally with opt-in components), and applied with a server-side dry run, so the real
 * apiserver (and its admission, Pod Security included) judges them.
 */
import type * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { binDir } from './cluster.js';

const run = promisify(execFile);
/** The repository's root. */
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** `kubectl` of the plane with the test kubeconfig; `input` goes to its stdin. */
export async function kubectl(args: string[], input?: string): Promise<string> {
  const kubeconfig = process.env.NPU_FAULT_TEST_KUBECONFIG ?? '';
  const child = run(join(binDir(), 'kubectl'), [`--kubeconfig=${kubeconfig}`, ...args], {
    maxBuffer: 32 * 1024 * 1024,
  });
  if (input !== undefined) child.child.stdin?.end(input);
  return (await child).stdout;
}

/**
 * The objects `kubectl kustomize` renders from the repository folders `resources` (e.g.
 * `k8s`) with the components `components` (e.g. `k8s/agent/host-port`).
 */
export async function renderManifests<T extends k8s.KubernetesObject = k8s.KubernetesObject>(
  resources: readonly string[],
  components: readonly string[] = [],
): Promise<T[]> {
  const dir = await mkdtemp(join(tmpdir(), 'npu-fault-kustomize-'));
  try {
    // kustomize takes relative paths only.
    const relativeTo = (path: string): string => relative(dir, join(repoRoot, path));
    await writeFile(
      join(dir, 'kustomization.yaml'),
      stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: resources.map(relativeTo),
        ...(components.length > 0 ? { components: components.map(relativeTo) } : {}),
      }),
    );
    return parseAllDocuments(await kubectl(['kustomize', dir])).map((d) => d.toJS() as T);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Applies `objects` with a server-side dry run, each moved into namespace `into` when given
 * (a namespaced object's namespace, renamed by the map when `into` is a Map). Returns kubectl's
 * lines, one per object (`… serverside-applied (server dry run)`); rejects when one is refused.
 */
export async function serverDryRun(
  objects: readonly k8s.KubernetesObject[],
  into?: string | ReadonlyMap<string, string>,
): Promise<string[]> {
  const namespaceOf = (object: k8s.KubernetesObject): string | undefined => {
    const current = object.metadata?.namespace;
    if (into === undefined || current === undefined) return current;
    return typeof into === 'string' ? into : (into.get(current) ?? current);
  };
  const manifests = objects
    .map((o) => {
      const namespace = namespaceOf(o);
      return stringify({
        ...structuredClone(o),
        metadata: { ...o.metadata, ...(namespace ? { namespace } : {}) },
      });
    })
    .join('---\n');
  const out = await kubectl(
    ['apply', '--dry-run=server', '--server-side', '--field-manager=npu-fault-test', '-f', '-'],
    manifests,
  );
  return out.trim().split('\n');
}

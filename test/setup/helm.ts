/**
 * helm for the integration tests (test/helm.test.ts): located (or built once, about four
 * minutes on a cold 2-core machine) by hack/build-helm.sh, then run on charts/npu-fault with
 * the test plane's admin kubeconfig. Without helm and without Go, `helm()` rejects with the
 * script's one-line error saying what to install (the precedent of promtool and the plane).
 *
 * Also the comparison that keeps the chart and k8s/ one source of truth: both renderings
 * reduced to comparable objects (Helm's own labels removed), keyed and sorted.
 */
import type * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { parseAllDocuments } from 'yaml';
import { findHelm } from '../../hack/helm.js';

/** A cold build of helm on a 2-core machine takes about 4 minutes; a warm cache, none. */
export const HELM_BUILD_TIMEOUT_MS = 20 * 60_000;

let located: Promise<string> | undefined;

/** The helm binary's path, found or built on the first call of the test file. */
export async function helmBinary(): Promise<string> {
  located ??= findHelm((line) => process.stderr.write(`${line}\n`));
  return await located;
}

/** What one helm run printed, and its exit code. */
export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs helm with `args` against the test plane (its admin kubeconfig), in a configuration and
 * cache folder of its own under `home` so nothing of the user's Helm setup is read or written.
 * Resolves whatever the exit code.
 */
export async function runHelm(args: string[], home: string): Promise<HelmResult> {
  const binary = await helmBinary();
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    HELM_CONFIG_HOME: `${home}/config`,
    HELM_CACHE_HOME: `${home}/cache`,
    HELM_DATA_HOME: `${home}/data`,
    KUBECONFIG: process.env.NPU_FAULT_TEST_KUBECONFIG ?? '',
  };
  return await new Promise((resolve, reject) => {
    execFile(binary, args, { env, maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : undefined;
      if (code === undefined) reject(error ?? new Error('helm: no exit code'));
      else resolve({ code, stdout, stderr });
    });
  });
}

/** Like runHelm, but rejects with helm's stderr unless it exits 0. */
export async function helm(args: string[], home: string): Promise<string> {
  const result = await runHelm(args, home);
  if (result.code !== 0)
    throw new Error(`helm ${args.join(' ')} exited ${result.code}: ${result.stderr.trim()}`);
  return result.stdout;
}

/**
 * The objects of a multi-document YAML stream, read as the apiserver reads them (YAML 1.1:
 * `0440` is octal, as in the TLS Secret's defaultMode); empty documents (helm leaves one where
 * a template renders nothing) dropped.
 */
export function parseObjects(text: string): k8s.KubernetesObject[] {
  return parseAllDocuments(text, { version: '1.1' })
    .map((document) => document.toJS() as k8s.KubernetesObject | null)
    .filter((object): object is k8s.KubernetesObject => object !== null && typeof object === 'object');
}

/**
 * Labels the chart adds to every object for Helm's sake (which chart, which release, managed
 * by Helm) and that `kubectl kustomize k8s` has no reason to carry. Nothing else is ignored.
 */
export const HELM_ONLY_LABELS = [
  'helm.sh/chart',
  'app.kubernetes.io/managed-by',
  'app.kubernetes.io/instance',
];

/** `apiVersion kind namespace/name`: one object's identity. */
export function objectKey(object: k8s.KubernetesObject): string {
  const { namespace, name } = object.metadata ?? {};
  return `${object.apiVersion} ${object.kind} ${namespace ? `${namespace}/` : ''}${name}`;
}

/** The objects by key, Helm's own labels removed (an empty label map dropped with them). */
export function comparable(objects: readonly k8s.KubernetesObject[]): Map<string, unknown> {
  const byKey = new Map<string, unknown>();
  for (const object of objects) {
    const copy = structuredClone(object);
    const labels = copy.metadata?.labels;
    if (labels) {
      for (const label of HELM_ONLY_LABELS) delete labels[label];
      if (Object.keys(labels).length === 0) delete copy.metadata?.labels;
    }
    const key = objectKey(copy);
    if (byKey.has(key)) throw new Error(`rendered twice: ${key}`);
    byKey.set(key, copy);
  }
  return new Map([...byKey.entries()].sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * Where two renderings differ: keys only one side has, and keys whose objects differ (with
 * the first differing path). [] when they render the same objects.
 */
export function differences(
  chart: readonly k8s.KubernetesObject[],
  kustomize: readonly k8s.KubernetesObject[],
): string[] {
  const a = comparable(chart);
  const b = comparable(kustomize);
  const found: string[] = [];
  for (const key of a.keys()) if (!b.has(key)) found.push(`only in the chart: ${key}`);
  for (const key of b.keys()) if (!a.has(key)) found.push(`only in k8s/: ${key}`);
  for (const [key, object] of a) {
    if (!b.has(key)) continue;
    const path = firstDifference(object, b.get(key), '');
    if (path !== undefined) found.push(`differs: ${key} at ${path}`);
  }
  return found;
}

function firstDifference(a: unknown, b: unknown, path: string): string | undefined {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    return a === b ? undefined : `${path || '/'} (chart ${JSON.stringify(a)}, k8s/ ${JSON.stringify(b)})`;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return `${path || '/'} (array vs object)`;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of [...keys].sort()) {
    const found = firstDifference(
      (a as Record<string, unknown>)[key],
      (b as Record<string, unknown>)[key],
      `${path}/${key}`,
    );
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * RBAC objects of the shipped manifests under k8s/, rewritten for another namespace:
 * `ai-infra` becomes `namespace`, and the cluster-scoped objects (ClusterRole,
 * ClusterRoleBinding) get the namespace appended to their names so that several namespaces
 * (test files, demo runs) do not share them, and so do the `resourceNames` of a rule that name
 * one of them (a ClusterRole reading itself). Nothing else changes: a rule the code needs and
 * the manifest lacks fails with a 403. Shared by test/setup/, the benchmarks and the pipeline
 * demo.
 */
import type * as k8s from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

/** The objects of `files` (paths under k8s/), rewritten for `namespace`. */
export function manifestRbacObjects(files: readonly string[], namespace: string): k8s.KubernetesObject[] {
  const objects: k8s.KubernetesObject[] = [];
  for (const file of files) {
    const text = readFileSync(fileURLToPath(new URL(`../k8s/${file}`, import.meta.url)), 'utf8');
    for (const document of parseAllDocuments(text)) {
      const object = document.toJS() as k8s.KubernetesObject & {
        roleRef?: { kind: string; name: string };
        subjects?: { kind: string; name: string; namespace?: string }[];
        rules?: { resources?: string[]; resourceNames?: string[] }[];
      };
      const clusterScoped = object.kind?.startsWith('Cluster') ?? false;
      const metadata = { ...object.metadata };
      if (clusterScoped) metadata.name = `${metadata.name}-${namespace}`;
      else metadata.namespace = namespace;
      object.metadata = metadata;
      if (object.roleRef?.kind === 'ClusterRole') object.roleRef.name = `${object.roleRef.name}-${namespace}`;
      for (const rule of object.rules ?? [])
        if (rule.resources?.includes('clusterroles') && rule.resourceNames)
          rule.resourceNames = rule.resourceNames.map((name) => `${name}-${namespace}`);
      for (const subject of object.subjects ?? []) {
        if (subject.kind === 'ServiceAccount') subject.namespace = namespace;
      }
      objects.push(object);
    }
  }
  return objects;
}

// status-mirror-rbac.yaml is its ClusterRole only: bound per mirror namespace (test/setup's allowMirrorsIn).
const CONTROLLER_RBAC_FILES = ['leader-election-rbac.yaml', 'rbac.yaml', 'status-mirror-rbac.yaml'];

/** The controller's RBAC objects as shipped (k8s/controller/), rewritten for `namespace`. */
export function controllerRbacObjects(namespace: string): k8s.KubernetesObject[] {
  return manifestRbacObjects(
    CONTROLLER_RBAC_FILES.map((file) => `controller/${file}`),
    namespace,
  );
}

/** The ingest function's RBAC objects as shipped (k8s/functions/base/rbac.yaml), rewritten for `namespace`. */
export function functionRbacObjects(namespace: string): k8s.KubernetesObject[] {
  return manifestRbacObjects(['functions/base/rbac.yaml'], namespace);
}

/**
 * Every manifest under k8s/ renders with `kubectl kustomize` and is accepted by the real
 * apiserver in a server-side dry run (schema, defaulting and admission included). The agent's
 * objects live in its own namespace (npu-fault-agent), everything else in ai-infra.
 */
import { describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { adminKubeConfig, binDir } from './setup/cluster.js';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const CONTROL_NAMESPACE = 'ai-infra';
const AGENT_NAMESPACE = 'npu-fault-agent';

async function kubectl(args: string[], input?: string): Promise<string> {
  const kubeconfig = process.env.NPU_FAULT_TEST_KUBECONFIG ?? '';
  const child = run(join(binDir(), 'kubectl'), [`--kubeconfig=${kubeconfig}`, ...args], {
    maxBuffer: 32 * 1024 * 1024,
  });
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  const { stdout } = await child;
  return stdout;
}

describe('k8s/ manifests', () => {
  it('render with kubectl kustomize and pass a server-side dry run', async () => {
    const rendered = await kubectl(['kustomize', join(repoRoot, 'k8s')]);
    const objects = parseAllDocuments(rendered).map((d) => d.toJS() as k8s.KubernetesObject);
    expect(objects.length).toBeGreaterThan(0);
    const namespaced = objects.filter((o) => o.kind !== 'Namespace' && !o.kind?.startsWith('Cluster'));
    for (const object of objects) {
      expect(object.metadata?.labels?.['app.kubernetes.io/part-of']).toBe('npu-fault');
    }
    for (const object of namespaced)
      expect([CONTROL_NAMESPACE, AGENT_NAMESPACE]).toContain(object.metadata?.namespace);
    // Exactly the agent's objects (and its namespace's policies) outside ai-infra.
    const outside = namespaced.filter((o) => o.metadata?.namespace !== CONTROL_NAMESPACE);
    expect(outside.map((o) => `${o.kind}/${o.metadata?.namespace}/${o.metadata?.name}`).sort()).toEqual([
      `DaemonSet/${AGENT_NAMESPACE}/npu-fault-agent`,
      `NetworkPolicy/${AGENT_NAMESPACE}/npu-fault-agent`,
      `NetworkPolicy/${AGENT_NAMESPACE}/npu-fault-default-deny`,
      `Service/${AGENT_NAMESPACE}/npu-fault-agent`,
      `ServiceAccount/${AGENT_NAMESPACE}/npu-fault-agent`,
    ]);
    // Namespaced objects can only be dry-run into a namespace that exists.
    // If this test creates one, it labels it as a test namespace and deletes it afterwards.
    const core = adminKubeConfig().makeApiClient(k8s.CoreV1Api);
    const created: string[] = [];
    for (const name of [CONTROL_NAMESPACE, AGENT_NAMESPACE]) {
      await core
        .createNamespace({ body: { metadata: { name, labels: { 'npu-fault.io/test': 'true' } } } })
        .then(
          () => created.push(name),
          (error: { code?: number }) => {
            if (error.code !== 409) throw error;
          },
        );
    }
    try {
      const out = await kubectl(
        ['apply', '--dry-run=server', '--server-side', '--field-manager=npu-fault-test', '-f', '-'],
        rendered,
      );
      for (const object of objects) {
        expect(out).toContain(`${object.metadata?.name}`);
      }
      expect(out).toMatch(/serverside-applied \(server dry run\)/);
    } finally {
      for (const name of created) await core.deleteNamespace({ name });
    }
  });

  it('are rejected by the dry run when invalid (the check has teeth)', async () => {
    const broken =
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Valid_Name\n  namespace: default\n';
    await expect(kubectl(['apply', '--dry-run=server', '-f', '-'], broken)).rejects.toThrow(/Invalid value/);
  });
});

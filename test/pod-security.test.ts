/**
 * Pod Security on the shipped manifests (issue 27, privilege): the controller and the ingest
 * function run in ai-infra under `restricted` enforced, the privileged agent alone in a
 * namespace of its own. Pod Security only warns about a Deployment; it refuses Pods. So each
 * workload's pod template is created as a Pod (server-side dry run: admission runs in full,
 * nothing is stored) in test namespaces carrying the shipped namespaces' labels: the
 * controller's and the function's are admitted under `restricted`, the agent's is refused
 * there (the check has teeth) and admitted in its own namespace.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { binDir, createTestNamespace, type TestNamespace } from './setup/cluster.js';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const CONTROL_NAMESPACE = 'ai-infra';
const AGENT_NAMESPACE = 'npu-fault-agent';
const POD_SECURITY_LABEL = /^pod-security\.kubernetes\.io\//;

type Workload = k8s.KubernetesObject & { spec: { template: k8s.V1PodTemplateSpec } };

async function render(): Promise<k8s.KubernetesObject[]> {
  const { stdout } = await run(join(binDir(), 'kubectl'), ['kustomize', join(repoRoot, 'k8s')], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return parseAllDocuments(stdout).map((d) => d.toJS() as k8s.KubernetesObject);
}

/** The K8s API's message of a refused request, or undefined when it was accepted. */
async function refusal(request: Promise<unknown>): Promise<{ code: number; message: string } | undefined> {
  try {
    await request;
    return undefined;
  } catch (error) {
    const { code, body } = error as { code?: number; body?: string };
    if (code === undefined) throw error;
    return { code, message: String((JSON.parse(body ?? '{}') as { message?: string }).message) };
  }
}

describe('Pod Security of the shipped manifests', () => {
  let objects: k8s.KubernetesObject[];
  let workloads: Workload[];
  /** Test namespaces standing for the shipped ones, with their pod-security labels. */
  const standIns = new Map<string, TestNamespace>();
  let core: k8s.CoreV1Api;

  beforeAll(async () => {
    objects = await render();
    workloads = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet') as Workload[];
    for (const [shipped, prefix] of [
      [CONTROL_NAMESPACE, 'psa-control'],
      [AGENT_NAMESPACE, 'psa-agent'],
    ] as const) {
      const ns = await createTestNamespace(prefix);
      standIns.set(shipped, ns);
      core = ns.admin.makeApiClient(k8s.CoreV1Api);
      const labels = Object.fromEntries(
        Object.entries(namespaceLabels(shipped)).filter(([key]) => POD_SECURITY_LABEL.test(key)),
      );
      await core.patchNamespace(
        { name: ns.name, body: { metadata: { labels } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      // A pod naming a ServiceAccount that does not exist is refused before Pod Security looks.
      for (const sa of objects.filter((o) => o.kind === 'ServiceAccount'))
        await core.createNamespacedServiceAccount({
          namespace: ns.name,
          body: { metadata: { name: sa.metadata?.name } },
        });
    }
  });
  afterAll(async () => {
    for (const ns of standIns.values()) await ns.dispose();
  });

  function namespaceLabels(name: string): Record<string, string> {
    const found = objects.find((o) => o.kind === 'Namespace' && o.metadata?.name === name);
    if (!found) throw new Error(`k8s/ renders no Namespace ${name}`);
    return found.metadata?.labels ?? {};
  }

  const workload = (name: string): Workload => {
    const found = workloads.find((w) => w.metadata?.name === name);
    if (!found) throw new Error(`k8s/ renders no workload ${name}`);
    return found;
  };

  /** Creates `name`'s pod template as a Pod in the stand-in of `shipped`, dry run only. */
  const createPod = (name: string, shipped: string): Promise<k8s.V1Pod> => {
    const template = workload(name).spec.template;
    const ns = standIns.get(shipped);
    if (!ns) throw new Error(`no stand-in for ${shipped}`);
    return core.createNamespacedPod({
      namespace: ns.name,
      dryRun: 'All',
      body: {
        metadata: { name: `${name}-pod-security`, labels: template.metadata?.labels },
        spec: template.spec,
      },
    });
  };

  it('enforce `restricted` for the controller and the function, `privileged` only in the agent’s own namespace', () => {
    expect(namespaceLabels(CONTROL_NAMESPACE)).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    });
    expect(namespaceLabels(AGENT_NAMESPACE)['pod-security.kubernetes.io/enforce']).toBe('privileged');
    const where = Object.fromEntries(workloads.map((w) => [w.metadata?.name, w.metadata?.namespace]));
    expect(where).toEqual({
      'npu-fault-agent': AGENT_NAMESPACE,
      'npu-fault-controller': CONTROL_NAMESPACE,
      'npu-fault-function': CONTROL_NAMESPACE,
    });
  });

  it('admit the controller’s and the function’s pods under `restricted` enforced', async () => {
    for (const name of ['npu-fault-controller', 'npu-fault-function']) {
      const refused = await refusal(createPod(name, CONTROL_NAMESPACE));
      expect({ name, refused }).toEqual({ name, refused: undefined });
    }
  });

  it('refuse the privileged agent’s pod in the controller’s namespace (the enforcement has teeth)', async () => {
    const refused = await refusal(createPod('npu-fault-agent', CONTROL_NAMESPACE));
    expect(refused?.code).toBe(403);
    expect(refused?.message).toMatch(/violates PodSecurity "restricted:latest"/);
    for (const what of ['privileged', 'hostPID', 'hostPath', 'runAsNonRoot'])
      expect(refused?.message).toContain(what);
  });

  it('admit the agent’s pod in its own namespace', async () => {
    const refused = await refusal(createPod('npu-fault-agent', AGENT_NAMESPACE));
    expect(refused).toBeUndefined();
  });
});

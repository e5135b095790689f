/**
 * The node agent's manifests (k8s/agent/) against the real apiserver: they render with
 * `kubectl kustomize`, pass a server-side dry run, and are what the issue asks of them (a
 * privileged hostPID DaemonSet on accelerator nodes only, in a namespace of its own, tolerating
 * every taint, port 8081 with a host port only through the opt-in component host-port/,
 * requests 64Mi/100m and limits 128Mi/200m, a projected token with audience npu-fault and no
 * API token, the drivers' libraries for the tools only); the ServiceAccount is granted nothing
 * anywhere in k8s/, which the apiserver's authorizer confirms once all of k8s/'s RBAC is applied.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { binDir, createTestNamespace, type TestNamespace } from './setup/cluster.js';
import { renderManifests, serverDryRun } from './setup/manifests.js';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const NAME = 'npu-fault-agent';

type KubeObject = k8s.KubernetesObject & Record<string, unknown>;

async function kubectl(args: string[], input?: string): Promise<string> {
  const kubeconfig = process.env.NPU_FAULT_TEST_KUBECONFIG ?? '';
  const child = run(join(binDir(), 'kubectl'), [`--kubeconfig=${kubeconfig}`, ...args], {
    maxBuffer: 32 * 1024 * 1024,
  });
  if (input !== undefined) child.child.stdin?.end(input);
  return (await child).stdout;
}

async function render(dir: string): Promise<KubeObject[]> {
  return parseAllDocuments(await kubectl(['kustomize', dir])).map((d) => d.toJS() as KubeObject);
}

describe('k8s/agent manifests', () => {
  let ns: TestNamespace;
  let agent: KubeObject[];
  let all: KubeObject[];
  let daemonSet: k8s.V1DaemonSet;

  beforeAll(async () => {
    ns = await createTestNamespace('agent-manifests');
    agent = await render(join(repoRoot, 'k8s/agent'));
    all = await render(join(repoRoot, 'k8s'));
    daemonSet = agent.find((o) => o.kind === 'DaemonSet') as k8s.V1DaemonSet;
  });
  afterAll(async () => {
    await ns?.dispose();
  });

  it('is a DaemonSet, its ServiceAccount and a node-local Service', () => {
    expect(agent.map((o) => `${o.kind}/${o.metadata?.name}`).sort()).toEqual([
      `DaemonSet/${NAME}`,
      `Service/${NAME}`,
      `ServiceAccount/${NAME}`,
    ]);
    const service = agent.find((o) => o.kind === 'Service') as k8s.V1Service;
    expect(service.spec?.internalTrafficPolicy).toBe('Local');
    expect(service.spec?.ports?.map((p) => p.port)).toEqual([8081]);
  });

  it('runs privileged with the host’s pids on accelerator nodes only, tolerating every taint', () => {
    const pod = daemonSet.spec?.template.spec;
    expect(pod?.hostPID).toBe(true);
    expect(pod?.serviceAccountName).toBe(NAME);
    expect(pod?.automountServiceAccountToken).toBe(false);
    expect(pod?.tolerations).toEqual([{ operator: 'Exists' }]);
    const terms =
      pod?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
    expect(terms.map((t) => t.matchExpressions?.[0]?.key)).toEqual([
      'accelerator',
      'nvidia.com/gpu.present',
      'npu-fault.io/agent',
    ]);
    const container = pod?.containers[0];
    expect(container?.args).toEqual(['agent']);
    expect(container?.securityContext?.privileged).toBe(true);
    // No host port by default: pods use the node-local Service (host-port/ adds one).
    expect(container?.ports).toEqual([{ name: 'http', containerPort: 8081, protocol: 'TCP' }]);
    expect(container?.resources).toEqual({
      requests: { cpu: '100m', memory: '64Mi' },
      limits: { cpu: '200m', memory: '128Mi' },
    });
    const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
    expect(env.NPU_FAULT_NODE).toEqual({ fieldRef: { fieldPath: 'spec.nodeName' } });
    expect(env.NPU_FAULT_TOKEN_FILE).toBe('/var/run/secrets/npu-fault/token');
    expect(env.NPU_FAULT_COLLECTOR).toBe('auto');
    // The drivers' libraries reach the tools only (the agent sets them in the tools' own
    // LD_LIBRARY_PATH); neither the loader's path nor PATH of the agent leads into a host folder.
    expect(env.NPU_FAULT_TOOL_LIBRARY_PATH).toMatch(/^\/usr\/local\/Ascend\/driver\/lib64(:\/[^:]+)*$/);
    expect(Object.keys(env)).not.toContain('LD_LIBRARY_PATH');
    expect(Object.keys(env)).not.toContain('LD_PRELOAD');
    expect(Object.keys(env)).not.toContain('PATH');
    // The Ascend tools by absolute path, each inside a read-only mount of the host's folder.
    const mounts = container?.volumeMounts ?? [];
    for (const tool of [env.NPU_FAULT_HDC_COMMAND, env.NPU_FAULT_NPU_SMI_COMMAND]) {
      expect(tool).toMatch(/^\//);
      const mount = mounts.find((m) => String(tool).startsWith(`${m.mountPath}/`));
      expect({ tool, readOnly: mount?.readOnly }).toEqual({ tool, readOnly: true });
    }
    // The sim collector is never on in the shipped manifests.
    expect(JSON.stringify(daemonSet)).not.toMatch(/sim/i);
  });

  it('mounts only a pod-bound token with audience npu-fault, rotated by the kubelet', () => {
    const volumes = daemonSet.spec?.template.spec?.volumes ?? [];
    const token = volumes.find((v) => v.name === 'token');
    expect(token?.projected?.sources).toEqual([
      { serviceAccountToken: { path: 'token', audience: 'npu-fault', expirationSeconds: 3600 } },
    ]);
    const mounts = daemonSet.spec?.template.spec?.containers[0]?.volumeMounts ?? [];
    expect(mounts.find((m) => m.name === 'token')).toEqual({
      name: 'token',
      mountPath: '/var/run/secrets/npu-fault',
      readOnly: true,
    });
  });

  it('mounts the kubelet’s PodResources directory read-only, nothing else of /var/lib/kubelet', () => {
    const volumes = daemonSet.spec?.template.spec?.volumes ?? [];
    // DirectoryOrCreate: a node whose kubelet root is elsewhere (k0s, microk8s) still starts the
    // agent, which reports the socket unavailable; `Directory` would keep the pod from starting.
    expect(volumes.find((v) => v.name === 'pod-resources')?.hostPath).toEqual({
      path: '/var/lib/kubelet/pod-resources',
      type: 'DirectoryOrCreate',
    });
    expect(volumes.filter((v) => v.hostPath?.path.startsWith('/var/lib/kubelet')).map((v) => v.name)).toEqual(
      ['pod-resources'],
    );
    const mounts = daemonSet.spec?.template.spec?.containers[0]?.volumeMounts ?? [];
    // The agent's default socket (agent/pod-resources/config.ts) is inside it.
    expect(mounts.find((m) => m.name === 'pod-resources')).toEqual({
      name: 'pod-resources',
      mountPath: '/var/lib/kubelet/pod-resources',
      readOnly: true,
    });
  });

  it('runs in a namespace of its own, the one that admits a privileged agent', () => {
    const namespace = daemonSet.metadata?.namespace;
    expect(namespace).toBe('npu-fault-agent');
    const object = all.find((o) => o.kind === 'Namespace' && o.metadata?.name === namespace);
    expect(object?.metadata?.labels?.['pod-security.kubernetes.io/enforce']).toBe('privileged');
    for (const o of agent) expect(o.metadata?.namespace).toBe(namespace);
    // Nothing but the agent's own objects there (test/pod-security.test.ts: the rest is `restricted`).
    const others = all.filter(
      (o) => o.metadata?.namespace === namespace && o.kind !== 'NetworkPolicy' && o.metadata?.name !== NAME,
    );
    expect(others).toEqual([]);
  });

  it('is the identity the ingest function accepts, in both hostings (the agent’s own namespace, not the function’s)', async () => {
    const pod = daemonSet.spec?.template.spec;
    const identity = `system:serviceaccount:${daemonSet.metadata?.namespace}:${pod?.serviceAccountName}`;
    const knative = await render(join(repoRoot, 'k8s/functions/knative'));
    const hostings = [
      (
        all.find(
          (o) => o.kind === 'Deployment' && o.metadata?.name === 'npu-fault-function',
        ) as k8s.V1Deployment
      )?.spec?.template.spec,
      (knative.find((o) => o.kind === 'Service') as { spec?: { template?: { spec?: k8s.V1PodSpec } } })?.spec
        ?.template?.spec,
    ];
    for (const spec of hostings) {
      const env = spec?.containers[0]?.env?.find((e) => e.name === 'NPU_FAULT_AUTH_ALLOWED_USERS');
      expect(env?.value).toBe(identity);
    }
  });

  it('binds hostPort 8081 only with the opt-in component host-port/, which dry-runs', async () => {
    const withHostPort = await renderManifests(['k8s/agent'], ['k8s/agent/host-port']);
    const patched = withHostPort.find((o) => o.kind === 'DaemonSet') as k8s.V1DaemonSet;
    expect(patched.spec?.template.spec?.containers[0]?.ports).toEqual([
      { name: 'http', containerPort: 8081, hostPort: 8081, protocol: 'TCP' },
    ]);
    expect(await serverDryRun([patched], ns.name)).toEqual([
      'daemonset.apps/npu-fault-agent serverside-applied (server dry run)',
    ]);
  });

  it('passes a server-side dry run', async () => {
    const manifests = agent
      .map((o) => stringify({ ...structuredClone(o), metadata: { ...o.metadata, namespace: ns.name } }))
      .join('---\n');
    const out = await kubectl(
      ['apply', '--dry-run=server', '--server-side', '--field-manager=npu-fault-test', '-f', '-'],
      manifests,
    );
    expect(out.trim().split('\n')).toHaveLength(agent.length);
  });

  it('grants the agent’s ServiceAccount nothing: no binding in k8s/ names it, and the authorizer agrees', async () => {
    const bindings = all.filter(
      (o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding',
    ) as (KubeObject & {
      subjects?: { name: string }[];
    })[];
    expect(bindings.length).toBeGreaterThan(0);
    for (const binding of bindings) expect(binding.subjects?.map((s) => s.name)).not.toContain(NAME);
    // Every Role and binding of k8s/ applied into the test namespace (cluster-scoped ones
    // renamed per run), then the agent's identity asked about what matters.
    const objects = k8s.KubernetesObjectApi.makeApiClient(ns.admin);
    const rbac = all
      .filter((o) => o.apiVersion === 'rbac.authorization.k8s.io/v1')
      .map((o) => {
        const copy = structuredClone(o) as KubeObject & {
          roleRef?: { kind: string; name: string };
          subjects?: { namespace?: string }[];
        };
        const cluster = copy.kind?.startsWith('Cluster') ?? false;
        copy.metadata = cluster
          ? { ...copy.metadata, name: `${copy.metadata?.name}-${ns.name}` }
          : { ...copy.metadata, namespace: ns.name };
        if (copy.roleRef?.kind === 'ClusterRole') copy.roleRef.name = `${copy.roleRef.name}-${ns.name}`;
        for (const subject of copy.subjects ?? []) subject.namespace = ns.name;
        return copy;
      });
    const created: KubeObject[] = [];
    try {
      for (const object of rbac) created.push((await objects.create(object)) as KubeObject);
      const authorization = ns.admin.makeApiClient(k8s.AuthorizationV1Api);
      const user = `system:serviceaccount:${ns.name}:${NAME}`;
      const groups = ['system:serviceaccounts', `system:serviceaccounts:${ns.name}`, 'system:authenticated'];
      const allowed = async (attributes: k8s.V1ResourceAttributes): Promise<boolean> =>
        (
          await authorization.createSubjectAccessReview({
            body: { spec: { user, groups, resourceAttributes: attributes } },
          })
        ).status?.allowed === true;
      // The function's identity is granted tokenreviews: the check has teeth.
      const fnUser = `system:serviceaccount:${ns.name}:npu-fault-function`;
      const fnAllowed = await authorization.createSubjectAccessReview({
        body: {
          spec: {
            user: fnUser,
            groups,
            resourceAttributes: { group: 'authentication.k8s.io', resource: 'tokenreviews', verb: 'create' },
          },
        },
      });
      expect(fnAllowed.status?.allowed).toBe(true);
      for (const attributes of [
        { group: 'authentication.k8s.io', resource: 'tokenreviews', verb: 'create' },
        { resource: 'configmaps', namespace: ns.name, verb: 'get', name: 'npu-fault-status-v3' },
        { resource: 'configmaps', namespace: ns.name, verb: 'list' },
        { resource: 'nodes', verb: 'get' },
        { resource: 'nodes', verb: 'patch' },
        { resource: 'pods', namespace: ns.name, verb: 'list' },
        { resource: 'secrets', namespace: ns.name, verb: 'get' },
        {
          group: 'coordination.k8s.io',
          resource: 'leases',
          namespace: ns.name,
          verb: 'get',
          name: 'npu-fault-controller',
        },
        { resource: 'pods', subresource: 'eviction', namespace: ns.name, verb: 'create' },
      ] as k8s.V1ResourceAttributes[]) {
        expect({ ...attributes, allowed: await allowed(attributes) }).toEqual({
          ...attributes,
          allowed: false,
        });
      }
    } finally {
      for (const object of created.reverse()) await objects.delete(object).catch(() => undefined);
    }
  });
});

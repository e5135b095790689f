/**
 * The Helm chart (charts/npu-fault) against k8s/ and on the test plane:
 *
 * - `helm lint --strict`;
 * - one source of truth: `helm template` with the default values renders the same objects as
 *   `kubectl kustomize k8s`, object for object (Helm's own labels aside), and each option the
 *   same objects as the k8s/ component or folder it stands for; a change planted on either
 *   side of a copy is reported (docs/decisions/0003-helm-chart.md);
 * - a real `helm install` into fresh namespaces that the chart creates with their Pod Security
 *   labels, the controller, the function and an agent then run as processes under tokens of
 *   the chart's ServiceAccounts (the plane's kwok runs no containers) until the status names
 *   the agent's node; `helm upgrade` with remediation on (the controller reloads it) and three
 *   replicas; `helm uninstall`, after which nothing labelled with the release is left,
 *   cluster-scoped objects included.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { COLLECTOR_KINDS } from '../agent/index.js';
import { CONTROLLER_TOKEN_AUDIENCE } from '../contracts/index.js';
import { parseRemediationText } from '../controller/remediation/index.js';
import { createAgentIdentity, type AgentIdentity } from './setup/agent-identity.js';
import { createTestNamespace, waitUntilGone, watchUntil, type TestNamespace } from './setup/cluster.js';
import {
  startControllerProcess,
  writeKubeConfig,
  type ControllerProcess,
} from './setup/controller-process.js';
import {
  differences,
  helm,
  helmBinary,
  HELM_BUILD_TIMEOUT_MS,
  objectKey,
  parseObjects,
  runHelm,
} from './setup/helm.js';
import { kubectl, renderManifests, repoRoot, serverDryRun } from './setup/manifests.js';

const CHART = join(repoRoot, 'charts/npu-fault');
type Obj = k8s.KubernetesObject & { spec?: Record<string, unknown>; data?: Record<string, string> };

let home: string;

/** `helm template` of `chart` with `values` (--set pairs). */
async function template(values: Record<string, string> = {}, chart = CHART): Promise<Obj[]> {
  const sets = Object.entries(values).flatMap(([key, value]) => ['--set', `${key}=${value}`]);
  return parseObjects(await helm(['template', 'npu-fault', chart, ...sets], home)) as Obj[];
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'npu-fault-helm-home-'));
  await helmBinary(); // a cold cache builds it here, once
}, HELM_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('charts/npu-fault renders k8s/', () => {
  it('passes helm lint --strict, with the defaults and with every option on', async () => {
    const everyOption = [
      ...['controller.tls.enabled', 'controller.tls.certManager.enabled', 'controller.forceDelete.enabled'],
      ...['mindcluster.enabled', 'mindcluster.nodeInfo.enabled'],
      ...['agent.hostPort.enabled', 'monitoring.serviceMonitor.enabled', 'monitoring.podMonitor.enabled'],
      ...['monitoring.prometheusRule.enabled', 'monitoring.dashboard.enabled'],
    ].flatMap((key) => ['--set', `${key}=true`]);
    for (const values of [
      [],
      [
        ...everyOption,
        ...['--set', 'function.mode=knative', '--set', 'remediation.mode=drain'],
        ...['--set', 'remediation.drain.forceDeleteAfterSeconds=300', '--set', 'image.pullSecrets={mirror}'],
        ...['--set', `image.digest=sha256:${'0'.repeat(64)}`],
      ],
    ]) {
      const result = await runHelm(['lint', '--strict', CHART, ...values], home);
      expect(result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(result.code).toBe(0);
    }
  });

  it('renders the objects of `kubectl kustomize k8s` with its default values', async () => {
    const [chart, kustomize] = await Promise.all([template(), renderManifests(['k8s'])]);
    expect(differences(chart, kustomize)).toEqual([]);
    // Not vacuous: every component is there.
    expect(chart.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual(
      expect.arrayContaining([
        'Namespace/ai-infra',
        'Deployment/npu-fault-controller',
        'Deployment/npu-fault-function',
        'DaemonSet/npu-fault-agent',
        'NetworkPolicy/npu-fault-default-deny',
        'ClusterRole/npu-fault-operator',
      ]),
    );
  });

  it('renders the opt-in components: TLS (with its Certificate), force delete, device taints and the host port', async () => {
    const [chart, kustomize] = await Promise.all([
      template({
        'controller.tls.enabled': 'true',
        'controller.tls.certManager.enabled': 'true',
        'controller.forceDelete.enabled': 'true',
        'controller.deviceTaints.enabled': 'true',
        'agent.hostPort.enabled': 'true',
      }),
      renderManifests(
        ['k8s'],
        [
          'k8s/controller/tls',
          'k8s/controller/force-delete',
          'k8s/controller/device-taints',
          'k8s/agent/host-port',
        ],
      ),
    ]);
    // certificate.yaml is applied next to k8s (its kustomization says how), so it has no
    // kustomize labels of its own; the chart labels it like the rest.
    const certificate = parse(
      await readFile(join(repoRoot, 'k8s/controller/tls/certificate.yaml'), 'utf8'),
    ) as Obj;
    certificate.metadata = {
      ...certificate.metadata,
      labels: { ...certificate.metadata?.labels, 'app.kubernetes.io/part-of': 'npu-fault' },
    };
    expect(differences(chart, [...kustomize, certificate])).toEqual([]);
  });

  it('renders MindCluster in (mindcluster.enabled) as the component k8s/controller/mindcluster', async () => {
    expect((await template()).filter((o) => o.metadata?.name === 'npu-fault-controller-mindcluster')).toEqual(
      [],
    );
    const [chart, kustomize] = await Promise.all([
      template({ 'mindcluster.enabled': 'true' }),
      renderManifests(['k8s'], ['k8s/controller/mindcluster']),
    ]);
    expect(differences(chart, kustomize)).toEqual([]);
    expect(
      chart
        .filter((o) => o.metadata?.name === 'npu-fault-controller-mindcluster')
        .map((o) => `${o.kind}/${o.metadata?.namespace}`),
    ).toEqual(['Role/kube-system', 'RoleBinding/kube-system']);
    // Another namespace moves the grant there and tells the controller.
    const elsewhere = await template({ 'mindcluster.enabled': 'true', 'mindcluster.namespace': 'mindx-dl' });
    const role = elsewhere.find(
      (o) => o.kind === 'Role' && o.metadata?.name === 'npu-fault-controller-mindcluster',
    );
    expect(role?.metadata?.namespace).toBe('mindx-dl');
    const controller = elsewhere.find(
      (o) => o.kind === 'Deployment' && o.metadata?.name === 'npu-fault-controller',
    );
    expect(JSON.stringify(controller?.spec)).toContain('--mindcluster-namespace=mindx-dl');
  });

  it('renders NodeD node-info (mindcluster.nodeInfo.enabled) as the component k8s/controller/mindcluster-node-info, and refuses it alone', async () => {
    const [chart, kustomize] = await Promise.all([
      template({ 'mindcluster.enabled': 'true', 'mindcluster.nodeInfo.enabled': 'true' }),
      renderManifests(['k8s'], ['k8s/controller/mindcluster', 'k8s/controller/mindcluster-node-info']),
    ]);
    expect(differences(chart, kustomize)).toEqual([]);
    expect(
      chart
        .filter((o) => o.metadata?.name === 'npu-fault-controller-mindcluster-node-info')
        .map((o) => `${o.kind}/${o.metadata?.namespace}`),
    ).toEqual(['Role/mindx-dl', 'RoleBinding/mindx-dl']);
    const elsewhere = await template({
      'mindcluster.enabled': 'true',
      'mindcluster.nodeInfo.enabled': 'true',
      'mindcluster.nodeInfo.namespace': 'ascend-dl',
    });
    const controller = elsewhere.find(
      (o) => o.kind === 'Deployment' && o.metadata?.name === 'npu-fault-controller',
    );
    expect(JSON.stringify(controller?.spec)).toContain('--mindcluster-node-info-namespace=ascend-dl');
    const alone = await runHelm(
      ['template', 'npu-fault', CHART, '--set', 'mindcluster.nodeInfo.enabled=true'],
      home,
    );
    expect(alone.code).not.toBe(0);
    expect(alone.stderr).toContain('mindcluster.nodeInfo.enabled: needs mindcluster.enabled');
  });

  it('renders k8s/monitoring with monitoring on, PodMonitors included', async () => {
    const [chart, kustomize] = await Promise.all([
      template({
        'monitoring.serviceMonitor.enabled': 'true',
        'monitoring.prometheusRule.enabled': 'true',
        'monitoring.dashboard.enabled': 'true',
        'monitoring.podMonitor.enabled': 'true',
      }),
      renderManifests(['k8s', 'k8s/monitoring']),
    ]);
    const podMonitors = chart.filter((o) => o.kind === 'PodMonitor');
    expect(podMonitors.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`).sort()).toEqual([
      'ai-infra/npu-fault-agent',
      'ai-infra/npu-fault-function',
    ]);
    expect(differences(chart, kustomize)).toEqual([]);
  });

  it('renders the Knative overlay in place of the Deployment, Service and HPA with function.mode=knative', async () => {
    const [chart, base, knative] = await Promise.all([
      template({ 'function.mode': 'knative' }),
      renderManifests(['k8s']),
      renderManifests(['k8s/functions/knative']),
    ]);
    const replaced = new Set(['Deployment', 'Service', 'HorizontalPodAutoscaler']);
    const expected = new Map(
      base
        .filter((o) => !(o.metadata?.name === 'npu-fault-function' && replaced.has(o.kind ?? '')))
        .map((o) => [objectKey(o), o]),
    );
    for (const object of knative) expected.set(objectKey(object), object);
    expect(differences(chart, [...expected.values()])).toEqual([]);
    expect(chart.filter((o) => o.apiVersion === 'serving.knative.dev/v1')).toHaveLength(1);
  });

  it('reports a change planted on either side (in a copy of k8s/ and the chart)', async () => {
    const copy = await mkdtemp(join(tmpdir(), 'npu-fault-helm-planted-'));
    try {
      // The same layout, so the chart's links into k8s/monitoring resolve into the copy.
      await cp(join(repoRoot, 'k8s'), join(copy, 'k8s'), { recursive: true });
      await cp(CHART, join(copy, 'charts/npu-fault'), { recursive: true, verbatimSymlinks: true });
      const render = async (): Promise<string[]> =>
        differences(
          await template({}, join(copy, 'charts/npu-fault')),
          parseObjects(await kubectl(['kustomize', join(copy, 'k8s')])),
        );
      expect(await render()).toEqual([]);

      const edit = async (file: string, from: string, to: string): Promise<void> => {
        const text = await readFile(join(copy, file), 'utf8');
        expect(text).toContain(from);
        await writeFile(join(copy, file), text.replace(from, to));
      };
      await edit('k8s/controller/pdb.yaml', 'spec:\n  maxUnavailable: 1', 'spec:\n  maxUnavailable: 2');
      expect(await render()).toEqual([
        'differs: policy/v1 PodDisruptionBudget ai-infra/npu-fault-controller at /spec/maxUnavailable (chart 1, k8s/ 2)',
      ]);
      await edit('k8s/controller/pdb.yaml', 'spec:\n  maxUnavailable: 2', 'spec:\n  maxUnavailable: 1');
      await edit('charts/npu-fault/templates/agent/service.yaml', 'port: 8081', 'port: 8082');
      expect(await render()).toEqual([
        'differs: v1 Service npu-fault-agent/npu-fault-agent at /spec/ports/0/port (chart 8082, k8s/ 8081)',
      ]);
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });

  it('packages into a self-contained archive that renders as the folder does (links resolved)', async () => {
    const out = await mkdtemp(join(tmpdir(), 'npu-fault-helm-package-'));
    try {
      await helm(['package', CHART, '--destination', out], home);
      const archive = join(out, 'npu-fault-0.1.0.tgz');
      const everything = {
        'monitoring.serviceMonitor.enabled': 'true',
        'monitoring.prometheusRule.enabled': 'true',
        'monitoring.dashboard.enabled': 'true',
      };
      const [packaged, folder] = await Promise.all([template(everything, archive), template(everything)]);
      expect(differences(packaged, folder)).toEqual([]);
      expect(packaged.map((o) => o.kind)).toEqual(expect.arrayContaining(['PrometheusRule', 'ConfigMap']));
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });

  it('renders remediation, when on, as the ConfigMap the controller hot-reloads, in a form it accepts', async () => {
    expect((await template()).filter((o) => o.metadata?.name === 'npu-fault-remediation')).toEqual([]);
    const chart = await template({
      'remediation.mode': 'drain',
      'remediation.breaker.maxUnhealthyPercent': '5',
    });
    const [configMap] = chart.filter(
      (o) => o.kind === 'ConfigMap' && o.metadata?.name === 'npu-fault-remediation',
    );
    const parsed = parseRemediationText(configMap?.data?.['remediation.yaml'] ?? '', 'remediation.yaml');
    expect(parsed.error).toBeUndefined();
    expect(parsed.config).toMatchObject({ mode: 'drain', breaker: { maxUnhealthyPercent: 5 } });
    // The thermal preset is written out by the chart, off.
    expect(parse(configMap?.data?.['remediation.yaml'] ?? '')).toMatchObject({
      thermalEviction: { enabled: false, forSeconds: 120 },
    });
    const hot = await template({
      'remediation.mode': 'drain',
      'remediation.thermalEviction.enabled': 'true',
      'remediation.thermalEviction.forSeconds': '90',
    });
    const hotText = hot.find((o) => o.kind === 'ConfigMap' && o.metadata?.name === 'npu-fault-remediation')
      ?.data?.['remediation.yaml'];
    expect(parseRemediationText(hotText ?? '', 'remediation.yaml').config).toMatchObject({
      thermalEviction: { enabled: true, forSeconds: 90 },
    });
    // A value the controller would refuse fails the render instead.
    const refused = await runHelm(['template', 'x', CHART, '--set', 'remediation.mode=off-by-one'], home);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("at '/remediation/mode': value must be one of 'off', 'cordon', 'drain'");
    const negative = await runHelm(
      ['template', 'x', CHART, '--set', 'remediation.thermalEviction.forSeconds=-1'],
      home,
    );
    expect(negative.code).not.toBe(0);
    expect(negative.stderr).toContain('/remediation/thermalEviction/forSeconds');
  });

  it('refuses values its schema does not know, and knows the collectors the agent has', async () => {
    // A misspelt key would otherwise be ignored, leaving the default in force unnoticed.
    const misspelt = await runHelm(['template', 'x', CHART, '--set', 'controler.replicas=3'], home);
    expect(misspelt.code).not.toBe(0);
    expect(misspelt.stderr).toContain("additional properties 'controler' not allowed");
    const schema = JSON.parse(await readFile(join(CHART, 'values.schema.json'), 'utf8')) as {
      properties: { agent: { properties: { collector: { enum: string[] } } } };
    };
    expect(schema.properties.agent.properties.collector.enum).toEqual([...COLLECTOR_KINDS]);
  });

  it('mounts the PodResources directory from agent.podResources.hostPath where the agent looks for it', async () => {
    const k0s = '/var/lib/k0s/kubelet/pod-resources';
    const chart = await template({ 'agent.podResources.hostPath': k0s });
    const agent = chart.find((o) => o.kind === 'DaemonSet') as k8s.V1DaemonSet | undefined;
    const spec = agent?.spec?.template.spec;
    expect(spec?.volumes?.find((v) => v.name === 'pod-resources')?.hostPath).toEqual({
      path: k0s,
      type: 'DirectoryOrCreate',
    });
    // Inside the container it stays where the agent's default socket is.
    expect(spec?.containers[0]?.volumeMounts?.find((m) => m.name === 'pod-resources')?.mountPath).toBe(
      '/var/lib/kubelet/pod-resources',
    );
    const relative = await runHelm(
      ['template', 'x', CHART, '--set', 'agent.podResources.hostPath=var/lib/kubelet'],
      home,
    );
    expect(relative.code).not.toBe(0);
    expect(relative.stderr).toContain('hostPath');
  });
});

describe('helm install, upgrade and uninstall on the test plane', () => {
  const suffix = randomBytes(3).toString('hex');
  const controllerNs = `helm-${suffix}-infra`;
  const agentNs = `helm-${suffix}-agent`;
  const node = `helm-${suffix}-node`;
  const release = 'npu-fault';
  let releaseNs: TestNamespace;
  let admin: k8s.KubeConfig;
  let objects: k8s.KubernetesObjectApi;
  let core: k8s.CoreV1Api;
  let dir: string;
  let installed: Obj[] = [];
  let agentIdentity: AgentIdentity | undefined;
  const processes: ControllerProcess[] = [];
  const values = [
    '--set',
    `namespaces.controller=${controllerNs}`,
    '--set',
    `namespaces.agent=${agentNs}`,
    // Its own cluster-scoped names: other test files apply k8s/'s RBAC on this plane.
    '--set',
    `clusterScopedNameSuffix=-${suffix}`,
  ];

  /** Every object of the release's kinds labelled with its instance, by key. */
  async function labelledObjects(kinds: readonly { apiVersion: string; kind: string }[]): Promise<string[]> {
    const found = new Set<string>();
    for (const { apiVersion, kind } of kinds) {
      const list = await objects.list(
        apiVersion,
        kind,
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        `app.kubernetes.io/instance=${release}`,
      );
      for (const item of list.items) {
        const annotations = item.metadata?.annotations ?? {};
        // Only this release's (another file could install a release of the same name).
        if (annotations['meta.helm.sh/release-namespace'] !== releaseNs.name) continue;
        found.add(objectKey({ ...item, apiVersion, kind }));
      }
    }
    return [...found].sort();
  }

  beforeAll(async () => {
    releaseNs = await createTestNamespace('helm-release');
    admin = releaseNs.admin;
    objects = k8s.KubernetesObjectApi.makeApiClient(admin);
    core = admin.makeApiClient(k8s.CoreV1Api);
    dir = await mkdtemp(join(tmpdir(), 'npu-fault-helm-run-'));
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    // Whatever a failed step left: the release (and with it the namespaces), the Node.
    await runHelm(['uninstall', release, '-n', releaseNs.name, '--ignore-not-found'], home).catch(
      () => undefined,
    );
    await agentIdentity?.dispose().catch(() => undefined);
    for (const name of [controllerNs, agentNs]) await core?.deleteNamespace({ name }).catch(() => undefined);
    await releaseNs?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('installs into namespaces it creates with their Pod Security labels, every object admitted', async () => {
    await helm(['install', release, CHART, '-n', releaseNs.name, ...values], home);
    installed = parseObjects(await helm(['get', 'manifest', release, '-n', releaseNs.name], home)) as Obj[];
    expect(installed.length).toBeGreaterThanOrEqual(35);
    for (const object of installed) {
      const live = await objects.read({
        apiVersion: object.apiVersion ?? '',
        kind: object.kind ?? '',
        metadata: { name: object.metadata?.name ?? '', namespace: object.metadata?.namespace ?? '' },
      });
      expect(live.metadata?.annotations?.['meta.helm.sh/release-name']).toBe(release);
    }
    // Both namespaces are the chart's, with the labels Pod Security enforces.
    const labels = async (name: string): Promise<Record<string, string>> =>
      (await core.readNamespace({ name })).metadata?.labels ?? {};
    expect(await labels(controllerNs)).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'restricted' });
    expect(await labels(agentNs)).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'privileged' });

    // Enforced: the agent's pod template is refused in the controller's namespace and
    // admitted in its own; the controller's is admitted under restricted. (In the controller's
    // namespace the agent's pod runs as a ServiceAccount that exists there, so that Pod
    // Security, not the ServiceAccount admission, is what answers.)
    const podOf = (kind: string, name: string, namespace: string, serviceAccount?: string): Obj => {
      const workload = installed.find((o) => o.kind === kind && o.metadata?.name === name);
      const template = workload?.spec?.template as { metadata: object; spec: k8s.V1PodSpec };
      return {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { ...template.metadata, name: `helm-${suffix}`, namespace },
        spec: { ...template.spec, ...(serviceAccount ? { serviceAccountName: serviceAccount } : {}) },
      } as Obj;
    };
    await expect(
      serverDryRun([podOf('DaemonSet', 'npu-fault-agent', controllerNs, 'npu-fault-controller')]),
    ).rejects.toThrow(/violates PodSecurity "restricted:latest".*privileged/);
    await serverDryRun([podOf('DaemonSet', 'npu-fault-agent', agentNs)]);
    await serverDryRun([podOf('Deployment', 'npu-fault-controller', controllerNs)]);
    // And the ReplicaSet controller creates the controller's two pods there (no kubelet runs them).
    await watchUntil<k8s.V1Deployment>(
      admin,
      `/apis/apps/v1/namespaces/${controllerNs}/deployments`,
      (d) => d.metadata?.name === 'npu-fault-controller' && d.status?.replicas === 2,
      { timeoutMs: 30_000, what: 'the controller Deployment’s two pods' },
    );
  });

  it('runs a controller, a function and an agent under the chart’s ServiceAccounts until the status names the agent’s node', async () => {
    const tokenFor = async (serviceAccount: string, namespace: string): Promise<k8s.KubeConfig> =>
      releaseNs.serviceAccountKubeConfig(serviceAccount, namespace); // the chart made it: 409 ignored
    const controller = startControllerProcess({
      identity: 'replica-1',
      kubeconfig: writeKubeConfig(await tokenFor('npu-fault-controller', controllerNs)),
      // --auth-allowed-users is left to its default, the function's ServiceAccount of this namespace.
      args: [`--namespace=${controllerNs}`],
    });
    processes.push(controller);
    await controller.waitForLog((l) => l.msg === 'started leading', 60_000, 'leading');

    // The function as its Deployment configures it: whom it accepts is the chart's value.
    const deployment = installed.find(
      (o) => o.kind === 'Deployment' && o.metadata?.name === 'npu-fault-function',
    );
    const container = (deployment?.spec?.template as k8s.V1PodTemplateSpec).spec?.containers[0];
    const allowed = container?.env?.find((e) => e.name === 'NPU_FAULT_AUTH_ALLOWED_USERS')?.value ?? '';
    expect(allowed).toBe(`system:serviceaccount:${agentNs}:npu-fault-agent`);
    const minted = await core.createNamespacedServiceAccountToken({
      name: 'npu-fault-function',
      namespace: controllerNs,
      body: { spec: { audiences: [CONTROLLER_TOKEN_AUDIENCE], expirationSeconds: 3600 } },
    });
    const controllerToken = join(dir, 'controller-token');
    writeFileSync(controllerToken, minted.status?.token ?? '', { mode: 0o600 });
    const fn = startControllerProcess({
      identity: 'function',
      command: 'function',
      kubeconfig: writeKubeConfig(await tokenFor('npu-fault-function', controllerNs)),
      env: { NPU_FAULT_AUTH_ALLOWED_USERS: allowed },
      args: [
        `--namespace=${controllerNs}`,
        `--controllers=replica-1=http://127.0.0.1:${await controller.port('observations')}`,
        `--token-file=${controllerToken}`,
        '--allow-simulated-collectors', // the agent below is simulated
      ],
    });
    processes.push(fn);

    // The agent with a pod-bound token of the chart's agent ServiceAccount, on a kwok Node.
    agentIdentity = await createAgentIdentity(core, agentNs, node, 'agent', { kwok: true });
    const agentToken = join(dir, 'agent-token');
    writeFileSync(agentToken, await agentIdentity.mintToken(3600), { mode: 0o600 });
    processes.push(
      startControllerProcess({
        identity: 'agent',
        command: 'agent',
        args: [
          '--collector=sim',
          '--sim-enabled',
          '--sim-kind=910B',
          `--node=${node}`,
          `--function-url=http://127.0.0.1:${await fn.port('http')}`,
          `--token-file=${agentToken}`,
          '--probe-warmup-seconds=0',
        ],
      }),
    );
    const status = await watchUntil<k8s.V1ConfigMap>(
      admin,
      `/api/v1/namespaces/${controllerNs}/configmaps`,
      (cm) => cm.metadata?.name === 'npu-fault-status-v3' && JSON.stringify(cm.data ?? {}).includes(node),
      { timeoutMs: 60_000, what: `the status naming ${node}` },
    );
    expect(status.metadata?.namespace).toBe(controllerNs);
  });

  it('upgrades: three replicas, and remediation on, which the running controller takes up', async () => {
    const [controller] = processes;
    await helm(
      [
        'upgrade',
        release,
        CHART,
        '-n',
        releaseNs.name,
        ...values,
        '--set',
        'controller.replicas=3',
        '--set',
        'remediation.mode=cordon',
      ],
      home,
    );
    const deployment = (await objects.read({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'npu-fault-controller', namespace: controllerNs },
    })) as k8s.V1Deployment;
    expect(deployment.spec?.replicas).toBe(3);
    // Read under the chart's Role (resourceNames npu-fault-remediation) and valid.
    await controller?.waitForLog(
      (l) => l.msg === 'remediation settings in force' && l.mode === 'cordon',
      30_000,
      'the remediation ConfigMap in force',
    );
    installed = parseObjects(await helm(['get', 'manifest', release, '-n', releaseNs.name], home)) as Obj[];
    expect(installed.map(objectKey)).toContain(`v1 ConfigMap ${controllerNs}/npu-fault-remediation`);
  });

  it('uninstalls every object it created, cluster-scoped ones included', async () => {
    await Promise.all(processes.splice(0).map((p) => p.stop('SIGTERM')));
    const kinds = [
      ...new Map(
        installed.map((o) => [
          `${o.apiVersion} ${o.kind}`,
          { apiVersion: o.apiVersion ?? '', kind: o.kind ?? '' },
        ]),
      ).values(),
    ];
    // The label query finds exactly what the release holds, so its emptiness below means something.
    expect(await labelledObjects(kinds)).toEqual(installed.map(objectKey).sort());
    expect(installed.some((o) => o.kind === 'ClusterRole')).toBe(true);

    await helm(['uninstall', release, '-n', releaseNs.name], home);
    // The namespaces go, and what the components made in them (Lease, status) with them.
    for (const name of [controllerNs, agentNs])
      await waitUntilGone(admin, '/api/v1/namespaces', name, (fieldSelector) =>
        core.listNamespace({ fieldSelector }),
      );
    expect(await labelledObjects(kinds)).toEqual([]);
    expect((await runHelm(['status', release, '-n', releaseNs.name], home)).code).not.toBe(0);
  });
});

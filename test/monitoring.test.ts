/**
 * The monitoring of npu-fault works before anyone installs it: k8s/monitoring/ renders, its
 * alert rules pass `promtool check rules` and the promtool unit tests in
 * k8s/monitoring/tests/ (which are shown to fail when an alert never or always fires), every
 * rule and dashboard query is valid PromQL, the scrape reaches the controller's metrics port,
 * and a real controller exposition passes `promtool check metrics`. That every name a rule or
 * panel selects is exported by a running component is test/alerts-prometheus.test.ts's check,
 * on the real processes' /metrics.
 *
 * promtool is found or built (once, minutes on a cold machine) by hack/build-promtool.sh.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { deviceMetricNames } from '../agent/telemetry/index.js';
import { createRemediationMetrics } from '../controller/remediation/index.js';
import type * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { createLeaderElector } from '../controller/leader-election/index.js';
import { FakeLeaseClient } from '../controller/leader-election/testing.js';
import { FakeClock, createLogger, createRegistry, type Registry } from '../platform/index.js';
import { binDir } from './setup/cluster.js';
import { metricNames } from './setup/promql.js';
import { PROMTOOL_BUILD_TIMEOUT_MS, checkMetrics, promtool, runPromtool } from './setup/promtool.js';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const monitoringDir = join(repoRoot, 'k8s/monitoring');
const testsDir = join(monitoringDir, 'tests');

/**
 * prom-client's own default gauges whose names end in `_total` (counts of live handles,
 * requests and resources): promtool's naming lint flags them, and they are not ours to rename.
 */
const PROM_CLIENT_TOTAL_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** A PrometheusRule's rule, as the operator's CRD spells it. */
interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleSpec {
  groups: { name: string; rules: Rule[] }[];
}

/** A Grafana panel or target, as far as these checks read it. */
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: { refId: string; expr: string; datasource?: { type?: string; uid?: string } }[];
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: {
    list: {
      name: string;
      type: string;
      query: unknown;
      datasource?: { uid?: string };
      current?: { value?: unknown };
    }[];
  };
}

/**
 * Each dashboard variable a query may hold, and what the PromQL check fills it with. The
 * agents' series are selected by `$agent_namespace` (their pods' namespace), the controllers'
 * and the functions' by `$namespace`.
 */
const DASHBOARD_VARIABLES: Record<string, string> = {
  $__rate_interval: '1m',
  $__range: '6h',
  $agent_namespace: 'npu-fault-agent',
  $namespace: 'ai-infra',
  $node: '.*',
};

async function kustomize(dir: string): Promise<k8s.KubernetesObject[]> {
  const { stdout } = await run(join(binDir(), 'kubectl'), ['kustomize', dir], {
    maxBuffer: 32 * 1024 * 1024,
  });
  return parseAllDocuments(stdout).map((d) => d.toJS() as k8s.KubernetesObject);
}

function only<T extends k8s.KubernetesObject>(
  objects: k8s.KubernetesObject[],
  kind: string,
  name?: string,
): T {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
  if (found.length !== 1)
    throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, rendered ${found.length}`);
  return found[0] as T;
}

function alerts(spec: RuleSpec): Rule[] {
  return spec.groups.flatMap((g) => g.rules).filter((r) => r.alert !== undefined);
}

/** A controller registry as it is today: default process metrics, the leader election's and self-healing's. */
async function controllerExposition(): Promise<Registry> {
  const clock = new FakeClock();
  const registry = createRegistry('controller');
  const elector = createLeaderElector(
    {
      client: new FakeLeaseClient(clock),
      clock,
      log: createLogger({ level: 'silent' }),
      registry,
      random: () => 0,
    },
    { identity: 'npu-fault-controller-0' },
  );
  const stop = new AbortController();
  const running = elector.start(stop.signal);
  await clock.advance(3 * 2_000); // acquire, then three renewals: every series has a value
  createRemediationMetrics(registry); // self-healing's series (the leader sets them)
  expect(elector.isLeader()).toBe(true);
  stop.abort(new Error('exposition taken'));
  await running;
  return registry;
}

/** Whether a non-empty equality selector matches `labels`. */
function selects(
  selector: Record<string, string> | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  const wanted = Object.entries(selector ?? {});
  return wanted.length > 0 && wanted.every(([key, value]) => labels?.[key] === value);
}

/** GitHub's anchor of a Markdown heading. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');
}

let workDir: string;
let monitoring: k8s.KubernetesObject[];
let ruleSpec: RuleSpec;
let dashboard: Dashboard;

beforeAll(async () => {
  // Found or built here (a cold build takes minutes), so a missing promtool fails the tests
  // below with the script's one-line error instead of skipping them.
  await promtool();
  workDir = await mkdtemp(join(tmpdir(), 'npu-fault-monitoring-'));
  monitoring = await kustomize(monitoringDir);
  ruleSpec = (only(monitoring, 'PrometheusRule') as k8s.KubernetesObject & { spec: RuleSpec }).spec;
  dashboard = JSON.parse(await readFile(join(monitoringDir, 'grafana-dashboard.json'), 'utf8')) as Dashboard;
}, PROMTOOL_BUILD_TIMEOUT_MS);

afterAll(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** Writes `spec` as rules.yaml and copies the unit tests beside it; returns their paths. */
async function stageUnitTests(dir: string, spec: RuleSpec): Promise<string[]> {
  await writeFile(join(dir, 'rules.yaml'), stringify(spec));
  const files = (await readdir(testsDir)).filter((f) => f.endsWith('.test.yaml')).sort();
  for (const file of files) await copyFile(join(testsDir, file), join(dir, file));
  return files.map((f) => join(dir, f));
}

/** `spec` with every alert's expression replaced by `expr`. */
function withEveryAlertExpr(spec: RuleSpec, expr: string): RuleSpec {
  return {
    groups: spec.groups.map((g) => ({
      ...g,
      rules: g.rules.map((r) => (r.alert === undefined ? r : { ...r, expr })),
    })),
  };
}

describe('k8s/monitoring: alert rules', () => {
  it('renders a PrometheusRule, a ServiceMonitor, two PodMonitors and the dashboard ConfigMap, in ai-infra and part of npu-fault', () => {
    expect(monitoring.map((o) => o.kind).sort()).toEqual([
      'ConfigMap',
      'PodMonitor',
      'PodMonitor',
      'PrometheusRule',
      'ServiceMonitor',
    ]);
    for (const object of monitoring) {
      expect(object.metadata?.namespace).toBe('ai-infra');
      expect(object.metadata?.labels?.['app.kubernetes.io/part-of']).toBe('npu-fault');
    }
  });

  it('pass promtool check rules', async () => {
    await writeFile(join(workDir, 'rules.yaml'), stringify(ruleSpec));
    const result = await runPromtool(['check', 'rules', join(workDir, 'rules.yaml')]);
    const ruleCount = ruleSpec.groups.flatMap((g) => g.rules).length;
    expect({ code: result.code, out: result.stdout + result.stderr }).toEqual({
      code: 0,
      out: expect.stringContaining(`SUCCESS: ${ruleCount} rules found`),
    });
  });

  it('give every alert a severity, a summary, a description and a runbook section that exists', async () => {
    const runbook = await readFile(join(repoRoot, 'docs/runbook.md'), 'utf8');
    const anchors = new Set([...runbook.matchAll(/^#+ (.+)$/gm)].map((m) => anchor(m[1] ?? '')));
    const base = 'https://github.com/npu-fault/npu-fault/blob/main/docs/runbook.md#';
    const rules = alerts(ruleSpec);
    expect(rules.length).toBeGreaterThan(0);
    for (const rule of rules) {
      expect({ alert: rule.alert, severity: rule.labels?.severity }).toEqual({
        alert: rule.alert,
        severity: expect.stringMatching(/^(critical|warning)$/),
      });
      expect(rule.annotations?.summary).toEqual(expect.any(String));
      expect(rule.annotations?.description).toEqual(expect.any(String));
      const url = rule.annotations?.runbook_url ?? '';
      expect(url.startsWith(base)).toBe(true);
      expect({ alert: rule.alert, section: anchors.has(url.slice(base.length)) }).toEqual({
        alert: rule.alert,
        section: true,
      });
    }
  });

  it('pass their promtool unit tests, which cover every alert', async () => {
    const dir = await mkdtemp(join(workDir, 'unit-'));
    const files = await stageUnitTests(dir, ruleSpec);
    const tested = new Set<string>();
    for (const file of files) {
      const unit = parse(await readFile(file, 'utf8')) as {
        tests: { alert_rule_test?: { alertname: string }[] }[];
      };
      for (const test of unit.tests)
        for (const case_ of test.alert_rule_test ?? []) tested.add(case_.alertname);
    }
    expect(
      alerts(ruleSpec)
        .map((r) => r.alert)
        .filter((name) => !tested.has(name ?? '')),
    ).toEqual([]);

    const result = await runPromtool(['test', 'rules', ...files]);
    expect({ code: result.code, out: result.stdout + result.stderr }).toEqual({
      code: 0,
      out: expect.any(String),
    });
  });

  it.each([
    ['never fires', 'vector(0) > 1'],
    ['always fires', 'vector(1)'],
  ])('unit tests fail for every alert that %s (the tests have teeth)', async (_case, expr) => {
    const dir = await mkdtemp(join(workDir, 'teeth-'));
    const files = await stageUnitTests(dir, withEveryAlertExpr(ruleSpec, expr));
    const result = await runPromtool(['test', 'rules', ...files]);
    expect(result.code).not.toBe(0);
    const failed = new Set(
      [...(result.stdout + result.stderr).matchAll(/alertname: (\w+)/g)].map((m) => m[1]),
    );
    expect(
      alerts(ruleSpec)
        .map((r) => r.alert)
        .filter((name) => !failed.has(name)),
    ).toEqual([]);
  });
});

describe('k8s/monitoring: the scrape', () => {
  it("reaches the controller pods' metrics port, where the probes are", async () => {
    const main = await kustomize(join(repoRoot, 'k8s'));
    const monitor = only<
      k8s.KubernetesObject & { spec: { selector: k8s.V1LabelSelector; endpoints: { port: string }[] } }
    >(monitoring, 'ServiceMonitor');
    const service = main.find(
      (o) => o.kind === 'Service' && o.metadata?.name === 'npu-fault-controller',
    ) as k8s.V1Service;
    const deployment = only<k8s.V1Deployment>(main, 'Deployment', 'npu-fault-controller');
    const pdb = only<k8s.V1PodDisruptionBudget>(main, 'PodDisruptionBudget', 'npu-fault-controller');
    const podLabels = deployment.spec?.template.metadata?.labels ?? {};
    const container = deployment.spec?.template.spec?.containers[0];

    expect(selects(monitor.spec.selector.matchLabels, service.metadata?.labels)).toBe(true);
    expect(service.spec?.ports?.map((p) => p.name)).toEqual(
      expect.arrayContaining(monitor.spec.endpoints.map((e) => e.port)),
    );
    expect(selects(service.spec?.selector, podLabels)).toBe(true);
    expect(selects(pdb.spec?.selector?.matchLabels, podLabels)).toBe(true);
    const containerPorts = container?.ports?.map((p) => p.name) ?? [];
    expect(containerPorts).toEqual(
      expect.arrayContaining(service.spec?.ports?.map((p) => String(p.targetPort)) ?? []),
    );
    for (const probe of [container?.livenessProbe, container?.readinessProbe, container?.startupProbe])
      expect(probe?.httpGet?.port).toBe('metrics');
    // The ingest functions tell the leader by the EndpointSlice's targetRef (the pod name).
    expect(container?.env?.find((e) => e.name === 'NPU_FAULT_IDENTITY')?.valueFrom?.fieldRef?.fieldPath).toBe(
      'metadata.name',
    );
    expect(service.spec?.clusterIP).toBe('None');
  });

  it.each([
    ['npu-fault-agent', 'DaemonSet'],
    ['npu-fault-function', 'Deployment'],
  ])("reaches %s's pods on their metrics port", async (name, kind) => {
    const main = await kustomize(join(repoRoot, 'k8s'));
    const monitor = only<
      k8s.KubernetesObject & {
        spec: {
          selector: k8s.V1LabelSelector;
          namespaceSelector?: { matchNames?: string[] };
          podMetricsEndpoints: { port: string; path: string }[];
        };
      }
    >(
      monitoring.filter((o) => o.kind === 'PodMonitor'),
      'PodMonitor',
      name,
    );
    const workload = only<k8s.V1Deployment>(main, kind, name);
    const namespace = workload.metadata?.namespace ?? '';
    // In the monitor's own namespace, or one its namespaceSelector names.
    expect(
      monitor.metadata?.namespace === namespace ||
        monitor.spec.namespaceSelector?.matchNames?.includes(namespace),
    ).toBe(true);
    expect(selects(monitor.spec.selector.matchLabels, workload.spec?.template.metadata?.labels)).toBe(true);
    const ports = workload.spec?.template.spec?.containers[0]?.ports?.map((p) => p.name) ?? [];
    for (const endpoint of monitor.spec.podMetricsEndpoints) {
      expect(ports).toContain(endpoint.port);
      expect(endpoint.path).toBe('/metrics');
    }
  });

  it('lets kustomize override the controller image', async () => {
    const overlay = await mkdtemp(join(workDir, 'overlay-'));
    const kustomization = {
      resources: [relative(overlay, join(repoRoot, 'k8s'))],
      images: [
        { name: 'ghcr.io/npu-fault/npu-fault', newName: 'registry.example.com/npu-fault', newTag: '9.9.9' },
      ],
    };
    await writeFile(join(overlay, 'kustomization.yaml'), stringify(kustomization));
    const deployment = only<k8s.V1Deployment>(await kustomize(overlay), 'Deployment', 'npu-fault-controller');
    expect(deployment.spec?.template.spec?.containers.map((c) => c.image)).toEqual([
      'registry.example.com/npu-fault:9.9.9',
    ]);
  });
});

describe('k8s/monitoring: the Grafana dashboard', () => {
  const allPanels = (): Panel[] => dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  const queryPanels = (): Panel[] => allPanels().filter((p) => p.type !== 'row');

  it('is the ConfigMap the kustomization generates, labelled for the Grafana sidecar', async () => {
    const configMap = only<k8s.V1ConfigMap>(monitoring, 'ConfigMap');
    expect(configMap.metadata?.labels?.grafana_dashboard).toBe('1');
    expect(configMap.data?.['npu-fault-controller.json']).toBe(
      await readFile(join(monitoringDir, 'grafana-dashboard.json'), 'utf8'),
    );
    expect(dashboard).toMatchObject({ uid: 'npu-fault-controller', schemaVersion: 39 });
  });

  it('asks for a Prometheus data source and uses it in every panel and query', () => {
    const variable = dashboard.templating.list.find((v) => v.type === 'datasource');
    expect(variable).toMatchObject({ name: 'datasource', query: 'prometheus' });
    const wrong = queryPanels().flatMap((panel) =>
      [panel.datasource, ...(panel.targets ?? []).map((t) => t.datasource)]
        .filter((ds) => ds?.type !== 'prometheus' || ds.uid !== '${datasource}')
        .map(() => panel.title),
    );
    expect(wrong).toEqual([]);
    for (const v of dashboard.templating.list.filter((v) => v.type === 'query'))
      expect(v.datasource?.uid).toBe('${datasource}');
  });

  it("asks for the controllers' namespace, the agents' (default npu-fault-agent) and the nodes", () => {
    expect(dashboard.templating.list.map((v) => v.name)).toEqual([
      'datasource',
      'namespace',
      'agent_namespace',
      'node',
    ]);
    const agentNamespace = dashboard.templating.list.find((v) => v.name === 'agent_namespace');
    expect(agentNamespace?.current?.value).toBe('npu-fault-agent');
    // Every variable a query uses is one the dashboard defines (or Grafana's own).
    const defined = new Set([
      ...dashboard.templating.list.map((v) => `$${v.name}`),
      '$__rate_interval',
      '$__range',
    ]);
    const used = queryPanels().flatMap((p) => (p.targets ?? []).flatMap((t) => t.expr.match(/\$\w+/g) ?? []));
    expect(used.filter((v) => !defined.has(v))).toEqual([]);
    expect(new Set(used)).toEqual(new Set(Object.keys(DASHBOARD_VARIABLES)));
  });

  it('has unique panel ids, panels side by side on the 24-column grid, and a query in every non-row panel', () => {
    const ids = allPanels().map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const overlapping: string[] = [];
    allPanels().forEach((a, i) => {
      expect(a.gridPos.x + a.gridPos.w).toBeLessThanOrEqual(24);
      expect(a.gridPos.h).toBeGreaterThan(0);
      for (const b of allPanels().slice(i + 1)) {
        const apart =
          a.gridPos.x + a.gridPos.w <= b.gridPos.x ||
          b.gridPos.x + b.gridPos.w <= a.gridPos.x ||
          a.gridPos.y + a.gridPos.h <= b.gridPos.y ||
          b.gridPos.y + b.gridPos.h <= a.gridPos.y;
        if (!apart) overlapping.push(`${a.title} / ${b.title}`);
      }
    });
    expect(overlapping).toEqual([]);
    expect(
      queryPanels()
        .filter((p) => (p.targets ?? []).length === 0)
        .map((p) => p.title),
    ).toEqual([]);
  });

  it('shows what the plan asks for', () => {
    const exprs = queryPanels().flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    const named = new Set(exprs.flatMap(metricNames));
    for (const metric of [
      'npu_fault_controller_devices',
      'npu_fault_controller_node_devices',
      'npu_fault_controller_transitions_total',
      'npu_fault_controller_publish_latency_seconds_bucket',
      'npu_fault_controller_writes_total',
      'npu_fault_controller_write_bytes_total',
      'npu_fault_controller_publish_conflicts_total',
      'npu_fault_controller_leader',
      'npu_fault_controller_leader_term',
      'npu_fault_controller_observations_total',
      'npu_fault_controller_observation_requests_total',
      'npu_fault_controller_stale_agents',
      'npu_fault_controller_unobserved_nodes',
      'npu_fault_controller_watch_restarts_total',
      'npu_fault_controller_rules_reloads_total',
      'npu_fault_controller_remediation_nodes',
      'npu_fault_controller_remediation_breaker_open',
      // Every device series the agents export (agent/telemetry/metrics.ts).
      ...Object.keys(deviceMetricNames()),
    ])
      expect({ metric, shown: named.has(metric) }).toEqual({ metric, shown: true });
    const rows = dashboard.panels.filter((p) => p.type === 'row').map((p) => p.title);
    expect(rows).toContain('Devices');
    // The Devices row: a status timeline, temperature, ECC increases, PCIe links, memory.
    const devices = (metric: string, type: string): string[] =>
      queryPanels()
        .filter((p) => p.type === type && (p.targets ?? []).some((t) => metricNames(t.expr).includes(metric)))
        .map((p) => p.title);
    expect(devices('npu_fault_agent_device_status', 'state-timeline')).not.toEqual([]);
    expect(devices('npu_fault_agent_device_status', 'table')).not.toEqual([]);
    expect(devices('npu_fault_agent_device_temperature_celsius', 'timeseries')).not.toEqual([]);
    expect(devices('npu_fault_agent_device_pcie_link_up', 'state-timeline')).not.toEqual([]);
    expect(devices('npu_fault_agent_device_memory_used_bytes', 'timeseries')).not.toEqual([]);
    const ecc = queryPanels()
      .flatMap((p) => p.targets ?? [])
      .map((t) => t.expr)
      .filter((e) => e.includes('increase(npu_fault_agent_device_ecc_errors_total{'));
    for (const type of ['correctable', 'uncorrectable'])
      expect(ecc.some((e) => e.includes(`type="${type}"`) && e.includes('[$__rate_interval]'))).toBe(true);
  });

  it('has a panel for every npu-fault figure the runbook names', async () => {
    const runbook = await readFile(join(repoRoot, 'docs/runbook.md'), 'utf8');
    const shown = new Set(
      queryPanels()
        .flatMap((p) => (p.targets ?? []).flatMap((t) => metricNames(t.expr)))
        .map((name) => name.replace(/_(bucket|sum|count)$/, '')),
    );
    const named = [...new Set(runbook.match(/\bnpu_fault_[a-z0-9_]+/g) ?? [])];
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((name) => !shown.has(name))).toEqual([]);
  });

  it("queries select each npu-fault metric in its component's namespace", () => {
    const problems: string[] = [];
    let agentSelectors = 0;
    for (const panel of queryPanels())
      for (const target of panel.targets ?? []) {
        for (const selector of target.expr.matchAll(/\b(npu_fault_[a-z0-9_]+)(\{[^}]*\})?/g)) {
          const agent = selector[1]!.startsWith('npu_fault_agent_');
          if (agent) agentSelectors++;
          const variable = agent ? '$agent_namespace' : '$namespace';
          if (!(selector[2] ?? '').includes(`namespace="${variable}"`))
            problems.push(`${panel.title}: ${selector[1]} not limited to ${variable}`);
        }
      }
    expect(problems).toEqual([]);
    expect(agentSelectors).toBeGreaterThan(0);
  });

  it('queries are valid PromQL (promtool check rules, with the variables filled in)', async () => {
    const rules = queryPanels().flatMap((panel) =>
      (panel.targets ?? []).map((target) => ({
        record: `dashboard:panel_${panel.id}_${target.refId}`,
        expr: Object.entries(DASHBOARD_VARIABLES).reduce(
          (expr, [variable, value]) => expr.replaceAll(variable, value),
          target.expr,
        ),
      })),
    );
    const file = join(workDir, 'dashboard-queries.yaml');
    await writeFile(file, stringify({ groups: [{ name: 'dashboard', rules }] }));
    const result = await runPromtool(['check', 'rules', file]);
    expect({ code: result.code, out: result.stdout + result.stderr }).toEqual({
      code: 0,
      out: expect.stringContaining(`SUCCESS: ${rules.length} rules found`),
    });
  });
});

describe('promtool check metrics', () => {
  it('finds nothing wrong in the controller exposition but prom-client’s own *_total gauges', async () => {
    const exposition = await (await controllerExposition()).metrics();
    // Every kind of series is there with a value: gauges, counters, a histogram with observations.
    expect(exposition).toMatch(/^npu_fault_controller_leader_transitions_total\{to="leader"\} 1$/m);
    expect(exposition).toMatch(/^npu_fault_controller_lease_renew_duration_seconds_count [1-9]/m);
    const findings = await checkMetrics(exposition);
    const ours = findings.filter(
      (f) => !PROM_CLIENT_TOTAL_GAUGES.some((name) => f.metric === `npu_fault_controller_${name}`),
    );
    expect(ours).toEqual([]);
  });

  it('reports badly named metrics (the check has teeth)', async () => {
    const bad = [
      '# HELP npu_fault_controller_things Things counted.',
      '# TYPE npu_fault_controller_things counter',
      'npu_fault_controller_things 1',
      '# HELP npu_fault_controller_depth_total A depth.',
      '# TYPE npu_fault_controller_depth_total gauge',
      'npu_fault_controller_depth_total 2',
      '',
    ].join('\n');
    expect((await checkMetrics(bad)).map((f) => f.metric).sort()).toEqual([
      'npu_fault_controller_depth_total',
      'npu_fault_controller_things',
    ]);
  });

  it('refuses text that is not an exposition at all', async () => {
    await expect(checkMetrics('this is { not metrics\n')).rejects.toThrow(/promtool check metrics failed/);
  });
});

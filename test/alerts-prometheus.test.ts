/**
 * The shipped alerts on a real Prometheus (issue 28): Debian's `prometheus` loads the rules of
 * k8s/monitoring/prometheusrule.yaml and scrapes the real components on the test plane (two
 * controller replicas, the ingest function, a simulated 910B agent) and a stand-in vLLM
 * exporting `vllm:e2e_request_latency_seconds`, at the shipped scrape interval (15 s, the
 * ServiceMonitor's) and kube-prometheus-stack's evaluation interval (30 s). Faults are injected
 * on the simulated node; the test reads /api/v1/alerts until each alert fires with the right
 * labels, then clears. It also reads every metric name the components export and fails when a
 * rule names anything else. promtool's unit tests (test/monitoring.test.ts) keep the edge cases.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Histogram, Registry } from 'prom-client';
import { parse } from 'yaml';
import { microTime } from '../platform/k8s/index.js';
import { createAgentIdentity } from './setup/agent-identity.js';
import { createTestNamespace, type TestNamespace } from './setup/cluster.js';
import {
  startControllerProcess,
  startTestFunction,
  startTestReplica,
  type ControllerProcess,
} from './setup/controller-process.js';
import { controllerAccess, functionAccess, type ControllerAccess } from './setup/controller-rbac.js';
import { metricNames } from './setup/promql.js';
import {
  prometheusMissing,
  startPrometheus,
  type PrometheusAlert,
  type RunningPrometheus,
} from './setup/prometheus.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRAPE_SECONDS = 15;
const EVALUATION_SECONDS = 30;
/** The metrics vLLM exports that the rules read (vLLM's own, not npu-fault's). */
const VLLM_METRICS = { 'vllm:e2e_request_latency_seconds': 'histogram' } as const;
/** vLLM's buckets for the end-to-end latency histogram (vllm/engine/metrics.py). */
const VLLM_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0];

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}

/** The PrometheusRule's spec, as the operator would load it. */
function shippedRules(): { groups: { name: string; rules: Rule[] }[] } {
  const object = parse(readFileSync(join(ROOT, 'k8s/monitoring/prometheusrule.yaml'), 'utf8')) as {
    spec: { groups: { name: string; rules: Rule[] }[] };
  };
  return object.spec;
}

interface Panel {
  title: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}

/** Every query of the shipped dashboard, with its panel's title. */
function dashboardQueries(): { panel: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'k8s/monitoring/grafana-dashboard.json'), 'utf8')) as {
    panels: Panel[];
  };
  return dashboard.panels
    .flatMap((p) => [p, ...(p.panels ?? [])])
    .flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
}

/** Every series name a `# TYPE` line of an exposition declares (histograms: its three series). */
function exportedSeries(exposition: string): string[] {
  const out: string[] = [];
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (name === undefined) continue;
    out.push(name);
    if (type === 'histogram' || type === 'summary')
      out.push(`${name}_bucket`, `${name}_sum`, `${name}_count`);
  }
  return out;
}

/** A stand-in vLLM: its latency histogram, fed a request every 100 ms at a latency the test sets. */
async function standInVllm(): Promise<{
  port: number;
  setLatency(seconds: number): void;
  close(): Promise<void>;
}> {
  const registry = new Registry();
  const histogram = new Histogram({
    name: 'vllm:e2e_request_latency_seconds',
    help: 'Histogram of end to end request latency in seconds.',
    labelNames: ['model_name'],
    buckets: VLLM_BUCKETS,
    registers: [registry],
  });
  let latency = 0.4;
  const feed = setInterval(() => histogram.observe({ model_name: 'qwen2.5-7b' }, latency), 100);
  const server: Server = createServer((_req, res) => {
    void registry.metrics().then((text) => {
      res.setHeader('content-type', registry.contentType);
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    setLatency: (seconds) => (latency = seconds),
    async close() {
      clearInterval(feed);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const missing = prometheusMissing();
const TITLE = `the shipped alerts on a real Prometheus${missing ? ` (skipped: ${missing})` : ''}`;
const describeWithPrometheus = missing === null ? describe : describe.skip;

describeWithPrometheus(TITLE, () => {
  let ns: TestNamespace;
  let controllers: ControllerAccess;
  let fn: ControllerAccess;
  let core: k8s.CoreV1Api;
  let node: string;
  let agentUrl: string;
  let secondAgent: ControllerProcess;
  let secondAgentUrl: string;
  let prometheus: RunningPrometheus;
  let vllm: Awaited<ReturnType<typeof standInVllm>>;
  const processes: ControllerProcess[] = [];
  const scraped: Record<string, string> = {};
  const dir = mkdtempSync(join(tmpdir(), 'npu-fault-alerts-'));
  const faultToken = randomBytes(24).toString('hex');

  const inject = async (fault: Record<string, unknown>): Promise<number> => {
    const response = await fetch(`${agentUrl}/v1/sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${faultToken}` },
      body: JSON.stringify(fault),
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: number }).id;
  };
  const endFault = async (id: number): Promise<void> => {
    const response = await fetch(`${agentUrl}/v1/sim/faults/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${faultToken}` },
    });
    expect(response.ok).toBe(true);
  };

  /** Polls Prometheus's alerts (it pushes nothing) until `wanted` holds; returns what matched. */
  const alertsUntil = async (
    wanted: (alerts: PrometheusAlert[]) => PrometheusAlert[] | false,
    what: string,
    timeoutMs: number,
  ): Promise<PrometheusAlert[]> => {
    const deadline = Date.now() + timeoutMs;
    let last: PrometheusAlert[] = [];
    for (;;) {
      last = await prometheus.alerts();
      const found = wanted(last);
      if (found !== false) return found;
      if (Date.now() > deadline)
        throw new Error(
          `${what}: not within ${timeoutMs} ms; alerts: ${JSON.stringify(last.map((a) => [a.labels.alertname, a.state]))}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  };
  const firing = (name: string, labels: Record<string, string>) => (alerts: PrometheusAlert[]) => {
    const found = alerts.filter(
      (a) =>
        a.state === 'firing' &&
        a.labels.alertname === name &&
        Object.entries(labels).every(([k, v]) => a.labels[k] === v),
    );
    return found.length > 0 ? found : false;
  };
  const gone = (name: string) => (alerts: PrometheusAlert[]) =>
    alerts.some((a) => a.labels.alertname === name) ? false : [];

  /** A simulated 910B agent for `name` (its Node and pod exist), its fault API behind the test's token. */
  const startSimAgent = (name: string, tokenFile: string, functionPort: number): ControllerProcess =>
    startControllerProcess({
      identity: name === node ? 'agent' : `agent-${name}`,
      command: 'agent',
      args: [
        '--collector=sim',
        '--sim-enabled',
        '--sim-kind=910B',
        `--sim-fault-token-file=${join(dir, 'fault-token')}`,
        `--node=${name}`,
        `--function-url=http://127.0.0.1:${functionPort}`,
        `--token-file=${tokenFile}`,
        '--probe-warmup-seconds=0',
      ],
    });

  beforeAll(async () => {
    ns = await createTestNamespace('alerts');
    controllers = await controllerAccess(ns);
    fn = await functionAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    node = `${ns.name}-n1`;
    const identity = await createAgentIdentity(core, ns.name, node);
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, await identity.mintToken(), { mode: 0o600 });
    writeFileSync(join(dir, 'fault-token'), faultToken, { mode: 0o600 });

    const replicas: string[] = [];
    const metricsPorts: number[] = [];
    for (const name of ['replica-1', 'replica-2']) {
      const replica = await startTestReplica({ identity: name, namespace: ns.name, access: controllers });
      processes.push(replica);
      replicas.push(`${name}=http://127.0.0.1:${await replica.port('observations')}`);
      metricsPorts.push(await replica.port('metrics'));
    }
    const function_ = await startTestFunction({
      ns,
      access: fn,
      dir,
      controllers: replicas.join(','),
      args: ['--allow-simulated-collectors'],
    });
    processes.push(function_);
    const functionPort = await function_.port('http');
    const agent = startSimAgent(node, tokenFile, functionPort);
    processes.push(agent);
    // A second node whose agent the test kills: NpuFaultStaleAgents.
    const secondIdentity = await createAgentIdentity(core, ns.name, `${node}-2`, 'agent-2');
    const secondTokenFile = join(dir, 'token-2');
    writeFileSync(secondTokenFile, await secondIdentity.mintToken(), { mode: 0o600 });
    secondAgent = startSimAgent(`${node}-2`, secondTokenFile, functionPort);
    processes.push(secondAgent);
    secondAgentUrl = `http://127.0.0.1:${await secondAgent.port('http')}`;
    const agentPort = await agent.port('http');
    agentUrl = `http://127.0.0.1:${agentPort}`;
    vllm = await standInVllm();

    for (const [job, url] of [
      ['agent', `${agentUrl}/metrics`],
      ['function', `http://127.0.0.1:${functionPort}/metrics`],
      ['controller', `http://127.0.0.1:${metricsPorts[0]}/metrics`],
    ] as const)
      scraped[job] = await (await fetch(url)).text();

    // The target labels a PodMonitor / ServiceMonitor gives: namespace and pod.
    const target = (job: string, port: number, labels: Record<string, string>) => ({
      job_name: job,
      static_configs: [{ targets: [`127.0.0.1:${port}`], labels }],
    });
    prometheus = await startPrometheus(
      {
        global: {
          scrape_interval: `${SCRAPE_SECONDS}s`,
          scrape_timeout: '10s',
          evaluation_interval: `${EVALUATION_SECONDS}s`,
        },
        scrape_configs: [
          target('npu-fault-agent', agentPort, {
            namespace: 'npu-fault-agent',
            pod: 'npu-fault-agent-abcde',
          }),
          target('npu-fault-function', functionPort, {
            namespace: 'ai-infra',
            pod: 'npu-fault-function-0',
          }),
          {
            job_name: 'npu-fault-controller',
            static_configs: metricsPorts.map((port, i) => ({
              targets: [`127.0.0.1:${port}`],
              labels: { namespace: 'ai-infra', pod: `npu-fault-controller-${i}` },
            })),
          },
          target('vllm', vllm.port, { namespace: 'serve', pod: 'vllm-0' }),
        ],
      },
      shippedRules(),
    );
  }, 120_000);

  afterAll(async () => {
    await prometheus?.stop();
    await vllm?.close();
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await core?.deleteNode({ name: node }).catch(() => undefined);
    await core?.deleteNode({ name: `${node}-2` }).catch(() => undefined);
    await controllers?.dispose();
    await fn?.dispose();
    await ns?.dispose();
  });

  it('rules and dashboard panels name only metrics the components export (or vLLM, for the inference alert)', () => {
    const known = new Set([
      ...Object.values(scraped).flatMap(exportedSeries),
      ...Object.entries(VLLM_METRICS).flatMap(([name, type]) => exportedSeries(`# TYPE ${name} ${type}\n`)),
    ]);
    const ruleNames = shippedRules()
      .groups.flatMap((g) => g.rules)
      .flatMap((r) => metricNames(r.expr).map((metric) => ({ where: r.alert ?? r.record, metric })));
    const panelNames = dashboardQueries().flatMap(({ panel, expr }) =>
      metricNames(expr).map((metric) => ({ where: panel, metric })),
    );
    expect(ruleNames.length).toBeGreaterThan(0);
    expect(panelNames.length).toBeGreaterThan(0);
    expect([...ruleNames, ...panelNames].filter(({ metric }) => !known.has(metric))).toEqual([]);
    // The check has teeth: a name no component exports is caught.
    expect(known.has('npu_fault_agent_device_temperature_celsius_max')).toBe(false);
    // The agent's device series are there, by name, with the published status.
    expect(scraped.agent).toMatch(
      /^npu_fault_agent_device_temperature_celsius\{node="[^"]+",device="npu0",pci="[^"]+",model="[^"]*",family="910B"\} \d/m,
    );
  });

  /** Polls an instant query until it returns a sample. */
  const seriesUntil = async (expr: string, what: string, timeoutMs: number): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while ((await prometheus.query(expr)).length === 0) {
      if (Date.now() > deadline) throw new Error(`${what}: no ${expr} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  };

  it('fires the device, inference, stale-agent and leader alerts on their faults with the right labels, and clears them', async () => {
    // A counter first seen after its fault has no increase: wait for a scrape of the healthy node.
    await seriesUntil(
      `npu_fault_agent_device_ecc_errors_total{node="${node}",type="uncorrectable"} == 0`,
      'a healthy scrape of the agent',
      60_000,
    );
    await seriesUntil('npu_fault_controller_leader == 1', 'a scrape of the leader', 60_000);
    // The second agent has been answered (the leader knows its node), then it dies.
    for (const deadline = Date.now() + 60_000; ;) {
      const fault = (await (await fetch(`${secondAgentUrl}/v1/fault`)).json()) as { leader: string | null };
      if (fault.leader !== null) break;
      if (Date.now() > deadline) throw new Error('the second agent was never answered');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await secondAgent.stop('SIGKILL');
    const started = Date.now();
    const hot = await inject({ kind: 'hot', device: 'npu2', celsius: 95 });
    await inject({ kind: 'uncorrectable', device: 'npu5', count: 2 });
    const storm = await inject({ kind: 'ecc-storm', device: 'npu6' });
    vllm.setLatency(4);
    const seconds = (since: number): number => Math.round((Date.now() - since) / 1000);
    const firedAt: Record<string, number> = {};
    const watch = async (name: string, labels: Record<string, string>, since = started) => {
      const found = await alertsUntil(firing(name, labels), `${name} firing`, 480_000);
      firedAt[name] = seconds(since);
      return found;
    };
    const [temperature, uncorrectable, correctable, latency, failed] = await Promise.all([
      watch('NpuFaultDeviceHighTemperature', { node, device: 'npu2', family: '910B' }),
      watch('NpuFaultDeviceEccUncorrectable', { node, device: 'npu5', type: 'uncorrectable' }),
      watch('NpuFaultDeviceEccCorrectable', { node, device: 'npu6', type: 'correctable' }),
      watch('NpuFaultInferenceLatencyHigh', {
        namespace: 'serve',
        pod: 'vllm-0',
        model_name: 'qwen2.5-7b',
      }),
      watch('NpuFaultDevicesFailed', { family: '910B' }),
    ]);
    expect(temperature[0]?.labels).toMatchObject({ severity: 'warning', pci: expect.any(String) });
    expect(uncorrectable[0]?.labels.severity).toBe('critical');
    expect(correctable[0]?.labels.severity).toBe('warning');
    expect(latency[0]?.labels.severity).toBe('warning');
    expect(Number(failed[0]?.value)).toBeGreaterThanOrEqual(1);

    // The faults end while the dead agent's alert (five minutes) is still pending.
    const ended = Date.now();
    await endFault(hot);
    await endFault(storm);
    vllm.setLatency(0.4);
    const clearedAt: Record<string, number> = {};
    await Promise.all([
      ...['NpuFaultDeviceHighTemperature', 'NpuFaultInferenceLatencyHigh'].map(async (name) => {
        await alertsUntil(gone(name), `${name} cleared`, 240_000);
        clearedAt[name] = seconds(ended);
      }),
      watch('NpuFaultStaleAgents', { namespace: 'ai-infra', severity: 'warning' }, started).then((found) =>
        expect(Number(found[0]?.value)).toBe(1),
      ),
      // The ECC alerts clear once their last increase leaves the 5-minute window: the
      // uncorrectable burst's at the fault (timed from it), the storm's when it ended.
      ...(
        [
          ['NpuFaultDeviceEccUncorrectable', started],
          ['NpuFaultDeviceEccCorrectable', ended],
        ] as const
      ).map(async ([name, since]) => {
        await alertsUntil(gone(name), `${name} cleared`, 480_000);
        clearedAt[name] = seconds(since);
      }),
    ]);

    // Another holder takes the Lease for an hour: no replica leads.
    const taken = Date.now();
    const leases = ns.admin.makeApiClient(k8s.CoordinationV1Api);
    // The leader renews between our read and write: reread on each conflict, as any writer must.
    for (let attempt = 1; ; attempt += 1) {
      const lease = await leases.readNamespacedLease({ name: 'npu-fault-controller', namespace: ns.name });
      const now = microTime(Date.now());
      try {
        await leases.replaceNamespacedLease({
          name: 'npu-fault-controller',
          namespace: ns.name,
          body: {
            ...lease,
            spec: {
              ...lease.spec,
              holderIdentity: 'someone-else',
              leaseDurationSeconds: 3600,
              renewTime: now,
              acquireTime: now,
            },
          },
        });
        break;
      } catch (error) {
        if ((error as { code?: number }).code !== 409 || attempt >= 10) throw error;
      }
    }
    await watch('NpuFaultControllerNoLeader', { namespace: 'ai-infra', severity: 'critical' }, taken);
    // The Lease is free again: a replica takes it, and the alert clears.
    await leases.deleteNamespacedLease({ name: 'npu-fault-controller', namespace: ns.name });
    const freed = Date.now();
    await alertsUntil(gone('NpuFaultControllerNoLeader'), 'NpuFaultControllerNoLeader cleared', 240_000);
    clearedAt.NpuFaultControllerNoLeader = seconds(freed);
    // The figures at the shipped intervals, for the issue's note.
    process.stderr.write(
      `alerts: seconds from fault to firing ${JSON.stringify(firedAt)}; from its end to clear ${JSON.stringify(clearedAt)}\n`,
    );
  }, 1_200_000);
});

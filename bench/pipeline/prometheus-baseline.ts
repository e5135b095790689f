/**
 * The Prometheus baseline of the pipeline benchmark: what a cluster without npu-fault would
 * have, real Prometheus and Alertmanager (the Debian packages `prometheus` and
 * `prometheus-alertmanager`) scraping the simulated nodes' npu-exporter-shaped /metrics
 * (exporter.ts), an alert rule, and a webhook receiver that notes when each alert arrives.
 *
 * Layout: one scrape job, `npu-exporter`, with one static target per node, all on the
 * exporter's port; each target's `__metrics_path__` (`/metrics/<node>`) and `instance` (the
 * node's name) are set as target labels, so no relabelling rules are needed. Every setting
 * that shapes the latency is in `configuration`, read back from the running binaries where
 * they report it.
 *
 * The path a fault takes: the next scrape (every scrapeInterval) sees 0 → the next rule
 * evaluation (every evaluationInterval; `for: 0s` fires at once) → Prometheus's notifier
 * sends to Alertmanager right after that evaluation → Alertmanager's new group waits
 * group_wait (0 s) → the webhook. Expect about scrapeInterval/2 + evaluationInterval/2.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { HEALTH_METRIC } from './exporter.js';
import { listenOnLoopback } from './loopback.js';

const run = promisify(execFile);

export const DEFAULT_PROMETHEUS_BINARY = '/usr/bin/prometheus';
export const DEFAULT_ALERTMANAGER_BINARY = '/usr/bin/prometheus-alertmanager';
export const ALERT_NAME = 'AcceleratorUnhealthy';
export const ALERT_EXPR = `${HEALTH_METRIC} == 0`;
const JOB_NAME = 'npu-exporter';
const GROUP_BY = ['alertname', 'node', 'id'];
/** Lines of each binary's stderr kept for an error message. */
const STDERR_TAIL_LINES = 30;
const START_ATTEMPTS = 3;
const READY_POLL_MS = 200;

/** One alert as the webhook first received it. */
export interface FiringAlert {
  node: string;
  /** The alert's `id` label: the device's index on its node (exporter.ts). */
  device: string;
  /** When the webhook received it (epoch ms). */
  receivedAt: number;
  /** Prometheus's `startsAt`: the rule evaluation that first saw the device at 0. */
  startsAt: string;
}

export interface PrometheusBaselineOptions {
  exporterPort: number;
  targets: { node: string; path: string }[];
  scrapeIntervalSeconds?: number;
  evaluationIntervalSeconds?: number;
  groupWaitSeconds?: number;
  /** Alertmanager's wait before notifying a changed group again (default 10 s). */
  groupIntervalSeconds?: number;
  /** Alertmanager's wait before repeating an unchanged notification (default 1 h). */
  repeatIntervalSeconds?: number;
  prometheusBinary?: string;
  alertmanagerBinary?: string;
  /** Receives the binaries' last stderr lines when one fails (exits early, never ready). */
  log?: (line: string) => void;
}

/** A running baseline. */
export interface PrometheusBaseline {
  /** Every setting that shapes its latency, and the binaries' versions. */
  configuration: Record<string, string | number>;
  /** Where the two listen (loopback), for a caller that wants their APIs or metrics. */
  urls: { prometheus: string; alertmanager: string };
  /** Their process ids (the benchmark accounts for their CPU and memory). */
  pids: { prometheus: number; alertmanager: number };
  /** Each alert once per (node, device, startsAt), in arrival order. */
  firing: FiringAlert[];
  /** Resolves once both are ready, Prometheus knows Alertmanager and every target is up. */
  waitReady(timeoutMs?: number): Promise<void>;
  /** Calls `listener` for each new entry of `firing`; returns the unsubscribe. */
  onFiring(listener: (alert: FiringAlert) => void): () => void;
  /** Kills both binaries, closes the webhook and removes the temp dir. */
  stop(): Promise<void>;
}

/** The configured binaries that are not executable here, each with the package that has it. */
export function missingBaselineBinaries(
  options: { prometheusBinary?: string; alertmanagerBinary?: string } = {},
): string[] {
  const wanted = [
    { path: options.prometheusBinary ?? DEFAULT_PROMETHEUS_BINARY, pkg: 'prometheus' },
    { path: options.alertmanagerBinary ?? DEFAULT_ALERTMANAGER_BINARY, pkg: 'prometheus-alertmanager' },
  ];
  return wanted
    .filter(({ path }) => {
      try {
        accessSync(path, constants.X_OK);
        return false;
      } catch {
        return true;
      }
    })
    .map(({ path, pkg }) => `${path} (Debian package ${pkg})`);
}

interface Settings {
  scrape: number;
  evaluation: number;
  groupWait: number;
  groupInterval: number;
  repeatInterval: number;
}

/** prometheus.yml: one job, one static target per node (path and instance as target labels). */
export function prometheusConfig(
  options: Pick<PrometheusBaselineOptions, 'exporterPort' | 'targets'>,
  settings: Pick<Settings, 'scrape' | 'evaluation'>,
  alertmanagerPort: number,
  rulesFile: string,
): unknown {
  return {
    global: {
      scrape_interval: `${settings.scrape}s`,
      // Prometheus's 10 s default would exceed a 5 s interval; loopback scrapes take ms.
      scrape_timeout: `${settings.scrape}s`,
      evaluation_interval: `${settings.evaluation}s`,
    },
    rule_files: [rulesFile],
    alerting: {
      alertmanagers: [
        { api_version: 'v2', static_configs: [{ targets: [`127.0.0.1:${alertmanagerPort}`] }] },
      ],
    },
    scrape_configs: [
      {
        job_name: JOB_NAME,
        static_configs: options.targets.map(({ node, path }) => ({
          targets: [`127.0.0.1:${options.exporterPort}`],
          labels: { __metrics_path__: path, instance: node },
        })),
      },
    ],
  };
}

/** The rule file: one alert, firing at the first evaluation that sees a chip unhealthy. */
export function alertRules(): unknown {
  return {
    groups: [
      {
        name: 'npu-fault-baseline',
        rules: [{ alert: ALERT_NAME, expr: ALERT_EXPR, for: '0s', labels: { severity: 'critical' } }],
      },
    ],
  };
}

/** alertmanager.yml: one group per (alertname, node, id), sent at once to the webhook. */
export function alertmanagerConfig(
  settings: Pick<Settings, 'groupWait' | 'groupInterval' | 'repeatInterval'>,
  webhookUrl: string,
): unknown {
  return {
    route: {
      receiver: 'webhook',
      group_by: GROUP_BY,
      group_wait: `${settings.groupWait}s`,
      group_interval: `${settings.groupInterval}s`,
      repeat_interval: `${settings.repeatInterval}s`,
    },
    receivers: [{ name: 'webhook', webhook_configs: [{ url: webhookUrl, send_resolved: false }] }],
  };
}

/**
 * Writes the three files to a temp dir and starts Prometheus and Alertmanager on free
 * loopback ports (Alertmanager's gossip off). Returns at once; call waitReady before
 * injecting faults.
 */
export async function startPrometheusBaseline(
  options: PrometheusBaselineOptions,
): Promise<PrometheusBaseline> {
  const missing = missingBaselineBinaries(options);
  if (missing.length > 0) throw new Error(`prometheus baseline: not installed: ${missing.join(', ')}`);
  const prometheusBinary = options.prometheusBinary ?? DEFAULT_PROMETHEUS_BINARY;
  const alertmanagerBinary = options.alertmanagerBinary ?? DEFAULT_ALERTMANAGER_BINARY;
  const log = options.log ?? (() => undefined);
  const settings: Settings = {
    scrape: options.scrapeIntervalSeconds ?? 5,
    evaluation: options.evaluationIntervalSeconds ?? 10,
    groupWait: options.groupWaitSeconds ?? 0,
    groupInterval: options.groupIntervalSeconds ?? 10,
    repeatInterval: options.repeatIntervalSeconds ?? 3600,
  };
  const [prometheusVersion, alertmanagerVersion] = await Promise.all([
    binaryVersion(prometheusBinary),
    binaryVersion(alertmanagerBinary),
  ]);

  const webhook = await startWebhook();
  const dir = await mkdtemp(join(tmpdir(), 'npu-fault-prometheus-baseline-'));
  type Started = {
    prometheus: Watched;
    alertmanager: Watched;
    ports: { prometheus: number; alertmanager: number };
  };
  let processes: Started | undefined;
  try {
    processes = await startBoth();
  } catch (error) {
    webhook.server.closeAllConnections();
    await new Promise((done) => webhook.server.close(done));
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const { prometheus, alertmanager, ports } = processes;

  /** Both binaries on fresh ports; again on fresh ones if another process took a port first. */
  async function startBoth(): Promise<Started> {
    for (let attempt = 1; ; attempt++) {
      const ports = await freeLoopbackPorts(2);
      const chosen = { prometheus: ports[0]!, alertmanager: ports[1]! };
      await writeConfigs(chosen.alertmanager);
      const alertmanager = watch(
        'alertmanager',
        spawn(
          alertmanagerBinary,
          [
            `--config.file=${join(dir, 'alertmanager.yml')}`,
            `--storage.path=${join(dir, 'alertmanager-data')}`,
            `--web.listen-address=127.0.0.1:${chosen.alertmanager}`,
            '--cluster.listen-address=',
          ],
          { stdio: ['ignore', 'ignore', 'pipe'] },
        ),
      );
      const prometheus = watch(
        'prometheus',
        spawn(
          prometheusBinary,
          [
            `--config.file=${join(dir, 'prometheus.yml')}`,
            `--storage.tsdb.path=${join(dir, 'prometheus-data')}`,
            `--web.listen-address=127.0.0.1:${chosen.prometheus}`,
          ],
          { stdio: ['ignore', 'ignore', 'pipe'] },
        ),
      );
      const listening = await Promise.all([
        untilListening(alertmanager, chosen.alertmanager),
        untilListening(prometheus, chosen.prometheus),
      ]);
      if (listening.every((ok) => ok)) return { prometheus, alertmanager, ports: chosen };
      // Only the one that failed by itself is worth its stderr; the other is then stopped.
      const failed = [alertmanager, prometheus].filter((p) => p.exitCode !== undefined);
      await Promise.all([alertmanager.kill(), prometheus.kill()]);
      const clash = failed.some((p) => /address already in use/i.test(p.tail.join('\n')));
      if (!clash || attempt >= START_ATTEMPTS) {
        const exits = failed.map((p) => `${p.name} exited (${p.exitCode})`).join(', ');
        if (failed.length === 0) throw failure('not listening after 30 s', [alertmanager, prometheus]);
        throw failure(`${exits} while starting`, failed);
      }
    }
  }

  async function writeConfigs(alertmanagerPort: number): Promise<void> {
    const rulesFile = join(dir, 'rules.yml');
    await writeFile(rulesFile, stringify(alertRules()));
    await writeFile(
      join(dir, 'prometheus.yml'),
      stringify(prometheusConfig(options, settings, alertmanagerPort, rulesFile)),
    );
    await writeFile(
      join(dir, 'alertmanager.yml'),
      stringify(alertmanagerConfig(settings, `http://127.0.0.1:${webhook.port}/alerts`)),
    );
  }

  /** An error naming `what`, with both binaries' last stderr lines (also sent to `log`). */
  function failure(what: string, watched: Watched[] = current()): Error {
    const lines = watched.flatMap((p) => [`${p.name} stderr (last lines):`, ...p.tail.map((l) => `  ${l}`)]);
    for (const line of lines) log(line);
    return new Error(`prometheus baseline: ${what}\n${lines.join('\n')}`);
  }
  function current(): Watched[] {
    return processes === undefined ? [] : [processes.prometheus, processes.alertmanager];
  }

  const configuration: Record<string, string | number> = {
    'prometheus.version': prometheusVersion,
    'alertmanager.version': alertmanagerVersion,
    'scrape.layout': `one job (${JOB_NAME}), one static target per node: __metrics_path__ and instance as target labels`,
    'scrape.targets': options.targets.length,
    'scrape_interval.s': settings.scrape,
    'scrape_timeout.s': settings.scrape,
    'evaluation_interval.s': settings.evaluation,
    'alert.expr': ALERT_EXPR,
    'alert.for.s': 0,
    // Overwritten by waitReady with the value the running Prometheus reports.
    'rules.alert.resend-delay': '1m (Prometheus default, not set)',
    'alertmanager.group_by': GROUP_BY.join(','),
    'alertmanager.group_wait.s': settings.groupWait,
    'alertmanager.group_interval.s': settings.groupInterval,
    'alertmanager.repeat_interval.s': settings.repeatInterval,
    'alertmanager.cluster': 'disabled (--cluster.listen-address empty)',
    'webhook.send_resolved': 'false',
  };

  const prometheusUrl = `http://127.0.0.1:${ports.prometheus}`;
  const alertmanagerUrl = `http://127.0.0.1:${ports.alertmanager}`;
  let stopped = false;
  // A binary dying mid-run would only show as alerts that never come: say why, once.
  for (const watched of [prometheus, alertmanager]) {
    void watched.exited.then(() => {
      if (!stopped) failure(`${watched.name} exited (${watched.exitCode}) while running`, [watched]);
    });
  }

  return {
    configuration,
    urls: { prometheus: prometheusUrl, alertmanager: alertmanagerUrl },
    pids: { prometheus: prometheus.pid, alertmanager: alertmanager.pid },
    firing: webhook.firing,
    onFiring: webhook.onFiring,
    async waitReady(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      let waitingFor = 'nothing yet';
      for (;;) {
        const exited = current().filter((p) => p.exitCode !== undefined);
        if (exited.length > 0)
          throw failure(`${exited.map((p) => `${p.name} exited (${p.exitCode})`).join(', ')} before ready`);
        waitingFor = await notReadyBecause(prometheusUrl, alertmanagerUrl, options.targets);
        if (waitingFor === '') break;
        if (Date.now() >= deadline) throw failure(`not ready after ${timeoutMs} ms: ${waitingFor}`);
        await delay(READY_POLL_MS);
      }
      const flags = await getJson(`${prometheusUrl}/api/v1/status/flags`);
      const resendDelay = (flags as { data?: Record<string, string> } | undefined)?.data?.[
        'rules.alert.resend-delay'
      ];
      if (resendDelay !== undefined) configuration['rules.alert.resend-delay'] = resendDelay;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.all([prometheus.kill(), alertmanager.kill()]);
      webhook.server.closeAllConnections();
      await new Promise((done) => webhook.server.close(done));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** What the readiness check still waits for, in words; '' when ready. */
async function notReadyBecause(
  prometheusUrl: string,
  alertmanagerUrl: string,
  targets: readonly { node: string }[],
): Promise<string> {
  if (!(await isOk(`${alertmanagerUrl}/-/ready`))) return 'alertmanager /-/ready';
  if (!(await isOk(`${prometheusUrl}/-/ready`))) return 'prometheus /-/ready';
  const managers = (await getJson(`${prometheusUrl}/api/v1/alertmanagers`)) as
    { data?: { activeAlertmanagers?: unknown[] } } | undefined;
  if ((managers?.data?.activeAlertmanagers?.length ?? 0) === 0) return 'prometheus to discover alertmanager';
  const body = (await getJson(`${prometheusUrl}/api/v1/targets?state=active`)) as
    { data?: { activeTargets?: { labels?: Record<string, string>; health?: string }[] } } | undefined;
  const up = new Set(
    (body?.data?.activeTargets ?? [])
      .filter((t) => t.health === 'up' && t.labels?.job === JOB_NAME)
      .map((t) => t.labels?.instance),
  );
  const down = targets.filter(({ node }) => !up.has(node)).map(({ node }) => node);
  return down.length === 0 ? '' : `${down.length} of ${targets.length} targets up (first: ${down[0]})`;
}

/** A spawned binary: its exit and its stderr's last lines. */
interface Watched {
  name: string;
  pid: number;
  tail: string[];
  exitCode: number | string | undefined;
  exited: Promise<void>;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited. */
  kill(): Promise<void>;
}

function watch(name: string, child: ChildProcess): Watched {
  const watched: Watched = {
    name,
    pid: child.pid ?? 0,
    tail: [],
    exitCode: undefined,
    exited: new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        watched.exitCode = code ?? signal ?? 'unknown';
        resolve();
      });
      child.once('error', (error) => {
        watched.tail.push(String(error));
        watched.exitCode ??= 'spawn error';
        resolve();
      });
    }),
    async kill() {
      if (watched.exitCode !== undefined) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await watched.exited;
      clearTimeout(timer);
    },
  };
  createInterface({ input: child.stderr! }).on('line', (line) => {
    watched.tail.push(line);
    if (watched.tail.length > STDERR_TAIL_LINES) watched.tail.shift();
  });
  return watched;
}

/** True once `port` answers HTTP (any status), false if the process exits first. */
async function untilListening(watched: Watched, port: number): Promise<boolean> {
  const deadline = Date.now() + 30_000;
  while (watched.exitCode === undefined && Date.now() < deadline) {
    try {
      await fetch(`http://127.0.0.1:${port}/-/ready`, { signal: AbortSignal.timeout(1000) });
      return true;
    } catch {
      await delay(100);
    }
  }
  return false;
}

/** The webhook receiver: records each firing alert once per (node, id, startsAt). */
async function startWebhook(): Promise<{
  server: Server;
  port: number;
  firing: FiringAlert[];
  onFiring(listener: (alert: FiringAlert) => void): () => void;
}> {
  const firing: FiringAlert[] = [];
  const seen = new Set<string>();
  const listeners = new Set<(alert: FiringAlert) => void>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      // The moment the notification arrived, before parsing: that is what is measured.
      const receivedAt = Date.now();
      response.writeHead(200).end();
      let payload: { alerts?: { status?: string; labels?: Record<string, string>; startsAt?: string }[] };
      try {
        payload = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof payload;
      } catch {
        return;
      }
      for (const alert of payload.alerts ?? []) {
        const node = alert.labels?.node;
        const device = alert.labels?.id;
        if (alert.status !== 'firing' || node === undefined || device === undefined) continue;
        const startsAt = alert.startsAt ?? '';
        // A repeat or resend of one episode carries its startsAt; a new fault, a new one.
        const key = JSON.stringify([node, device, startsAt]);
        if (seen.has(key)) continue;
        seen.add(key);
        const entry = { node, device, receivedAt, startsAt };
        firing.push(entry);
        for (const listener of [...listeners]) listener(entry);
      }
    });
  });
  const port = await listenOnLoopback(server, 'webhook');
  return {
    server,
    port,
    firing,
    onFiring(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** `count` distinct free loopback ports: all held open until every one is chosen. */
async function freeLoopbackPorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  const ports = await Promise.all(servers.map((server) => listenOnLoopback(server, 'free port')));
  await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
  return ports;
}

/** The first line of `binary --version` (kingpin prints it to stdout or stderr). */
async function binaryVersion(binary: string): Promise<string> {
  const { stdout, stderr } = await run(binary, ['--version']);
  return `${stdout}\n${stderr}`.trim().split('\n')[0] ?? 'unknown';
}

async function isOk(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

async function getJson(url: string): Promise<unknown> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return response.ok ? await response.json() : undefined;
  } catch {
    return undefined;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

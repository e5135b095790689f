/**
 * Real Prometheus for the integration tests (the Debian package `prometheus`, which .ci/run
 * installs): a config and a rules file written to a temp dir, one process on a free loopback
 * port, its HTTP API. Tests skip, saying so, where the binary is missing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freeLoopbackPorts } from '../../hack/control-plane/state.js';

export const PROMETHEUS_BINARY = process.env.NPU_FAULT_PROMETHEUS ?? '/usr/bin/prometheus';

/** Why Prometheus cannot run here, or null when it can. */
export function prometheusMissing(): string | null {
  try {
    accessSync(PROMETHEUS_BINARY, constants.X_OK);
    return null;
  } catch {
    return `${PROMETHEUS_BINARY} is not installed (Debian package prometheus)`;
  }
}

/** One alert as `/api/v1/alerts` lists it. */
export interface PrometheusAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

export interface RunningPrometheus {
  url: string;
  /** Every pending or firing alert. */
  alerts(): Promise<PrometheusAlert[]>;
  /** An instant query's result (a vector's samples). */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** The scrape targets' health, by job. */
  targets(): Promise<{ job: string; health: string; lastError: string }[]>;
  stop(): Promise<void>;
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return ((await response.json()) as { data: T }).data;
}

/** Starts Prometheus with `config` (prometheus.yml, rule_files filled in) and `rules`. */
export async function startPrometheus(
  config: Record<string, unknown>,
  rules: unknown,
): Promise<RunningPrometheus> {
  const dir = await mkdtemp(join(tmpdir(), 'npu-fault-prometheus-'));
  await writeFile(join(dir, 'rules.yml'), stringify(rules));
  await writeFile(
    join(dir, 'prometheus.yml'),
    stringify({ ...config, rule_files: [join(dir, 'rules.yml')] }),
  );
  let child: ChildProcess | undefined;
  let url = '';
  const tail: string[] = [];
  for (let attempt = 1; attempt <= 3 && url === ''; attempt++) {
    const { port } = await freeLoopbackPorts(['port']);
    child = spawn(
      PROMETHEUS_BINARY,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, `data-${attempt}`)}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      tail.push(...text.split('\n').filter(Boolean));
      tail.splice(0, Math.max(0, tail.length - 20));
    });
    let gone = false;
    child.once('exit', () => (gone = true));
    const candidate = `http://127.0.0.1:${port}`;
    // Polls its readiness endpoint (Prometheus says nothing else when it is ready).
    const outcome = await (async (): Promise<'ready' | 'exited'> => {
      for (;;) {
        if (gone) return 'exited';
        const ok = await fetch(`${candidate}/-/ready`).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) return 'ready';
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    if (outcome === 'ready') url = candidate;
    else if (!/address already in use/i.test(tail.join('\n')))
      throw new Error(`prometheus exited while starting:\n${tail.join('\n')}`);
  }
  if (url === '') throw new Error(`prometheus found no free port:\n${tail.join('\n')}`);
  const running = child as ChildProcess;
  return {
    url,
    alerts: async () => (await getJson<{ alerts: PrometheusAlert[] }>(`${url}/api/v1/alerts`)).alerts,
    query: async (expr) =>
      (
        await getJson<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
          `${url}/api/v1/query?query=${encodeURIComponent(expr)}`,
        )
      ).result,
    targets: async () =>
      (
        await getJson<{
          activeTargets: { labels: { job: string }; health: string; lastError: string }[];
        }>(`${url}/api/v1/targets`)
      ).activeTargets.map((t) => ({ job: t.labels.job, health: t.health, lastError: t.lastError })),
    async stop() {
      if (running.exitCode === null && running.signalCode === null) {
        const gone = new Promise((resolve) => running.once('exit', resolve));
        running.kill('SIGTERM');
        await gone;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

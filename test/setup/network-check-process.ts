/**
 * `node --import tsx test/setup/network-check-process.ts '<config JSON>'`: the agent's network
 * check as a process of its own, for tests that run it inside a network namespace
 * (`ip netns exec`), standing in for the agent's check runner: a round every intervalMs on a
 * fixed schedule, each printed on stdout as one JSON line
 * `{"at": <epoch ms>, "problems": [...], "probes": {"gateway/refused": 2, ...}}` (the probe
 * counts are the check's own metric). The API server comes from KUBERNETES_SERVICE_HOST/PORT
 * as in a pod. Ends when stdin closes (its parent is gone) or on SIGTERM; logs go to stderr.
 */
import { createNetworkCheck, networkCheckConfigSchema } from '../../agent/node-checks/network/index.js';
import { createLogger, createRegistry, parseConfigSection, systemClock } from '../../platform/index.js';

const config = parseConfigSection(networkCheckConfigSchema, JSON.parse(process.argv[2] ?? '{}'), 'network');
const registry = createRegistry('agent');
const log = createLogger({ level: 'info', component: 'network-check', destination: process.stderr });
const check = createNetworkCheck(config, { log, registry, env: process.env });
const stop = new AbortController();
process.once('SIGTERM', () => stop.abort());
process.stdin.on('end', () => stop.abort()).on('error', () => stop.abort());
process.stdin.resume();

/** The probe counter's values as `kind/outcome` → count. */
async function probes(): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric('npu_fault_agent_network_probes_total');
  const counts: Record<string, number> = {};
  for (const { labels, value } of (await metric?.get())?.values ?? [])
    if (value > 0) counts[`${String(labels.target)}/${String(labels.outcome)}`] = value;
  return counts;
}

const start = systemClock.monotonic();
for (let round = 0; !stop.signal.aborted; round++) {
  const problems = await check.run(systemClock.now(), stop.signal);
  if (stop.signal.aborted) break;
  process.stdout.write(`${JSON.stringify({ at: systemClock.now(), problems, probes: await probes() })}\n`);
  // Fixed rate: the next round at its slot, however long this one took.
  const next = start + (round + 1) * config.intervalMs;
  await systemClock.sleep(next - systemClock.monotonic(), stop.signal).catch(() => undefined);
}
process.exit(0);

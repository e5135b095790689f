/**
 * `npu-fault demo --pipeline`: the real pipeline on a real control plane. Simulated agents
 * (one per kwok node, each under its own pod-bound token) push through an ingest function
 * into two controller replicas; the scripted faults go in through the agents' fault API
 * (POST /v1/sim/faults), the leading replica is SIGKILLed mid-scenario, and the status is
 * watched where users read it: the ConfigMap through an API watch, and each node's
 * /v1/fault/stream. Ends with a report of when each fault was injected and seen, and a
 * check of every device's final status (exit 1 when one is wrong). Every process and object
 * goes away at the end, on an error and on Ctrl-C.
 */
import type { PublishedDocument } from '../../contracts/index.js';
import type { SimNode } from '../../core/sim/index.js';
import { startStandInInferenceServer, type StandInInferenceServer } from '../../agent/canary/testing.js';
import { EXIT_DATA, type CliIO } from '../../cli/io.js';
import { followFaultStream, watchStatus, type SeenDocument, type SeenEntry } from '../observe.js';
import {
  checkFinal,
  demoFleet,
  documentShows,
  entryShows,
  expectations,
  planFaults,
  type Expectation,
  type ScenarioSize,
} from './scenario.js';
import {
  deployPipeline,
  startDemoCluster,
  faultHeaders,
  type DemoAgent,
  type DemoCluster,
  type DemoStack,
} from '../pipeline-stack.js';
import { LiveView, painter, reportTable, since, type Paint, type ReportRow } from './view.js';

/** The pipeline demo's options (stack/demo/command.ts parses them). */
export interface PipelineOptions {
  existingCluster: boolean;
  scenario: ScenarioSize;
  env: Readonly<Record<string, string | undefined>>;
}

/** How long a step may take before the demo gives up on it (a busy 2-core machine is slow). */
const STEP_TIMEOUT_MS = 90_000;
const STARTUP_TIMEOUT_MS = 180_000;
/** After the ConfigMap showed everything, how long the SSE consumers get to catch up. */
const SSE_GRACE_MS = 10_000;

interface Row extends ReportRow {
  expectation: Expectation | { status: string; reason: string | null };
  matchDoc: (doc: PublishedDocument) => boolean;
  matchSse: (seen: SeenEntry) => boolean;
}

/** Resolves waiters when what they wait for was seen. */
class Conditions {
  #waiters: { test: () => boolean; resolve: () => void }[] = [];

  /** Re-tests every waiter (after each observation). */
  poke(): void {
    for (const w of [...this.#waiters]) {
      if (w.test()) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }

  until(test: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        test,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  /** Like `until`, but resolves false instead of failing at the deadline. */
  async within(test: () => boolean, timeoutMs: number): Promise<boolean> {
    return this.until(test, timeoutMs, '').then(
      () => true,
      () => false,
    );
  }
}

async function inject(agent: DemoAgent, fault: Record<string, unknown>): Promise<{ id: number }> {
  const response = await fetch(`${agent.url}/v1/sim/faults`, {
    method: 'POST',
    headers: faultHeaders(agent),
    body: JSON.stringify(fault),
  });
  if (response.status !== 201)
    throw new Error(`fault API of ${agent.node.name}: ${response.status} ${await response.text()}`);
  return (await response.json()) as { id: number };
}

async function endFault(agent: DemoAgent, id: number): Promise<void> {
  const response = await fetch(`${agent.url}/v1/sim/faults/${id}`, {
    method: 'DELETE',
    headers: faultHeaders(agent),
  });
  if (!response.ok) throw new Error(`fault API of ${agent.node.name}: ${response.status} ending fault ${id}`);
}

/** Runs the pipeline demo; returns the exit code. */
export async function runPipelineDemo(options: PipelineOptions, io: CliIO): Promise<number> {
  const paint = painter(io.isTTY && !options.env.NO_COLOR);
  const fleet = demoFleet(options.scenario);
  const plan = planFaults(fleet);
  const expected = expectations(plan);
  let start = Date.now();
  const view = new LiveView(fleet, io.stdout, io.isTTY, paint, () => start);
  const say = (line: string): void => view.log(line);

  io.stdout(
    `${paint('1', `npu-fault pipeline demo: ${fleet.length} simulated nodes through a real function into two real controllers`)}\n` +
      (options.existingCluster
        ? `  cluster: $KUBECONFIG (${options.env.KUBECONFIG ?? 'unset'})\n`
        : '  cluster: a local control plane (etcd, kube-apiserver, kube-controller-manager, kwok); the first run builds it from Go modules, about twelve minutes on two cores\n') +
      '  detection rules compressed for the demo: a warning degrades after 6 s (default 60) and fails 8 s later (default 180)\n\n',
  );

  let cluster: DemoCluster | undefined;
  let stack: DemoStack | undefined;
  let inference: StandInInferenceServer | undefined;
  const stops: { stop(): void }[] = [];
  let cleaned: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaned ??= (async () => {
      for (const s of stops) s.stop();
      await stack?.dispose().catch(() => undefined);
      await inference?.close().catch(() => undefined);
      await cluster?.stop().catch(() => undefined);
    })());
  const onExit = (): void => {
    stack?.killSync();
    cluster?.stopSync();
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    io.stderr(`\n${signal}: stopping the demo's processes and deleting its objects…\n`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    cluster = await startDemoCluster({
      existing: options.existingCluster,
      env: options.env,
      log: (line) => io.stdout(`  ${line}\n`),
    });
    start = Date.now();
    // The serving node's inference server: a stand-in that answers the canary's question,
    // right until the scenario makes it wrong.
    inference = await startStandInInferenceServer();
    const canaryUrl = inference.url;
    stack = await deployPipeline({
      admin: cluster.admin,
      fleet,
      log: say,
      tuning: {
        agentArgs: (node) =>
          node.name === plan.canary.node
            ? [`--canary-url=${canaryUrl}`, '--canary-interval-seconds=1', '--canary-timeout-ms=900']
            : [],
      },
    });
    return await play({
      stack,
      inference,
      cluster,
      fleet,
      plan,
      expected,
      view,
      paint,
      io,
      stops,
      setStart: (t) => (start = t),
    });
  } catch (error) {
    io.stderr(`npu-fault demo --pipeline: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_DATA;
  } finally {
    view.close();
    await cleanup();
    process.removeListener('exit', onExit);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

async function play(ctx: {
  stack: DemoStack;
  inference: StandInInferenceServer;
  cluster: DemoCluster;
  fleet: readonly SimNode[];
  plan: ReturnType<typeof planFaults>;
  expected: Record<string, Expectation>;
  view: LiveView;
  paint: Paint;
  io: CliIO;
  stops: { stop(): void }[];
  setStart: (t: number) => void;
}): Promise<number> {
  const { stack, cluster, fleet, plan, expected, view, paint, io, stops } = ctx;
  const say = (line: string): void => view.log(line);
  const conditions = new Conditions();
  const docs: SeenDocument[] = [];
  const agentOf = (node: string): DemoAgent => {
    const agent = stack.agents.find((a) => a.node.name === node);
    if (!agent) throw new Error(`no agent for ${node}`);
    return agent;
  };
  const live = new Set<string>();
  const byKey = new Map<string, Row>(
    Object.entries(expected).map(([key, e]) => [
      key,
      {
        text: e.text,
        expectation: e,
        matchDoc: (doc) => documentShows(doc, e),
        matchSse: (seen) => seen.node === e.node && entryShows(seen.entry, e),
      },
    ]),
  );
  // The report's rows in injection order; the leader kill joins them when it happens.
  const rows: Row[] = [...byKey.values()];
  const row = (key: string): Row => byKey.get(key)!;
  // A silent agent pushes nothing, so it never learns it was published unknown: its own
  // stream stays as it was through the silence and after it (the ConfigMap is the witness).
  row('silence').sseNote = 'n/a';
  row('silenceEnded').sseNote = 'n/a';

  const onDocument = (seen: SeenDocument): void => {
    docs.push(seen);
    view.document(seen.document);
    for (const r of rows) {
      if (r.injectedAt === undefined || r.watchAt !== undefined || seen.at < r.injectedAt) continue;
      if (!r.matchDoc(seen.document)) continue;
      r.watchAt = seen.at;
      r.configMapAt = Date.parse(seen.document.timestamp);
    }
    conditions.poke();
  };
  const onEntry = (seen: SeenEntry): void => {
    if (seen.leader !== null) live.add(seen.node);
    for (const r of rows) {
      if (r.injectedAt === undefined || r.sseAt !== undefined || seen.at < r.injectedAt) continue;
      if (r.matchSse(seen)) r.sseAt = seen.at;
    }
    conditions.poke();
  };
  stops.push(watchStatus(cluster.admin, stack.namespace, onDocument));
  for (const agent of stack.agents)
    stops.push(followFaultStream(agent.node.name, `${agent.url}/v1/fault/stream`, onEntry));

  await conditions.until(
    () => live.size === fleet.length && docs.at(-1)?.document.unobserved.length === 0,
    STARTUP_TIMEOUT_MS,
    'every agent to be live (its stream naming a leader) and observed in the ConfigMap',
  );
  say(`all ${fleet.length} agents live; the ConfigMap is published; scenario starts`);
  const t0 = Date.now();
  ctx.setStart(t0);
  const mark = (key: string): void => void (row(key).injectedAt = Date.now());
  const seenInConfigMap =
    (key: string): (() => boolean) =>
    () =>
      row(key).watchAt !== undefined;

  // The serving node starts answering wrong: two failed canary requests in a row, then the
  // warning's 6 s, degrade its devices (the demo's rules).
  say(paint('36', `▸ ${plan.canary.node}: its inference server starts answering wrong`));
  ctx.inference.behave('wrong');
  mark('canaryDegraded');
  // Heat and an ECC storm build up over seconds; a link down fails at once.
  say(paint('36', `▸ ${plan.heat.node} ${plan.heat.device}: a fan fails, it climbs to 95 °C`));
  await inject(agentOf(plan.heat.node), { kind: 'hot', device: plan.heat.device, celsius: 95 });
  mark('heatDegraded');
  mark('heatFailed');
  say(paint('36', `▸ ${plan.ecc.node} ${plan.ecc.device}: correctable ECC errors start (a storm)`));
  const storm = await inject(agentOf(plan.ecc.node), { kind: 'ecc-storm', device: plan.ecc.device });
  mark('eccDegraded');
  say(paint('36', `▸ ${plan.link.node} ${plan.link.device}: the card's PCIe link drops`));
  await inject(agentOf(plan.link.node), { kind: 'link-down', device: plan.link.device });
  mark('link');
  await conditions.until(seenInConfigMap('link'), STEP_TIMEOUT_MS, 'the link down in the ConfigMap');

  // Around the cards: a NIC that matters goes down, the node is unusable whatever its cards say.
  say(paint('36', `▸ ${plan.nic.node}: a NIC goes down (the agent's links check)`));
  const nic = await inject(agentOf(plan.nic.node), { kind: 'node-problem', reason: 'nic-link-down' });
  mark('nicDown');
  await conditions.until(seenInConfigMap('nicDown'), STEP_TIMEOUT_MS, 'the NIC down in the ConfigMap');
  say(paint('36', `▸ ${plan.nic.node}: the NIC is back`));
  await endFault(agentOf(plan.nic.node), nic.id);
  mark('nicUp');

  // The leader dies mid-scenario; a fault injected now must be published by its successor.
  const leaderName = docs.at(-1)!.document.publisher.identity;
  const leader = stack.controllers.find((c) => c.identity === leaderName);
  const killRow: Row = {
    text: `leader ${leaderName} SIGKILLed`,
    expectation: { status: 'another leader publishes', reason: null },
    matchDoc: (doc) => doc.publisher.identity !== leaderName,
    matchSse: (seen) => seen.leader !== null && seen.leader !== leaderName,
  };
  rows.splice(rows.indexOf(row('vanish')), 0, killRow);
  say(paint('36', `▸ SIGKILL the leading replica ${leaderName}`));
  leader?.child.kill('SIGKILL');
  killRow.injectedAt = Date.now();
  say(paint('36', `▸ ${plan.vanish.node} ${plan.vanish.device}: the card vanishes from the tool's output`));
  await inject(agentOf(plan.vanish.node), { kind: 'vanish', device: plan.vanish.device });
  mark('vanish');
  await conditions.until(
    () => killRow.watchAt !== undefined,
    STEP_TIMEOUT_MS,
    'another replica to take over',
  );

  say(paint('36', `▸ ${plan.silent.node}: its agent falls silent`));
  const silence = await inject(agentOf(plan.silent.node), { kind: 'silence' });
  mark('silence');
  await conditions.until(seenInConfigMap('silence'), STEP_TIMEOUT_MS, 'the silent agent published unknown');
  say(paint('36', `▸ ${plan.silent.node}: the agent is back`));
  await endFault(agentOf(plan.silent.node), silence.id);
  mark('silenceEnded');

  await conditions.until(
    seenInConfigMap('eccDegraded'),
    STEP_TIMEOUT_MS,
    'the ECC storm degrading its device',
  );
  await conditions.until(
    seenInConfigMap('canaryDegraded'),
    STEP_TIMEOUT_MS,
    'the wrong answers degrading the serving node',
  );
  say(paint('36', `▸ ${plan.canary.node}: its inference server answers right again`));
  ctx.inference.behave('right');
  mark('canaryRecovered');
  say(paint('36', `▸ ${plan.ecc.node} ${plan.ecc.device}: an uncorrectable ECC error; the storm stops`));
  await inject(agentOf(plan.ecc.node), { kind: 'uncorrectable', device: plan.ecc.device });
  mark('eccFailed');
  await endFault(agentOf(plan.ecc.node), storm.id);

  const everySeen = (): boolean => rows.every((r) => r.watchAt !== undefined);
  const missing = (): string =>
    rows
      .filter((r) => r.watchAt === undefined)
      .map((r) => r.text)
      .join(', ');
  await conditions
    .until(everySeen, STEP_TIMEOUT_MS, 'every fault in the ConfigMap')
    .catch((error: unknown) => {
      say(paint('1;31', `${error instanceof Error ? error.message : String(error)}: ${missing()}`));
    });
  // The silent agent's own stream cannot see its silence; the rest get a moment to catch up.
  await conditions.within(
    () => rows.every((r) => r.sseAt !== undefined || r === row('silence')),
    SSE_GRACE_MS,
  );
  view.close();

  const last = docs.at(-1)?.document;
  io.stdout(
    `\n${paint('1', 'Report')}  (INJECTED: after the scenario start; the others after the injection. CONFIGMAP: the\n` +
      'published document’s timestamp; API WATCH: when a watch on the ConfigMap received it; SSE: when the node’s\n' +
      `/v1/fault/stream delivered it; n/a: a silent agent is not told it was published unknown)\n`,
  );
  io.stdout(reportTable(rows, t0, paint));
  const lost = killRow.watchAt === undefined ? 'never' : since(killRow.injectedAt!, killRow.watchAt);
  io.stdout(
    `\n  takeover: ${last?.publisher.identity ?? '?'} published ${lost} after ${leaderName} was killed\n`,
  );
  const problems = checkFinal(fleet, plan, last);
  for (const r of rows)
    if (r.watchAt === undefined)
      problems.push(`${r.text}: never reached ${r.expectation.status} in the ConfigMap`);
  if (problems.length === 0) {
    const devices = fleet.reduce((n, node) => n + node.devices.length, 0);
    io.stdout(
      `\n${paint('32', `Scenario check: all ${devices} devices ended as expected; every fault was seen.`)}\n`,
    );
    return 0;
  }
  io.stdout(
    `\n${paint('1;31', `Scenario check: ${problems.length} problem(s):`)}\n${problems.map((p) => `  - ${p}\n`).join('')}`,
  );
  return EXIT_DATA;
}

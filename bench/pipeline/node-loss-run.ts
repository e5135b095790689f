/**
 * The node-loss baseline: a node dies (its kubelet's heartbeats and its agent's pushes stop at
 * the same moment) and two clocks run: when the status ConfigMap shows the node's agent
 * `stale` (agent silence, `agent_unreachable_s`), and when Kubernetes marks the Node's Ready
 * condition Unknown (kube-controller-manager's node-lifecycle controller after
 * --node-monitor-grace-period). Needs a control plane with the node-lifecycle controller on
 * (hack/control-plane.ts `nodeLifecycle`) and no other heartbeat-less Nodes: every Node of
 * the run has a kubelet stand-in (node-loss.ts).
 */
import * as k8s from '@kubernetes/client-node';
import { deployPipeline, type DemoStack } from '../../stack/index.js';
import { SyntheticFleet } from './fleet.js';
import { startKubeletStandIn, waitForNodeNotReady, type KubeletStandIn } from './node-loss.js';
import type { BaselineResult } from './result.js';
import { BENCH_LABEL, cleanupMembers, createMembers } from './run.js';
import { summarise } from './summary.js';
import { StatusWatchers } from './watchers.js';

/** What the node-loss run needs. */
export interface NodeLossOptions {
  admin: k8s.KubeConfig;
  /** Nodes in the fleet (default 12). */
  nodes?: number;
  /** How many of them die, one after another (default 2: under the 20 % ingest-outage line). */
  lost?: number;
  /** The grace period the plane runs with, for the report (seconds). */
  gracePeriodSeconds: number;
  entry?: string;
  env?: Record<string, string>;
  /** The function's node flags (its Deployment's command). */
  functionNodeArgs?: readonly string[];
  log: (line: string) => void;
}

/** Runs the node-loss comparison; the Ready condition is the baseline, agent silence ours. */
export async function runNodeLoss(options: NodeLossOptions): Promise<BaselineResult> {
  const { admin, log } = options;
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const count = options.nodes ?? 12;
  const lostCount = Math.min(options.lost ?? 2, count - 1);
  const label = { [BENCH_LABEL]: `node-loss-${Date.now()}` };
  let stack: DemoStack | undefined;
  let fleet: SyntheticFleet | undefined;
  let watchers: StatusWatchers | undefined;
  const standIns: KubeletStandIn[] = [];
  try {
    stack = await deployPipeline({
      admin,
      fleet: [],
      log,
      tuning: {
        rules: null,
        namespacePrefix: 'npu-fault-bench-node-loss',
        label: BENCH_LABEL,
        ...(options.entry ? { entry: options.entry } : {}),
        ...(options.env ? { env: options.env } : {}),
        ...(options.functionNodeArgs ? { functionNodeArgs: options.functionNodeArgs } : {}),
      },
    });
    const members = await createMembers(core, stack.namespace, count, label);
    for (const m of members) standIns.push(await startKubeletStandIn(admin, m.node));
    fleet = new SyntheticFleet({
      functionUrl: `http://127.0.0.1:${await stack.function.port('http')}`,
      members,
      faultIntervalMs: 0,
      faultSeconds: 1,
      glitchRate: 0,
      seed: 1,
    });
    const staleAt = new Map<string, number>();
    let everyNodeOk = false;
    watchers = new StatusWatchers(admin, stack.namespace);
    watchers.startPrimary(({ at, document }) => {
      everyNodeOk = members.every((m) => document.nodes[m.node]?.agent !== 'stale');
      for (const [node, entry] of Object.entries(document.nodes))
        if (entry.agent === 'stale' && !staleAt.has(node)) staleAt.set(node, at);
    });
    fleet.start();
    // Every agent pushing and published ok, every Node Ready, before a node dies.
    const deadline = Date.now() + 60_000;
    while (!everyNodeOk || staleAt.size > 0) {
      if (Date.now() > deadline) throw new Error('node loss: the fleet never settled (every agent ok)');
      staleAt.clear();
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const deaths: { node: string; at: number; lastHeartbeatAt: number }[] = [];
    const notReady: Promise<{ node: string; at: number }>[] = [];
    for (const standIn of standIns.slice(0, lostCount)) {
      const at = standIn.stop();
      fleet.silence(standIn.node);
      deaths.push({ node: standIn.node, at, lastHeartbeatAt: standIn.lastHeartbeatAt() });
      log(`[bench] node loss: ${standIn.node} died`);
      notReady.push(
        waitForNodeNotReady(admin, standIn.node, 180_000).then((r) => ({ node: standIn.node, at: r.at })),
      );
      // Deaths at different points of the heartbeat cycle.
      await new Promise((resolve) => setTimeout(resolve, 3700));
    }
    const marked = await Promise.all(notReady);
    const silence = deaths.map((d) => (staleAt.get(d.node) ?? Number.NaN) - d.at);
    const ready = deaths.map((d) => marked.find((m) => m.node === d.node)!.at - d.at);
    const silenceSummary = summarise(silence);
    return {
      name: 'node-ready-condition',
      notComparable: `node loss, not a device fault: our agent-silence detection (p50 ${silenceSummary.p50 ?? 'never'} ms) is the figure to set against it`,
      configuration: {
        nodes: count,
        'nodes lost': lostCount,
        'node-monitor-grace-period (s)': options.gracePeriodSeconds,
        'kubelet lease duration / renew (s)': '40 / 10 (kubelet defaults)',
        'agent_unreachable_s (ours)': 5,
      },
      latency: summarise(ready),
      samples: ready,
      injected: lostCount,
      seen: ready.filter(Number.isFinite).length,
      missed: ready.filter((v) => !Number.isFinite(v)).length,
      findings: {
        'agent silence → ConfigMap shows the agent stale, p50 (ms)': silenceSummary.p50 ?? 'never',
        'agent silence → ConfigMap shows the agent stale, max (ms)': silenceSummary.max ?? 'never',
        'node death → Ready Unknown, p50 (ms)': summarise(ready).p50 ?? 'never',
        then: 'taint node.kubernetes.io/unreachable; pods evicted after tolerationSeconds 300 (DefaultTolerationSeconds)',
      },
    };
  } finally {
    for (const s of standIns) s.stop();
    watchers?.stop();
    await fleet?.stop().catch(() => undefined);
    await cleanupMembers(core, label, stack?.namespace).catch(() => undefined);
    await stack?.dispose().catch(() => undefined);
  }
}

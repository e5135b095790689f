/**
 * The controller end to end on the real control plane: two replicas as real processes
 * (`npu-fault controller`), each under its own token of the controller's ServiceAccount with
 * exactly the shipped RBAC (test/setup/controller-rbac.ts), fed over HTTP as the ingest
 * function feeds them (every replica, with the function's ServiceAccount token).
 *
 * Proven here: a fault posted to the observation endpoint reaches the ConfigMap, the Node
 * condition, an Event and /metrics; the leader is killed (SIGKILL) mid-fault and the other
 * replica takes over within lease duration + 2 s with the failure still published; the
 * observations the survivor recorded, replayed through `npu-fault replay`, give exactly the
 * transitions the ConfigMap published (none lost, none duplicated); a latched failure
 * survives a restart of every replica (even with the ConfigMap deleted) and clears by
 * annotation; the rules ConfigMap hot-reloads and an invalid edit is refused with an Event;
 * accelerator nodes are found by capacity; a mirror namespace gets its copy.
 *
 * Every wait is on an observable event (a watch, a log line) with a deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  allowMirrorsIn,
  controllerAccess,
  type ControllerAccess,
  functionCallerToken,
} from './setup/controller-rbac.js';
import { TEST_LEASE, startTestReplica, type ControllerProcess } from './setup/controller-process.js';
import { createTestNamespace, watchUntil, type TestNamespace } from './setup/cluster.js';
import { Fleet, Poster, StatusFollower, statusIn } from './setup/fleet.js';
import { PROMTOOL_BUILD_TIMEOUT_MS, checkMetrics } from './setup/promtool.js';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../bin/npu-fault.js', import.meta.url));
const LEASE = TEST_LEASE;
const STATUS = 'npu-fault-status-v3';

describe('the controller on the real control plane, under its shipped RBAC', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  let functionToken: string;
  let follower: StatusFollower;
  let nodeNames: string[];
  const dir = mkdtempSync(join(tmpdir(), 'npu-fault-controller-'));
  const replicas: ControllerProcess[] = [];
  const urls = new Map<string, string>();
  const measured: Record<string, string> = {};
  let poster: Poster | undefined;
  let fleet: Fleet;
  let leaderExposition = '';

  async function startReplica(identity: string): Promise<ControllerProcess> {
    const replica = await startTestReplica({
      identity,
      namespace: ns.name,
      access,
      args: [
        `--record-observations=${join(dir, `${identity}.jsonl`)}`,
        '--nodes-status-resync-seconds=5',
        '--mirrors-interval-ms=1000',
      ],
    });
    replicas.push(replica);
    urls.set(identity, `http://127.0.0.1:${await replica.port('observations')}`);
    await replica.waitForLog((l) => l.msg === 'seeded', 60_000, 'seeded');
    return replica;
  }

  const live = (): { identity: string; url: string }[] =>
    replicas
      .filter((r) => r.child.exitCode === null && r.child.signalCode === null)
      .map((r) => ({ identity: r.identity, url: urls.get(r.identity) ?? '' }));

  async function leaderOf(candidates: ControllerProcess[]): Promise<ControllerProcess> {
    const line = await Promise.any(
      candidates.map((r) =>
        r.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading').then(() => r),
      ),
    );
    return line;
  }

  async function metrics(replica: ControllerProcess): Promise<string> {
    const port = await replica.port('metrics');
    return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  }

  beforeAll(async () => {
    ns = await createTestNamespace('controller');
    access = await controllerAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    functionToken = await functionCallerToken(ns);
    nodeNames = ['a', 'b', 'c'].map((x) => `${ns.name}-${x}`);
    const ready = [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test node' }];
    for (const name of nodeNames) {
      await core.createNode({
        body: {
          metadata: { name },
          status: { capacity: { 'huawei.com/Ascend910': '8' }, conditions: ready },
        },
      });
    }
    await core.createNode({
      body: {
        metadata: { name: `${ns.name}-gpu` },
        status: { capacity: { 'nvidia.com/gpu': '8' }, conditions: ready },
      },
    });
    await core.createNode({
      body: { metadata: { name: `${ns.name}-plain` }, status: { capacity: { cpu: '8' } } },
    });
    follower = new StatusFollower(ns.admin, ns.name);
    follower.start();
    fleet = new Fleet(nodeNames, 'boot-1');
  });

  afterAll(async () => {
    poster?.stop();
    follower?.stop();
    await Promise.all(replicas.map((r) => r.stop('SIGKILL')));
    for (const name of [...(nodeNames ?? []), `${ns?.name}-gpu`, `${ns?.name}-plain`]) {
      await core?.deleteNode({ name }).catch(() => undefined);
    }
    await access?.dispose();
    await ns?.dispose();
    if (Object.keys(measured).length > 0)
      console.log(`controller end to end:\n${JSON.stringify(measured, null, 2)}`);
  });

  it('publishes a fault in the ConfigMap, the Node condition, an Event and /metrics; survives a leader kill; replays one for one', async () => {
    const [one, two] = [await startReplica('replica-1'), await startReplica('replica-2')];
    const leader = await leaderOf([one!, two!]);
    const standby = leader === one ? two! : one!;
    poster = new Poster(fleet, functionToken, live);
    poster.start();
    const [a, b] = nodeNames as [string, string];
    await follower.waitFor(
      (d) => nodeNames.every((n) => !d.unobserved.includes(n)) && d.cluster_summary.total >= 24,
      30_000,
      'every node observed',
    );

    // Accelerator nodes by capacity: the GPU node is known and unobserved, the plain one is not known.
    const baseline = follower.seen.at(-1)!.document;
    expect(baseline.unobserved).toContain(`${ns.name}-gpu`);
    expect(baseline.unobserved).not.toContain(`${ns.name}-plain`);
    expect(baseline.publisher.identity).toBe(leader.identity);

    // A PCIe link goes down on a/npu2.
    const injected = Date.now();
    fleet.faults.set(`${a}/npu2`, { link: 'down', power: 120 });
    const failed = await follower.waitFor(
      (d) => statusIn(d, a, 'npu2') === 'failed',
      15_000,
      'a/npu2 failed',
      injected,
    );
    measured['inject → ConfigMap shows failed (ms, includes up to 1 s until the next agent post)'] = String(
      failed.at - injected,
    );
    expect(failed.document.nodes[a]?.npus.find((d) => d.id === 'npu2')?.reason).toBe('pcie-link-down');
    const node = await watchUntil<k8s.V1Node>(
      ns.admin,
      '/api/v1/nodes',
      (n) => n.status?.conditions?.some((c) => c.type === 'NPUHealthy' && c.status === 'False') ?? false,
      { fieldSelector: `metadata.name=${a}`, timeoutMs: 15_000, what: 'NPUHealthy False on a' },
    );
    expect(node.status?.conditions?.find((c) => c.type === 'NPUHealthy')).toMatchObject({
      reason: 'DeviceFailed',
      message: expect.stringContaining('npu2 (pcie-link-down)') as unknown as string,
    });
    await watchUntil<k8s.CoreV1Event>(
      ns.admin,
      '/api/v1/namespaces/default/events',
      (e) => e.reason === 'DeviceFailed' && (e.message ?? '').includes('npu2'),
      { fieldSelector: `involvedObject.name=${a}`, timeoutMs: 15_000, what: 'a DeviceFailed Event on a' },
    );
    const exposition = await metrics(leader);
    leaderExposition = exposition;
    expect(exposition).toMatch(/npu_fault_controller_devices\{status="failed",family="910B"\} 1\b/);
    expect(exposition).toMatch(/npu_fault_controller_publish_latency_seconds_count\{kind="failed"\} [1-9]/);
    expect(exposition).toMatch(/npu_fault_controller_leader 1\b/);

    // Kill the leader mid-fault: no release, no goodbye.
    const killed = Date.now();
    await leader.stop('SIGKILL');
    const takeover = await follower.waitFor(
      (d) => d.publisher.identity === standby.identity,
      (LEASE.duration + 10) * 1000,
      'the standby publishing',
      killed,
    );
    measured['leader SIGKILL → standby publishes (ms)'] = String(takeover.at - killed);
    expect(takeover.at - killed).toBeLessThanOrEqual((LEASE.duration + 2) * 1000);
    expect(takeover.document.publisher.term).toBeGreaterThan(baseline.publisher.term);
    expect(statusIn(takeover.document, a, 'npu2')).toBe('failed');

    // After the takeover: an uncorrectable ECC error on b/npu5, and a/npu2's link comes back.
    fleet.faults.set(`${b}/npu5`, { sbe: 1, dbe: 1 });
    await follower.waitFor((d) => statusIn(d, b, 'npu5') === 'failed', 15_000, 'b/npu5 failed', killed);
    fleet.faults.delete(`${a}/npu2`);
    const recovered = await follower.waitFor(
      (d) => statusIn(d, a, 'npu2') === 'healthy',
      20_000,
      'a/npu2 healthy',
      killed,
    );
    // Let one more document through so the last change has certainly been published.
    await follower.waitFor((d) => d.timestamp > recovered.document.timestamp, 5_000, 'a later heartbeat');
    poster.stop();

    // Replay what the survivor accepted; it must give exactly the transitions published.
    const journal = join(dir, `${standby.identity}.jsonl`);
    const { stdout } = await run(process.execPath, [BIN, 'replay', journal], { maxBuffer: 64 * 1024 * 1024 });
    const replayed = stdout
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            at: string;
            node: string;
            npu: string;
            from: string;
            to: string;
            reason: string | null;
          },
      )
      .filter((t) => !(t.from === 'unknown' && t.to === 'healthy'))
      .map((t) => `${t.node}/${t.npu} ${t.from}>${t.to} ${t.to === 'healthy' ? '-' : t.at} ${t.reason}`);
    const published: string[] = [];
    const last = new Map<string, { status: string }>();
    for (const { document } of follower.seen) {
      for (const name of nodeNames) {
        for (let npu = 0; npu < 8; npu++) {
          const device = document.nodes[name]?.npus.find((d) => d.id === `npu${npu}`);
          const status = device?.status ?? 'healthy';
          const key = `${name}/npu${npu}`;
          const from = last.get(key)?.status ?? 'healthy';
          if (status === from) continue;
          last.set(key, { status });
          published.push(
            `${key} ${from}>${status} ${status === 'healthy' ? '-' : device?.since} ${device?.reason ?? null}`,
          );
        }
      }
    }
    measured['transitions published'] = String(published.length);
    expect(published).toEqual([
      expect.stringMatching(new RegExp(`^${a}/npu2 healthy>failed .* pcie-link-down$`)),
      expect.stringMatching(new RegExp(`^${b}/npu5 healthy>failed .* ecc-uncorrectable$`)),
      `${a}/npu2 failed>healthy - null`,
    ]);
    expect([...replayed].sort()).toEqual([...published].sort());
    // No stack trace anywhere.
    for (const r of replicas) expect(r.other.filter((l) => /^\s+at /.test(l))).toEqual([]);
  });

  it('keeps a latched failure through a restart of every replica (ConfigMap deleted too); a clear set while none runs applies after the next start', async () => {
    const b = nodeNames[1]!;
    await watchUntil<k8s.V1Node>(
      ns.admin,
      '/api/v1/nodes',
      (n) => (n.metadata?.annotations?.['npu-fault.io/latched'] ?? '').includes('"npu5"'),
      { fieldSelector: `metadata.name=${b}`, timeoutMs: 15_000, what: 'latched record on b' },
    );
    await Promise.all(
      live().map(({ identity }) => replicas.find((r) => r.identity === identity)!.stop('SIGTERM')),
    );
    await core.deleteNamespacedConfigMap({ name: STATUS, namespace: ns.name });
    const restarted = Date.now();
    const [three, four] = [await startReplica('replica-3'), await startReplica('replica-4')];
    await leaderOf([three!, four!]);
    poster = new Poster(fleet, functionToken, live);
    poster.start();
    const seen = await follower.waitFor(
      (d) =>
        ['replica-3', 'replica-4'].includes(d.publisher.identity) &&
        nodeNames.every((n) => !d.unobserved.includes(n)),
      30_000,
      'the new replicas publishing',
      restarted,
    );
    expect(statusIn(seen.document, b, 'npu5')).toBe('failed');
    expect(seen.document.nodes[b]?.npus.find((d) => d.id === 'npu5')?.reason).toBe('ecc-uncorrectable');
    // Every later document too, while the agent's counters stay where they are.
    const more = await follower.waitFor(
      (d) => d.timestamp > seen.document.timestamp,
      5_000,
      'a later document',
    );
    expect(statusIn(more.document, b, 'npu5')).toBe('failed');

    // The operator clears it while no controller runs (both replicas down): the clear must
    // apply after the new replicas have seeded, not vanish before.
    poster.stop();
    await Promise.all(
      live().map(({ identity }) => replicas.find((r) => r.identity === identity)!.stop('SIGTERM')),
    );
    await core.patchNode(
      { name: b, body: { metadata: { annotations: { 'npu-fault.io/clear': 'npu5' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const cleared = Date.now();
    const [five, six] = [await startReplica('replica-5'), await startReplica('replica-6')];
    await leaderOf([five!, six!]);
    poster = new Poster(fleet, functionToken, live);
    poster.start();
    const after = await follower.waitFor(
      (d) =>
        ['replica-5', 'replica-6'].includes(d.publisher.identity) && statusIn(d, b, 'npu5') === 'healthy',
      30_000,
      'b/npu5 cleared by the annotation set while no controller ran',
      cleared,
    );
    // No document of the new replicas ever showed it failed again.
    const fromNew = follower.seen.filter(
      (x) => x.at >= cleared && ['replica-5', 'replica-6'].includes(x.document.publisher.identity),
    );
    expect(fromNew.every((x) => statusIn(x.document, b, 'npu5') === 'healthy')).toBe(true);
    expect(after.document.nodes[b]?.npus.find((d) => d.id === 'npu5')).toBeUndefined();
    await watchUntil<k8s.V1Node>(
      ns.admin,
      '/api/v1/nodes',
      (n) => {
        const annotations = n.metadata?.annotations ?? {};
        return !('npu-fault.io/clear' in annotations) && !('npu-fault.io/latched' in annotations);
      },
      {
        fieldSelector: `metadata.name=${b}`,
        timeoutMs: 15_000,
        what: 'clear and latched annotations removed',
      },
    );
  });

  it('hot-reloads the rules ConfigMap, refuses an invalid edit with a Warning Event, and mirrors into a labelled namespace', async () => {
    const a = nodeNames[0]!;
    await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: {
        metadata: { name: 'npu-fault-rules' },
        data: { 'rules.yaml': 'high_temp:\n  threshold_c: hot\n' },
      },
    });
    await watchUntil<k8s.CoreV1Event>(
      ns.admin,
      `/api/v1/namespaces/${ns.name}/events`,
      (e) => e.reason === 'RulesRefused' && (e.message ?? '').includes('threshold_c'),
      { fieldSelector: 'involvedObject.name=npu-fault-rules', timeoutMs: 15_000, what: 'RulesRefused Event' },
    );
    const edited = Date.now();
    await core.replaceNamespacedConfigMap({
      name: 'npu-fault-rules',
      namespace: ns.name,
      body: {
        metadata: { name: 'npu-fault-rules' },
        data: { 'rules.yaml': 'high_temp:\n  threshold_c: 45\n  min_samples: 1\n' },
      },
    });
    // Every device runs at 50 °C: with the new threshold each has a high-temp signal.
    const hot = await follower.waitFor(
      (d) => d.nodes[a]?.npus.some((x) => x.signals.includes('high-temp')) ?? false,
      15_000,
      'high-temp signals under the new rules',
      edited,
    );
    expect(hot.document.nodes[a]?.npus).toHaveLength(8);

    const mirror = await createTestNamespace('mirror');
    try {
      await allowMirrorsIn(ns, mirror.name);
      await core.patchNamespace(
        { name: mirror.name, body: { metadata: { labels: { 'npu-fault.io/status-mirror': 'true' } } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      const copy = await watchUntil<k8s.V1ConfigMap>(
        ns.admin,
        `/api/v1/namespaces/${mirror.name}/configmaps`,
        (cm) => cm.data?.['fault.json'] !== undefined,
        { fieldSelector: `metadata.name=${STATUS}`, timeoutMs: 20_000, what: 'the mirror' },
      );
      expect(copy.data?.version).toBe('3.0');
    } finally {
      await mirror.dispose();
    }
  });

  it(
    "passes `promtool check metrics` on the leader's live exposition",
    async () => {
      expect(leaderExposition).toContain('npu_fault_controller_writes_total');
      // prom-client's own nodejs_active_*_total gauges break the naming rule; nothing of ours may.
      const findings = (await checkMetrics(leaderExposition)).filter(
        (f) => !/_nodejs_active_\w+_total$/.test(f.metric),
      );
      expect(findings).toEqual([]);
    },
    PROMTOOL_BUILD_TIMEOUT_MS,
  );
});

/**
 * The pipeline benchmark's Kubernetes Events baseline on the real apiserver, with client-go's
 * own EventRecorder (bench/baselines/event-recorder, built by hack/build-event-recorder.sh)
 * running under a ServiceAccount that may only create and patch Events: a 30-fault burst on
 * one node's object shows the correlator's defaults at work (individual Events up to the 9th
 * similar one, then one "combined from similar events" Event bumped per fault, then the spam
 * filter's 25-write burst spent and the rest never written), and the lost faults are counted.
 *
 * Without Go (and no prebuilt recorder in NPU_FAULT_EVENT_RECORDER) the recorder cannot be
 * built: the cluster suite is skipped, saying why in its title.
 */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  COMBINED_PREFIX,
  CORRELATOR_DEFAULTS,
  DEFAULT_EVENT_TTL_SECONDS,
  apiserverEventTtl,
  eventTtlFromArgs,
  eventsBaselineResult,
  matchObservations,
  recordEventsRun,
  stormFaults,
  type EventFault,
  type EventsRunRecord,
} from '../bench/pipeline/events-baseline.js';
import { readControlPlaneState } from '../hack/control-plane/state.js';
import { buildEventRecorder } from '../hack/event-recorder.js';
import { createTestNamespace, kubeConfigWithToken, type TestNamespace } from './setup/cluster.js';

describe('events baseline scenarios and matching', () => {
  it('storms: one background fault per quiet node, a burst of distinct ECC messages, identical repeats', () => {
    const nodes = Array.from({ length: 100 }, (_, i) => `n${i}`);
    const faults = stormFaults(nodes, {
      seed: 7,
      spreadMs: 60_000,
      burst: { node: 'n3', faults: 40, startMs: 20_000, windowMs: 10_000 },
      repeat: { node: 'n5', times: 3, startMs: 1_000, intervalMs: 500 },
    });
    expect(faults).toHaveLength(99 + 40 + 3);
    expect(faults.map((f) => f.at)).toEqual([...faults.map((f) => f.at)].sort((a, b) => a - b));
    const burst = faults.filter((f) => f.node === 'n3');
    expect(new Set(burst.map((f) => f.device)).size).toBe(8);
    expect(new Set(burst.map((f) => f.message)).size).toBe(40);
    expect(Math.max(...burst.map((f) => f.at)) - Math.min(...burst.map((f) => f.at))).toBeLessThan(10_000);
    for (const f of faults) expect(f.message.startsWith(`${f.device}: `)).toBe(true);
    expect(stormFaults(nodes, { seed: 7, spreadMs: 60_000 })).toEqual(
      stormFaults(nodes, { seed: 7, spreadMs: 60_000 }),
    );
  });

  it('credits an Event to the earliest unseen fault of its node and named device emitted before it', () => {
    const fault = (device: string, at: number): EventFault => ({
      node: 'a',
      device,
      reason: 'R',
      message: `${device}: x`,
      at,
    });
    const faults = [fault('npu1', 0), fault('npu1', 1), fault('npu10', 2)];
    const seen = (message: string, seenAt: number) => ({
      type: 'MODIFIED',
      node: 'a',
      name: 'e',
      message,
      count: 1,
      seenAt,
    });
    const { seenAt, combined } = matchObservations(
      faults,
      [100, 200, 300],
      [seen('npu1: x', 150), seen(`${COMBINED_PREFIX}npu10: x`, 350), seen('npu1: x', 190)],
    );
    // npu1 at 190 cannot be the fault emitted at 200; npu10 is not npu1.
    expect(seenAt).toEqual([150, null, 350]);
    expect(combined).toEqual([false, false, true]);
  });

  it('reads the Event TTL from the apiserver args, defaulting to 1h', () => {
    expect(eventTtlFromArgs(['--secure-port=1']).seconds).toBe(DEFAULT_EVENT_TTL_SECONDS);
    expect(eventTtlFromArgs(['--event-ttl=1h30m']).seconds).toBe(5400);
    expect(() => eventTtlFromArgs(['--event-ttl=soon'])).toThrow(/--event-ttl/);
  });
});

/** Whether the recorder can be had: a prebuilt one, or Go to build it. */
function recorderBuildable(): boolean {
  if (process.env.NPU_FAULT_EVENT_RECORDER) return true;
  return spawnSync('go', ['env', 'GOVERSION'], { stdio: 'ignore' }).status === 0;
}
const buildable = recorderBuildable();
const SKIP_REASON =
  '[skipped: no Go on PATH to build client-go’s EventRecorder (hack/build-event-recorder.sh), and no NPU_FAULT_EVENT_RECORDER]';
if (!buildable) process.stderr.write(`events-baseline.test.ts: ${SKIP_REASON}\n`);
const describeWithRecorder = buildable ? describe : describe.skip;

/** The cold Go build of the recorder on a 2-core machine takes minutes; a warm cache, none. */
const BUILD_TIMEOUT_MS = 10 * 60_000;

describeWithRecorder(
  `Kubernetes Events baseline (client-go EventRecorder)${buildable ? '' : ` ${SKIP_REASON}`}`,
  () => {
    let ns: TestNamespace | undefined;
    let dir: string;
    let recorderKubeconfig: string;
    let recorderBinary: string;
    let run: EventsRunRecord;
    const rbacNames = { role: '', binding: '' };
    const log: string[] = [];
    const burstNode = `ev-burst-${Math.random().toString(16).slice(2, 8)}`;
    const quietNode = `${burstNode}-quiet`;
    const BURST = 30;

    beforeAll(async () => {
      recorderBinary = await buildEventRecorder((line) => process.stderr.write(`${line}\n`));
      const namespace = await createTestNamespace('events-baseline');
      ns = namespace;
      // Events about a Node live in `default`: the recorder's ServiceAccount may create and
      // patch Events there and do nothing else (a baseline's RBAC, not shipped).
      const rbac = namespace.admin.makeApiClient(k8s.RbacAuthorizationV1Api);
      rbacNames.role = `${namespace.name}-event-recorder`;
      rbacNames.binding = rbacNames.role;
      await rbac.createNamespacedRole({
        namespace: 'default',
        body: {
          metadata: { name: rbacNames.role },
          rules: [{ apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] }],
        },
      });
      await rbac.createNamespacedRoleBinding({
        namespace: 'default',
        body: {
          metadata: { name: rbacNames.binding },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: rbacNames.role },
          subjects: [{ kind: 'ServiceAccount', name: 'npu-device-plugin', namespace: namespace.name }],
        },
      });
      const token =
        (await namespace.serviceAccountKubeConfig('npu-device-plugin')).getCurrentUser()?.token ?? '';
      dir = await mkdtemp(join(tmpdir(), 'npu-fault-events-baseline-'));
      recorderKubeconfig = join(dir, 'recorder.kubeconfig');
      await writeFile(
        recorderKubeconfig,
        kubeConfigWithToken(namespace.admin, token, 'npu-device-plugin').exportConfig(),
      );

      const state = process.env.NPU_FAULT_TEST_STATE_DIR
        ? await readControlPlaneState(process.env.NPU_FAULT_TEST_STATE_DIR)
        : undefined;
      run = await recordEventsRun({
        admin: namespace.admin,
        kubeconfigForRecorder: recorderKubeconfig,
        recorderBinary,
        faults: stormFaults([burstNode, quietNode], {
          seed: 'events-baseline-test',
          spreadMs: 300,
          burst: { node: burstNode, faults: BURST, startMs: 0, windowMs: 3_000 },
          repeat: { node: quietNode, times: 3, startMs: 500, intervalMs: 300 },
        }),
        eventTtl: await apiserverEventTtl(state?.pids['kube-apiserver']),
        log: (line) => log.push(line),
      });
    }, BUILD_TIMEOUT_MS);

    afterAll(async () => {
      const rbac = ns?.admin.makeApiClient(k8s.RbacAuthorizationV1Api);
      await rbac
        ?.deleteNamespacedRoleBinding({ name: rbacNames.binding, namespace: 'default' })
        .catch(() => undefined);
      await rbac?.deleteNamespacedRole({ name: rbacNames.role, namespace: 'default' }).catch(() => undefined);
      await ns?.dispose();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    const burstFaults = (): EventFault[] => run.faults.filter((f) => f.node === burstNode);

    it('runs client-go’s recorder, whose every write its create/patch-only RBAC allowed', () => {
      expect(run.clientGo).toMatch(/^v0\.34\./);
      expect(run.writes.filter((w) => w.error)).toEqual([]);
      expect(run.emittedAt.every((t) => typeof t === 'number')).toBe(true);
    });

    it('writes the burst as 9 Events, then one combined Event bumped per fault, until the spam filter’s 25 writes are spent', () => {
      const faults = burstFaults();
      const writes = run.writes.filter((w) => w.node === burstNode);
      const { spamFilterBurst, aggregateAtSimilarEvents } = CORRELATOR_DEFAULTS;
      expect(writes).toHaveLength(spamFilterBurst);
      const individual = aggregateAtSimilarEvents - 1;
      writes.forEach((write, k) => {
        if (k < individual)
          expect(write).toMatchObject({ write: 'create', message: faults[k]!.message, count: 1 });
        else
          expect(write).toMatchObject({
            write: k === individual ? 'create' : 'patch',
            message: `${COMBINED_PREFIX}${faults[k]!.message}`,
            count: k - individual + 1,
          });
      });
      // A consumer listing afterwards: 10 Events for 25 written faults; the combined one shows the last.
      const combinedCount = spamFilterBurst - individual;
      const listed = run.listedAfter.filter((e) => e.node === burstNode);
      expect(listed).toHaveLength(aggregateAtSimilarEvents);
      expect(listed.filter((e) => e.message.startsWith(COMBINED_PREFIX))).toEqual([
        {
          node: burstNode,
          message: `${COMBINED_PREFIX}${faults[spamFilterBurst - 1]!.message}`,
          count: combinedCount,
        },
      ]);
    });

    it('counts the faults the watcher never saw: those past the spam filter’s burst', () => {
      const result = eventsBaselineResult(run);
      const lost = BURST - CORRELATOR_DEFAULTS.spamFilterBurst;
      expect(result.name).toBe('kubernetes-events');
      expect(result.injected).toBe(run.faults.length);
      expect(result.missed).toBe(lost);
      expect(result.findings.suppressedBySpamFilter).toBe(lost);
      const { seenAt } = matchObservations(run.faults, run.emittedAt, run.observations);
      const unseen = run.faults.filter((_, i) => seenAt[i] === null);
      expect(unseen).toEqual(burstFaults().slice(CORRELATOR_DEFAULTS.spamFilterBurst));
      expect(result.findings.combinedWrites).toBe(CORRELATOR_DEFAULTS.spamFilterBurst - 9);
      expect(result.findings.faultsSeenOnlyAsCombined).toBe(CORRELATOR_DEFAULTS.spamFilterBurst - 9);
      expect(Number(result.findings.eventsCreated)).toBeLessThan(run.faults.length);
      // The first Events arrive, and fast: seconds at worst (the client's 5 QPS queues the burst).
      expect(result.latency.count).toBe(result.seen);
      expect(Math.min(...result.samples)).toBeGreaterThanOrEqual(0);
      expect(result.latency.p50).not.toBeNull();
      expect(Math.min(...result.samples)).toBeLessThan(5_000);
      process.stderr.write(
        `events baseline: ${JSON.stringify({ latency: result.latency, findings: result.findings, configuration: result.configuration })}\n`,
      );
    });

    it('counts an identical repeated fault on one Event instead of writing new ones', () => {
      const repeated = run.faults.filter(
        (f) => f.node === quietNode && f.message === 'npu0: RoCE port link down',
      );
      expect(repeated.length).toBeGreaterThanOrEqual(3);
      const listed = run.listedAfter.filter((e) => e.message === 'npu0: RoCE port link down');
      expect(listed).toEqual([
        { node: quietNode, message: 'npu0: RoCE port link down', count: repeated.length },
      ]);
      const result = eventsBaselineResult(run);
      expect(result.findings.identicalRepeatsCountedOnOneEvent).toBe(repeated.length - 1);
      // The quiet node's bucket is its own: none of its faults is lost to the burst next door.
      const { seenAt } = matchObservations(run.faults, run.emittedAt, run.observations);
      expect(run.faults.filter((f, i) => f.node === quietNode && seenAt[i] === null)).toEqual([]);
    });

    it('states the Event TTL the apiserver runs with', () => {
      const result = eventsBaselineResult(run);
      expect(result.configuration.eventTtlSeconds).toBe(DEFAULT_EVENT_TTL_SECONDS);
      expect(String(result.configuration.eventTtlSource)).toMatch(/kube-apiserver/);
      expect(String(result.findings.ttlMeaning)).toContain(`${DEFAULT_EVENT_TTL_SECONDS} s`);
    });
  },
);

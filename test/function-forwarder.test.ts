/**
 * The ingest function's forwarder against two real controller replicas (processes, under the
 * controller's shipped RBAC), authenticating with a TokenRequest token of the function's
 * ServiceAccount `npu-fault-function`, which the replicas allow:
 *
 * 1. a static `--controllers` list: a snapshot with a failing device comes back with the
 *    leader's failed entry;
 * 2. discovery through a real EndpointSlice of the headless Service `npu-fault-controller`,
 *    the leader from the real Lease, both read under a Role granting the function only those
 *    reads;
 * 3. the leader killed (SIGKILL): forward() calls in the gap are refused with 503 within the
 *    bound, and succeed against the new leader once it took over.
 *
 * Where the replicas listen: the apiserver refuses loopback addresses in an EndpointSlice, so
 * the test makes an address of its own (test/setup/netns.ts): a veth pair from this machine's
 * namespace (10.213.x.1/30) to a namespace the test creates (its peer, there only so the link
 * is up). The replicas listen on that address alone, and the forwarder, in this process,
 * reaches them there: an address of this machine's own, so the traffic goes over loopback and
 * never this machine's external interfaces. Both are removed afterwards, also on failure.
 * Where namespaces cannot be made (not root, no `ip netns`), the replicas listen on 127.0.0.1
 * and the EndpointSlice case is skipped, saying so.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import type { Snapshot } from '../contracts/index.js';
import { npuSnapshot } from '../core/engine/testing.js';
import {
  LeaderUnavailableError,
  createEndpointSliceReplicaSource,
  createForwarder,
  createLeaseLeaderSource,
  createStaticReplicaSource,
  endpointSlicesCollection,
  leaseCollection,
  type RunningForwarder,
} from '../functions/forwarder/index.js';
import { Registry, createLogger, systemClock } from '../platform/index.js';
import { createKubeListWatchClient } from '../platform/k8s/index.js';
import { controllerAccess, type ControllerAccess, functionCallerToken } from './setup/controller-rbac.js';
import {
  startControllerProcess,
  writeKubeConfig,
  type ControllerProcess,
} from './setup/controller-process.js';
import { createTestNamespace, type TestNamespace } from './setup/cluster.js';
import { createTestNetwork, netnsUnavailable, type TestNetwork } from './setup/netns.js';
import { percentile } from '../bench/pipeline/summary.js';

const LEASE = { duration: 4, renewDeadline: 3, retry: 0.5 };
const FUNCTION_ACCOUNT = 'npu-fault-function';
const LEADER_TIMEOUT_MS = 1000;
const log = createLogger({ level: process.env.NPU_FAULT_TEST_LOG ?? 'silent' });

const unavailable = netnsUnavailable();
if (unavailable) console.log(`function-forwarder.test.ts: the EndpointSlice case is skipped: ${unavailable}`);
/** The EndpointSlice case needs an address of the test's own (a test namespace's veth). */
const itWithOwnAddress = unavailable ? it.skip : it;

describe('the forwarder with two real controller replicas', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  let functionToken: string;
  let nodeName: string;
  let seq = 0;
  const replicas: ControllerProcess[] = [];
  const ports = new Map<string, number>();
  const stops: AbortController[] = [];
  const measured: Record<string, string> = {};
  /** The test's own veth and namespace, when it could make them. */
  let network: TestNetwork | undefined;
  /** Where the replicas listen: the test's veth address, else 127.0.0.1. */
  let address = '127.0.0.1';
  let leader: ControllerProcess;
  let standby: ControllerProcess;

  /** A 910B snapshot of the test node; `failing` puts npu2's PCIe link down. */
  const snapshot = (failing: boolean): Snapshot =>
    npuSnapshot(
      { node: nodeName, boot: 'boot-1', seq: ++seq, t: 0, collectedAt: new Date().toISOString() },
      Array.from({ length: 8 }, (_, npu) =>
        failing && npu === 2 ? { npu, link: 'down' as const, power: 120 } : { npu },
      ),
    );

  function startForwarder(forwarder: RunningForwarder): void {
    const stop = new AbortController();
    stops.push(stop);
    void forwarder.start(stop.signal);
  }

  async function startReplica(identity: string): Promise<ControllerProcess> {
    const replica = startControllerProcess({
      identity,
      kubeconfig: writeKubeConfig(await access.another()),
      args: [
        `--namespace=${ns.name}`,
        // The test's own address (a later flag overrides controller-process.ts's
        // --listen=127.0.0.1:0): the EndpointSlice names it, and nothing else reaches it.
        `--listen=${address}:0`,
        `--lease-duration-seconds=${LEASE.duration}`,
        `--lease-renew-deadline-seconds=${LEASE.renewDeadline}`,
        `--lease-retry-period-seconds=${LEASE.retry}`,
        `--auth-allowed-users=system:serviceaccount:${ns.name}:${FUNCTION_ACCOUNT}`,
      ],
    });
    replicas.push(replica);
    ports.set(identity, await replica.port('observations'));
    await replica.waitForLog((l) => l.msg === 'seeded', 60_000, 'seeded');
    return replica;
  }

  beforeAll(async () => {
    if (!unavailable) {
      network = createTestNetwork();
      address = network.link(null, network.namespace()).a.address;
    }
    ns = await createTestNamespace('forwarder');
    access = await controllerAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    functionToken = await functionCallerToken(ns);
    nodeName = `${ns.name}-n1`;
    await core.createNode({
      body: {
        metadata: { name: nodeName },
        status: {
          capacity: { 'huawei.com/Ascend910': '8' },
          conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test node' }],
        },
      },
    });
    const [one, two] = [await startReplica('controller-0'), await startReplica('controller-1')] as [
      ControllerProcess,
      ControllerProcess,
    ];
    leader = await Promise.any(
      [one, two].map((r) =>
        r.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading').then(() => r),
      ),
    );
    standby = leader === one ? two : one;
  });

  afterAll(async () => {
    for (const stop of stops) stop.abort();
    await Promise.all(replicas.map((r) => r.stop('SIGKILL')));
    await core?.deleteNode({ name: nodeName }).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
    network?.dispose();
    if (Object.keys(measured).length > 0)
      console.log(`forwarder end to end:\n${JSON.stringify(measured, null, 2)}`);
  });

  it("static list: a failing device comes back in the leader's answer", async () => {
    const forwarder = createForwarder(
      {
        replicas: createStaticReplicaSource(
          replicas.map((r) => ({ identity: r.identity, url: `http://${address}:${ports.get(r.identity)}` })),
        ),
        token: () => functionToken,
        clock: systemClock,
        log,
        registry: new Registry(),
      },
      { leaderTimeoutMs: LEADER_TIMEOUT_MS },
    );
    startForwarder(forwarder);
    const result = await forwarder.forward([snapshot(true)]);
    expect(result.leader).toBe(leader.identity);
    expect(Number.isInteger(result.term)).toBe(true);
    expect(result.results).toHaveLength(1);
    const [answer] = result.results;
    expect(answer).toMatchObject({ node: nodeName, accepted: true });
    expect(answer?.entry?.npus.find((d) => d.id === 'npu2')).toMatchObject({
      status: 'failed',
      reason: 'pcie-link-down',
    });
    expect(forwarder.ready()).toBe(true);

    // Latency of one forward() (sequential, one snapshot each, both replicas, keep-alive).
    const latencies: number[] = [];
    for (let i = 0; i < 100; i++) {
      const started = performance.now();
      await forwarder.forward([snapshot(true)]);
      latencies.push(performance.now() - started);
    }
    measured['forward() latency, sequential, 1 snapshot, 2 replicas: p50 / p99 / max (ms)'] = [50, 99, 100]
      .map((p) => percentile(latencies, p / 100).toFixed(2))
      .join(' / ');
    // For comparison: the same request straight to the leader alone (fetch, keep-alive).
    const direct: number[] = [];
    const url = `http://${address}:${ports.get(leader.identity)}/v1/observations`;
    for (let i = 0; i < 100; i++) {
      const started = performance.now();
      const response = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${functionToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ observations: [{ snapshot: snapshot(true) }] }),
      });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      direct.push(performance.now() - started);
    }
    measured['direct POST to the leader alone, for comparison: p50 / p99 / max (ms)'] = [50, 99, 100]
      .map((p) => percentile(direct, p / 100).toFixed(2))
      .join(' / ');
  });

  itWithOwnAddress(
    'EndpointSlices and the Lease: finds both replicas and the leader, under the function’s own Role',
    async () => {
      const rbac = k8s.KubernetesObjectApi.makeApiClient(ns.admin);
      await rbac.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'npu-fault-function-discovery', namespace: ns.name },
        rules: [
          { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch'] },
        ],
      } as k8s.KubernetesObject);
      await rbac.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'npu-fault-function-discovery', namespace: ns.name },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'Role',
          name: 'npu-fault-function-discovery',
        },
        subjects: [{ kind: 'ServiceAccount', name: FUNCTION_ACCOUNT, namespace: ns.name }],
      } as k8s.KubernetesObject);
      await core.createNamespacedService({
        namespace: ns.name,
        body: {
          metadata: { name: 'npu-fault-controller' },
          spec: { clusterIP: 'None', ports: [{ name: 'http', port: 8080, targetPort: 8080 }] },
        },
      });
      // One slice per replica: each listens on a port of its own, and a slice has one port list.
      const discovery = ns.admin.makeApiClient(k8s.DiscoveryV1Api);
      for (const replica of replicas) {
        await discovery.createNamespacedEndpointSlice({
          namespace: ns.name,
          body: {
            metadata: {
              name: `npu-fault-controller-${replica.identity}`,
              labels: { 'kubernetes.io/service-name': 'npu-fault-controller' },
            },
            addressType: 'IPv4',
            ports: [{ name: 'http', port: ports.get(replica.identity), protocol: 'TCP' }],
            endpoints: [
              {
                addresses: [address],
                conditions: { ready: true },
                targetRef: { kind: 'Pod', name: replica.identity, namespace: ns.name },
              },
            ],
          },
        });
      }

      // The function's own token for the apiserver (the controllers take only their audience's).
      const kc = await ns.serviceAccountKubeConfig(FUNCTION_ACCOUNT);
      const registry = new Registry();
      const source = createEndpointSliceReplicaSource({
        client: createKubeListWatchClient(
          kc,
          endpointSlicesCollection(kc.makeApiClient(k8s.DiscoveryV1Api), ns.name),
        ),
        clock: systemClock,
        log,
        registry,
      });
      const lease = createLeaseLeaderSource({
        client: createKubeListWatchClient(
          kc,
          leaseCollection(kc.makeApiClient(k8s.CoordinationV1Api), ns.name),
        ),
        clock: systemClock,
        log,
        registry,
      });
      const forwarder = createForwarder(
        { replicas: source, lease, token: () => functionToken, clock: systemClock, log, registry },
        { leaderTimeoutMs: LEADER_TIMEOUT_MS },
      );
      const discovered = new Promise<void>((resolve) => {
        const check = (): void => {
          if (source.replicas().length === 2 && lease.holder() !== undefined) resolve();
        };
        source.subscribe(check);
        lease.subscribe(check);
      });
      const started = performance.now();
      startForwarder(forwarder);
      await discovered;
      measured['EndpointSlice + Lease discovery, start → both replicas and the holder known (ms)'] = (
        performance.now() - started
      ).toFixed(0);
      expect(forwarder.replicas()).toEqual(
        [...replicas]
          .map((r) => ({ identity: r.identity, url: `http://${address}:${ports.get(r.identity)}` }))
          .sort((a, b) => a.identity.localeCompare(b.identity)),
      );
      expect(forwarder.leader()).toBe(leader.identity);
      expect(forwarder.ready()).toBe(true);
      const result = await forwarder.forward([snapshot(true)]);
      expect(result.leader).toBe(leader.identity);
      expect(result.results[0]?.entry?.npus.find((d) => d.id === 'npu2')?.status).toBe('failed');
      const metrics = await registry.metrics();
      expect(metrics).toMatch(/npu_fault_function_replicas\{state="ready"\} 2\b/);
      expect(metrics).toMatch(
        /npu_fault_function_forward_duration_seconds_count\{replica_role="leader"\} [1-9]/,
      );

      // 3. Kill the leader: 503 within the bound during the gap, then the new leader answers.
      const killed = performance.now();
      await leader.stop('SIGKILL');
      const refusals: number[] = [];
      let after: Awaited<ReturnType<RunningForwarder['forward']>> | undefined;
      while (after === undefined && performance.now() - killed < (LEASE.duration + 15) * 1000) {
        const sent = performance.now();
        try {
          after = await forwarder.forward([snapshot(true)]);
        } catch (error) {
          expect(error).toBeInstanceOf(LeaderUnavailableError);
          expect(error).toMatchObject({ status: 503, retryAfterSeconds: 1 });
          refusals.push(performance.now() - sent);
        }
      }
      expect(after?.leader).toBe(standby.identity);
      expect(after?.term).toBeGreaterThan(result.term);
      expect(after?.results[0]?.entry?.npus.find((d) => d.id === 'npu2')?.status).toBe('failed');
      expect(refusals.length).toBeGreaterThan(0);
      // Each refusal came within the bound (plus timer and scheduling slack).
      expect(Math.max(...refusals)).toBeLessThan(LEADER_TIMEOUT_MS + 250);
      measured['leader SIGKILL → first answer from the new leader (ms)'] = (
        performance.now() - killed
      ).toFixed(0);
      measured['503s during the gap: count, slowest (ms)'] =
        `${refusals.length}, ${Math.max(...refusals).toFixed(0)}`;
      expect(forwarder.leader()).toBe(standby.identity);
    },
  );
});

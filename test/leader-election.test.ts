/**
 * Leader election against the real apiserver, acting as the controller's ServiceAccount with
 * exactly the RBAC that k8s/controller/leader-election-rbac.yaml ships (its Role and
 * RoleBinding applied in this file's namespace, which also holds the Lease), on short
 * timings: lease 3 s, renew deadline 2 s, retry 0.5 s. Every wait is on an observable event
 * (a callback of the elector, a watch of the Lease) with a deadline; the measured takeover
 * and loss times are printed at the end.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import {
  DEFAULT_LEASE,
  JITTER_FACTOR,
  createKubeLeaseClient,
  createLeaderElector,
  type LeaderElector,
  type LeaseClient,
} from '../controller/leader-election/index.js';
import { Registry, createLogger, systemClock } from '../platform/index.js';
import { createTestNamespace, kubeConfigWithToken, watchUntil, type TestNamespace } from './setup/cluster.js';

const TIMINGS = { durationSeconds: 3, renewDeadlineSeconds: 2, retryPeriodSeconds: 0.5 };
const LEASE_MS = TIMINGS.durationSeconds * 1000;
const DEADLINE_MS = TIMINGS.renewDeadlineSeconds * 1000;
const RETRY_MS = TIMINGS.retryPeriodSeconds * 1000;
/** The longest jittered wait between a candidate's attempts (client-go: up to 2.2 retry periods). */
const MAX_CANDIDATE_WAIT_MS = (1 + JITTER_FACTOR) * RETRY_MS;
/** Room for request latency and timer delays on a loaded test machine. */
const SLACK_MS = 500;

const manifest = (file: string): k8s.KubernetesObject[] =>
  parseAllDocuments(
    readFileSync(fileURLToPath(new URL(`../k8s/controller/${file}`, import.meta.url)), 'utf8'),
  ).map((d) => d.toJS() as k8s.KubernetesObject);

/** One thing an elector reported, with the monotonic time it happened. */
interface Event {
  seq: number;
  /** performance.now() */
  at: number;
  /** Date.now() */
  wall: number;
  kind: 'started' | 'stopped' | 'leader';
  term?: number;
  reason?: string;
  leader?: string | undefined;
  /** leadership().leading as seen inside the callback. */
  fenceUp: boolean;
}

/** An elector started by a test, with what it reported. */
interface Replica {
  identity: string;
  elector: LeaderElector;
  registry: Registry;
  events: Event[];
  logs: Record<string, unknown>[];
  /** Resolves with the first event (already seen or to come) matching `predicate`; rejects after `timeoutMs`. */
  waitFor(predicate: (event: Event) => boolean, timeoutMs: number, what: string): Promise<Event>;
  /** Aborts it and waits until it stopped (and released the lease, when it does). */
  stop(): Promise<void>;
}

const running: Replica[] = [];
const measured: Record<string, string> = {};

describe('leader election on the real control plane, under the shipped RBAC', () => {
  let ns: TestNamespace;
  let asController: k8s.KubeConfig;
  let leases: k8s.CoordinationV1Api;
  let rbac: k8s.RbacAuthorizationV1Api;
  let binding: k8s.V1RoleBinding;
  let leaseName: string;

  beforeAll(async () => {
    ns = await createTestNamespace('leader-election');
    rbac = ns.admin.makeApiClient(k8s.RbacAuthorizationV1Api);
    leases = ns.admin.makeApiClient(k8s.CoordinationV1Api);
    const objects = manifest('leader-election-rbac.yaml');
    const role = objects.find((o) => o.kind === 'Role') as k8s.V1Role;
    binding = objects.find((o) => o.kind === 'RoleBinding') as k8s.V1RoleBinding;
    const account = manifest('serviceaccount.yaml').find((o) => o.kind === 'ServiceAccount');
    // The Role names the elector's default Lease; the test's Lease has that name too.
    leaseName = DEFAULT_LEASE.name;
    expect(role.rules?.flatMap((r) => r.resourceNames ?? [])).toContain(leaseName);
    expect(binding.subjects?.[0]?.name).toBe(account?.metadata?.name);

    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: { metadata: { name: role.metadata?.name }, rules: role.rules },
    });
    binding = {
      metadata: { name: binding.metadata?.name },
      roleRef: binding.roleRef,
      subjects: binding.subjects?.map((s) => ({ ...s, namespace: ns.name })),
    };
    await rbac.createNamespacedRoleBinding({ namespace: ns.name, body: binding });
    asController = await ns.serviceAccountKubeConfig(account?.metadata?.name ?? '');
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await leases.deleteNamespacedLease({ name: leaseName, namespace: ns.name }).catch(() => undefined);
  });

  afterAll(async () => {
    // Printed so a run shows the figures the assertions bound.
    console.info(
      `leader election, measured (lease 3 s, deadline 2 s, retry 0.5 s):\n${JSON.stringify(measured, null, 2)}`,
    );
    await ns?.dispose();
  });

  function startReplica(
    identity: string,
    options: { client?: LeaseClient; releaseOnCancel?: boolean } = {},
  ): Replica {
    const events: Event[] = [];
    const logs: Record<string, unknown>[] = [];
    const waiters = new Set<(event: Event) => void>();
    const registry = new Registry();
    const log = createLogger({
      level: 'debug',
      destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
    });
    const record = (event: Omit<Event, 'seq' | 'at' | 'wall' | 'fenceUp'>): void => {
      const full = {
        ...event,
        seq: events.length,
        at: performance.now(),
        wall: Date.now(),
        fenceUp: elector?.isLeader() ?? false,
      };
      events.push(full);
      for (const waiter of waiters) waiter(full);
    };
    // Callbacks run only once start() runs, after `elector` is assigned.
    const elector: LeaderElector = createLeaderElector(
      {
        client: options.client ?? createKubeLeaseClient(asController.makeApiClient(k8s.CoordinationV1Api)),
        clock: systemClock,
        log,
        registry,
      },
      {
        identity,
        config: {
          ...TIMINGS,
          namespace: ns.name,
          name: leaseName,
          releaseOnCancel: options.releaseOnCancel ?? true,
        },
        callbacks: {
          onStartedLeading: (term) => record({ kind: 'started', term }),
          onStoppedLeading: (reason) => record({ kind: 'stopped', reason }),
          onNewLeader: (leader) => record({ kind: 'leader', leader }),
        },
      },
    );
    const controller = new AbortController();
    const done = elector.start(controller.signal);
    const replica: Replica = {
      identity,
      elector,
      registry,
      events,
      logs,
      waitFor(predicate, timeoutMs, what) {
        const seen = events.find(predicate);
        if (seen) return Promise.resolve(seen);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => {
            waiters.delete(check);
            reject(
              new Error(
                `${identity}: timed out after ${timeoutMs} ms waiting for ${what}; events: ${JSON.stringify(events)}`,
              ),
            );
          }, timeoutMs);
          const check = (event: Event): void => {
            if (!predicate(event)) return;
            clearTimeout(timer);
            waiters.delete(check);
            resolve(event);
          };
          waiters.add(check);
        });
      },
      async stop() {
        controller.abort(new Error('test stop'));
        await done;
        const index = running.indexOf(replica);
        if (index >= 0) running.splice(index, 1);
      },
    };
    running.push(replica);
    return replica;
  }

  const started = (e: Event): boolean => e.kind === 'started';
  const follows = (leader: string) => (e: Event) => e.kind === 'leader' && e.leader === leader;

  /** Starts `a`, waits until it leads, then starts `b` and waits until `b` knows `a` leads. */
  async function leaderAndStandby(releaseOnCancel = true): Promise<{ a: Replica; b: Replica; term: number }> {
    const a = startReplica('replica-a', { releaseOnCancel });
    const { term } = await a.waitFor(started, 10_000, 'replica-a leading');
    const b = startReplica('replica-b');
    await b.waitFor(follows('replica-a'), 10_000, 'replica-b seeing replica-a lead');
    expect(b.elector.isLeader()).toBe(false);
    return { a, b, term: term ?? -1 };
  }

  it('elects exactly one of two replicas; the other knows who leads; the Lease carries microsecond times', async () => {
    const a = startReplica('replica-a');
    const b = startReplica('replica-b');
    const first = await Promise.race([a, b].map((r) => r.waitFor(started, 10_000, 'leading').then(() => r)));
    const other = first === a ? b : a;
    await other.waitFor(follows(first.identity), 10_000, `following ${first.identity}`);

    // Let the leader renew several times while the follower keeps trying: still exactly one.
    const lease = await watchUntil<k8s.V1Lease>(
      ns.admin,
      `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases`,
      (l) =>
        new Date(l.spec?.renewTime ?? 0).getTime() - new Date(l.spec?.acquireTime ?? 0).getTime() >=
        4 * RETRY_MS,
      { fieldSelector: `metadata.name=${leaseName}`, timeoutMs: 10_000, what: 'four renewals' },
    );
    expect([a, b].filter((r) => r.elector.isLeader()).map((r) => r.identity)).toEqual([first.identity]);
    expect(other.events.filter(started)).toEqual([]);
    expect(lease.spec?.holderIdentity).toBe(first.identity);
    expect(lease.spec?.leaseDurationSeconds).toBe(TIMINGS.durationSeconds);
    expect(first.elector.leadership()).toEqual({ leading: true, term: lease.spec?.leaseTransitions });
    // The holder wrote these through microTime(): accepted, and read back to the millisecond.
    expect(Math.abs(epochMs(lease.spec?.renewTime) - Date.now())).toBeLessThan(5_000);

    // The check has teeth: the same write with a plain Date (three fractional digits) is refused.
    const plain = leases.replaceNamespacedLease({
      name: leaseName,
      namespace: ns.name,
      body: { ...lease, spec: { ...lease.spec, renewTime: new Date() } },
    });
    await expect(plain).rejects.toMatchObject({ code: 400 });
  });

  it('replaces a crashed leader (no release) within the lease duration plus one jittered retry, with the next term', async () => {
    let leader = startReplica('replica-0', { releaseOnCancel: false });
    let term = (await leader.waitFor(started, 10_000, 'replica-0 leading')).term ?? -1;
    const afterCrash: number[] = [];
    const afterRenewal: number[] = [];
    for (let round = 1; round <= 3; round++) {
      const standby = startReplica(`replica-${round}`, { releaseOnCancel: false });
      await standby.waitFor(follows(leader.identity), 10_000, `replica-${round} following`);
      // Crash just after a renewal lands, the standby having polled for a while: the standby's
      // wait counts from its first poll after that renewal.
      const since = Date.now() + RETRY_MS;
      const renewed = await watchUntil<k8s.V1Lease>(
        ns.admin,
        `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases`,
        (l) => l.spec?.holderIdentity === leader.identity && epochMs(l.spec.renewTime) > since,
        { fieldSelector: `metadata.name=${leaseName}`, timeoutMs: 10_000, what: 'a renewal' },
      );
      const crashedAt = performance.now();
      await leader.stop(); // releaseOnCancel false: the Lease still names the leader, as after a crash
      const takeover = await standby.waitFor(
        started,
        LEASE_MS + 2 * MAX_CANDIDATE_WAIT_MS + 5_000,
        `replica-${round} leading`,
      );
      const lease = await leases.readNamespacedLease({ name: leaseName, namespace: ns.name });
      expect(takeover.term).toBe(term + 1);
      expect(lease.spec?.leaseTransitions).toBe(term + 1);
      expect(lease.spec?.holderIdentity).toBe(standby.identity);
      afterCrash.push(takeover.at - crashedAt);
      afterRenewal.push(takeover.wall - epochMs(renewed.spec?.renewTime));
      leader = standby;
      term += 1;
    }
    measured['crash → takeover (ms), 3 rounds'] = afterCrash.map((ms) => ms.toFixed(0)).join(', ');
    measured['last renewal → takeover (ms), 3 rounds'] = afterRenewal.map((ms) => ms.toFixed(0)).join(', ');
    measured['lease + 2 retry periods (ms)'] = String(LEASE_MS + 2 * RETRY_MS);
    measured['bound asserted: lease + 2.2 retry periods + slack (ms)'] = String(
      LEASE_MS + MAX_CANDIDATE_WAIT_MS + SLACK_MS,
    );
    for (const ms of afterCrash) {
      // The standby sees the last renewal at its next poll (up to 2.2 retry periods later) and
      // takes over a lease duration after that.
      expect(ms).toBeLessThanOrEqual(LEASE_MS + MAX_CANDIDATE_WAIT_MS + SLACK_MS);
    }
    // Never earlier than a lease duration after the last renewal (same host: one wall clock).
    for (const ms of afterRenewal) expect(ms).toBeGreaterThanOrEqual(LEASE_MS - 50);
  });

  it('hands over on a clean shutdown within one jittered retry period: the leader releases the Lease', async () => {
    const { a, b, term } = await leaderAndStandby(true);
    const stoppingAt = performance.now();
    await a.stop();
    const takeover = await b.waitFor(started, 10_000, 'replica-b leading');

    // The fence went down first, then the release wrote "no holder" (client-go's ReleaseOnCancel).
    expect(a.events.map((e) => e.kind)).toEqual(['leader', 'started', 'stopped', 'leader']);
    expect(a.events[2]).toMatchObject({ reason: 'shutting down', fenceUp: false });
    expect(a.events[3]).toMatchObject({ leader: undefined });
    expect(a.logs.some((l) => l.msg === 'released the lease')).toBe(true);
    expect(takeover.term).toBe(term + 1);
    const afterStopMs = takeover.at - stoppingAt;
    measured['clean shutdown → takeover (ms)'] = afterStopMs.toFixed(0);
    expect(afterStopMs).toBeLessThanOrEqual(MAX_CANDIDATE_WAIT_MS + SLACK_MS);
  });

  it('a leader whose RoleBinding is deleted (every renewal 403) stops within the renew deadline, fence down', async () => {
    const a = startReplica('replica-a');
    await a.waitFor(started, 10_000, 'replica-a leading');
    const name = binding.metadata?.name ?? '';
    await rbac.deleteNamespacedRoleBinding({ name, namespace: ns.name });
    const cutAt = performance.now();
    try {
      const stopped = await a.waitFor((e) => e.kind === 'stopped', DEADLINE_MS + 5_000, 'replica-a stopping');
      expect(stopped).toMatchObject({ reason: 'renew deadline passed', fenceUp: false });
      expect(a.elector.leadership()).toEqual({ leading: false });
      const lossMs = stopped.at - cutAt;
      measured['RoleBinding deleted → leadership lost (ms)'] = lossMs.toFixed(0);
      expect(lossMs).toBeLessThanOrEqual(DEADLINE_MS + SLACK_MS);
      const forbidden = a.logs.filter(
        (l) => l.msg === 'lease renewal failed' && JSON.stringify(l.err).includes('403'),
      );
      expect(forbidden.length).toBeGreaterThan(0);
      const failures = await a.registry
        .getSingleMetric('npu_fault_controller_lease_renew_failures_total')
        ?.get();
      expect(failures?.values[0]?.value).toBeGreaterThanOrEqual(2);
    } finally {
      await rbac.createNamespacedRoleBinding({ namespace: ns.name, body: binding });
    }
  });

  it('a leader that cannot reach the apiserver (requests hang) stops within the renew deadline, fence down', async () => {
    const blackhole = await listenBlackhole();
    try {
      const real = createKubeLeaseClient(asController.makeApiClient(k8s.CoordinationV1Api));
      const unreachable = createKubeLeaseClient(
        withServer(asController, `https://127.0.0.1:${blackhole.port}`).makeApiClient(k8s.CoordinationV1Api),
      );
      let target = real;
      const client: LeaseClient = {
        get: (key, signal) => target.get(key, signal),
        create: (key, spec, signal) => target.create(key, spec, signal),
        replace: (key, version, spec, signal) => target.replace(key, version, spec, signal),
      };
      const a = startReplica('replica-a', { client });
      await a.waitFor(started, 10_000, 'replica-a leading');
      target = unreachable;
      const cutAt = performance.now();
      const stopped = await a.waitFor((e) => e.kind === 'stopped', DEADLINE_MS + 5_000, 'replica-a stopping');
      expect(stopped).toMatchObject({ reason: 'renew deadline passed', fenceUp: false });
      const lossMs = stopped.at - cutAt;
      measured['apiserver unreachable → leadership lost (ms)'] = lossMs.toFixed(0);
      expect(lossMs).toBeLessThanOrEqual(DEADLINE_MS + SLACK_MS);
      expect(blackhole.connections()).toBeGreaterThan(0); // the renewals really went there and hung
      target = real;
      await a.stop();
    } finally {
      await blackhole.close();
    }
  });

  it('lowers the fence the moment the deadline passes while the event loop is blocked, then recovers', async () => {
    const a = startReplica('replica-a');
    const { term } = await a.waitFor(started, 10_000, 'replica-a leading');
    expect(a.elector.leadership()).toEqual({ leading: true, term });
    const blockedFrom = performance.now();
    let leadingAtDeadline = true;
    // Nothing else runs meanwhile: no timer, no renewal, no callback.
    while (performance.now() - blockedFrom < DEADLINE_MS + 100) {
      if (performance.now() - blockedFrom > DEADLINE_MS) leadingAtDeadline = a.elector.isLeader();
    }
    expect(leadingAtDeadline).toBe(false);
    expect(a.elector.leadership()).toEqual({ leading: false });
    // The loop then reports the loss and takes its own, still valid lease back: same term.
    const stopped = await a.waitFor((e) => e.kind === 'stopped', 5_000, 'the loss reported');
    const again = await a.waitFor((e) => started(e) && e.seq > stopped.seq, 5_000, 'leading again');
    expect(again.term).toBe(term);
  });
});

/** A Lease time as read back (client-node hands MicroTime over as the API's string). */
function epochMs(time: Date | string | undefined): number {
  return new Date(time ?? 0).getTime();
}

/** A TCP server that accepts connections and never answers: requests to it hang. */
async function listenBlackhole(): Promise<{ port: number; connections(): number; close(): Promise<void> }> {
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('blackhole: no port');
  return {
    port: address.port,
    connections: () => sockets.length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The same credentials against another server address. */
function withServer(kc: k8s.KubeConfig, server: string): k8s.KubeConfig {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster || !user?.token) throw new Error('kubeconfig without a cluster or token');
  const moved = kubeConfigWithToken(kc, user.token);
  const out = new k8s.KubeConfig();
  out.loadFromOptions({
    clusters: [{ ...cluster, server }],
    users: moved.users,
    contexts: moved.contexts,
    currentContext: moved.currentContext,
  });
  return out;
}

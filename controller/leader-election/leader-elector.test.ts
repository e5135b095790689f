import { describe, expect, it } from '@jest/globals';
import {
  FakeClock,
  K8sApiError,
  Registry,
  createLogger,
  type Cancel,
  type Clock,
  type Logger,
} from '../../platform/index.js';
import { FakeLeaseClient } from './fake-lease-client.js';
import { createLeaderElector, type LeaderElector, type LeaderElectorOptions } from './leader-elector.js';
import { JITTER_FACTOR } from './config.js';
import type { LeaseKey, LeaseSpec } from './lease-client.js';

const KEY: LeaseKey = { namespace: 'ai-infra', name: 'npu-fault-controller' };
/** client-go's defaults, spelt out so the arithmetic below reads against them. */
const LEASE_MS = 15_000;
const DEADLINE_MS = 10_000;
const RETRY_MS = 2_000;
const CONFIG = { durationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 };

function memoryLog(): { log: Logger; messages: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', destination: { write: (l: string) => void lines.push(l) } });
  return { log, messages: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** A running elector with its callback events recorded in order. */
interface Replica {
  elector: LeaderElector;
  events: string[];
  registry: Registry;
  messages: () => Record<string, unknown>[];
  /** Aborts its signal and waits until start() resolved (release included). */
  stop(): Promise<void>;
}

function replica(
  clock: Clock,
  client: FakeLeaseClient,
  identity: string,
  options: Partial<LeaderElectorOptions> & { random?: () => number } = {},
): Replica {
  const events: string[] = [];
  const registry = new Registry();
  const { log, messages } = memoryLog();
  const elector = createLeaderElector(
    { client, clock, log, registry, random: options.random ?? (() => 0) },
    {
      identity,
      config: { ...CONFIG, ...options.config },
      callbacks: options.callbacks ?? {
        onStartedLeading: (term) => events.push(`started ${term}`),
        onStoppedLeading: (reason) => events.push(`stopped: ${reason}`),
        onNewLeader: (leader) => events.push(`leader ${leader ?? '(none)'}`),
      },
    },
  );
  const controller = new AbortController();
  const running = elector.start(controller.signal);
  return {
    elector,
    events,
    registry,
    messages,
    async stop() {
      controller.abort(new Error('test stop'));
      await running;
    },
  };
}

/** A lease held by someone else, as another replica would have written it. */
function heldBy(holder: string, spec: Partial<LeaseSpec> = {}, now = Date.UTC(2026, 0, 1)): LeaseSpec {
  return {
    holderIdentity: holder,
    leaseDurationSeconds: 15,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: 4,
    ...spec,
  };
}

/** The value of a series of `name` (`series`: a histogram's `_count`, say) with these labels. */
async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
  series = name,
): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const match = values.find(
    (v) =>
      ((v as { metricName?: string }).metricName ?? name) === series &&
      Object.entries(labels).every(([k, value]) => (v.labels as Record<string, unknown>)[k] === value),
  );
  return match?.value ?? 0;
}

describe('LeaderElector: acquiring', () => {
  it('creates an absent lease and leads with term 0', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a');
    await clock.advance(0);

    expect(client.peek(KEY)?.spec).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: clock.now(),
      renewTime: clock.now(),
      leaseTransitions: 0,
    });
    expect(a.elector.leadership()).toEqual({ leading: true, term: 0 });
    expect(a.elector.leader()).toBe('a');
    expect(a.events).toEqual(['leader a', 'started 0']);
    expect(await metricValue(a.registry, 'npu_fault_controller_leader')).toBe(1);
    expect(
      await metricValue(a.registry, 'npu_fault_controller_leader_transitions_total', { to: 'leader' }),
    ).toBe(1);
    await a.stop();
  });

  it('renews every retry period over the version it wrote, keeping acquireTime and the term', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a');
    await clock.advance(0);
    const acquired = client.peek(KEY)?.spec;
    const callsAfterAcquire = client.calls.length;

    await clock.advance(3 * RETRY_MS);
    const renewals = client.calls.slice(callsAfterAcquire);
    expect(renewals.map((c) => c.op)).toEqual(['replace', 'replace', 'replace']);
    expect(client.peek(KEY)?.spec).toEqual({ ...acquired, renewTime: clock.now() });
    expect(a.elector.leadership()).toEqual({ leading: true, term: 0 });
    const histogram = 'npu_fault_controller_lease_renew_duration_seconds';
    expect(await metricValue(a.registry, histogram, {}, `${histogram}_count`)).toBe(3);
    await a.stop();
  });

  it.each([
    ['renewTime now', 0],
    ['renewTime a day in the past (looks long expired by the wall clock)', -86_400_000],
    ['renewTime a day in the future (looks valid for a day by the wall clock)', 86_400_000],
  ])(
    'stays a follower for one lease duration after it last saw the record change (%s), then takes over',
    async (_name, renewOffsetMs) => {
      const clock = new FakeClock();
      const client = new FakeLeaseClient(clock);
      client.put(KEY, heldBy('old', { renewTime: clock.now() + renewOffsetMs }));
      const b = replica(clock, client, 'b');
      await clock.advance(0);
      expect(b.elector.leadership()).toEqual({ leading: false });
      expect(b.elector.leader()).toBe('old');
      expect(b.events).toEqual(['leader old']);

      await clock.advance(LEASE_MS - 1);
      expect(b.elector.isLeader()).toBe(false);
      expect(client.peek(KEY)?.spec.holderIdentity).toBe('old');

      await clock.advance(1);
      expect(b.elector.leadership()).toEqual({ leading: true, term: 5 });
      expect(client.peek(KEY)?.spec).toEqual({
        holderIdentity: 'b',
        leaseDurationSeconds: 15,
        acquireTime: clock.now(),
        renewTime: clock.now(),
        leaseTransitions: 5,
      });
      expect(b.events).toEqual(['leader old', 'leader b', 'started 5']);
      await b.stop();
    },
  );

  it('never takes over a lease whose holder keeps changing it, whatever times it writes', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    client.put(KEY, heldBy('old'));
    const b = replica(clock, client, 'b', { random: () => 0.7 });
    // The holder renews every 2 s with a wall clock stuck a day in the past, then one stepping backwards.
    for (let i = 1; i <= 30; i++) {
      await clock.advance(RETRY_MS);
      client.put(KEY, heldBy('old', { renewTime: Date.UTC(2025, 11, 31) - i * 1000 }));
    }
    expect(b.elector.isLeader()).toBe(false);
    expect(client.peek(KEY)?.spec.holderIdentity).toBe('old');
    await b.stop();
  });

  it('takes a released lease (no holder) at its next attempt', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    client.put(KEY, heldBy('old', { holderIdentity: undefined, leaseDurationSeconds: 1 }));
    const b = replica(clock, client, 'b');
    await clock.advance(0);
    expect(b.elector.leadership()).toEqual({ leading: true, term: 5 });
    await b.stop();
  });

  it('re-takes a lease that still names it (a restart under the same identity) without waiting, same term', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    client.put(KEY, heldBy('a', { acquireTime: clock.now() - 60_000 }));
    const a = replica(clock, client, 'a');
    await clock.advance(0);
    expect(a.elector.leadership()).toEqual({ leading: true, term: 4 });
    expect(client.peek(KEY)?.spec.acquireTime).toBe(clock.now() - 60_000);
    await a.stop();
  });

  it.each([
    ['the lease is absent (create races create)', undefined],
    ['the lease expired (replace races replace)', heldBy('old')],
  ])('lets exactly one of two candidates win when %s; the other follows it', async (_name, initial) => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    if (initial) client.put(KEY, initial);
    // Writes take 10 ms: both candidates read the same version before either write lands.
    client.delay('create', 10);
    client.delay('replace', 10);
    const a = replica(clock, client, 'a');
    const b = replica(clock, client, 'b');
    await clock.advance((initial ? LEASE_MS : 0) + 10);

    const leaders = [a, b].filter((r) => r.elector.isLeader());
    expect(leaders).toHaveLength(1);
    const winner = leaders[0]?.elector.identity;
    const loser = winner === 'a' ? b : a;
    // Both wrote against the same version: one write was refused with a 409.
    const writes = client.calls.filter((c) => c.op !== 'get');
    expect(writes).toHaveLength(2);
    expect(writes[0]?.resourceVersion).toBe(writes[1]?.resourceVersion);
    expect(client.peek(KEY)?.spec.leaseTransitions).toBe(initial ? 5 : 0);
    // The loser reads the lease again at its next retry and follows the winner.
    await clock.advance((1 + JITTER_FACTOR) * RETRY_MS);
    expect(loser.elector.leader()).toBe(winner);

    await clock.advance(10 * LEASE_MS);
    expect([a, b].filter((r) => r.elector.isLeader()).map((r) => r.elector.identity)).toEqual([winner]);
    client.delay('replace', undefined); // nothing advances the clock during the release
    await a.stop();
    await b.stop();
  });

  it('retries after an API error with the jittered retry period (1 to 2.2 retry periods)', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    client.failNext('get', new K8sApiError(503), 1);
    const a = replica(clock, client, 'a', { random: () => 0.5 }); // waits 2 s × (1 + 0.5 × 1.2) = 3.2 s
    await clock.advance(3_199);
    expect(a.elector.isLeader()).toBe(false);
    await clock.advance(1);
    expect(a.elector.isLeader()).toBe(true);
    expect(a.messages().some((m) => m.msg === 'lease acquire attempt failed' && m.level === 'warn')).toBe(
      true,
    );
    await a.stop();
  });

  it('does not let a throwing callback stop the election', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a', {
      callbacks: {
        onStartedLeading: () => {
          throw new Error('callback bug');
        },
      },
    });
    await clock.advance(2 * RETRY_MS);
    expect(a.elector.isLeader()).toBe(true);
    expect(client.peek(KEY)?.spec.renewTime).toBe(clock.now());
    expect(a.messages().some((m) => m.msg === 'leader-election callback threw')).toBe(true);
    await a.stop();
  });
});

describe('LeaderElector: losing leadership', () => {
  /** A leader that acquired at t=0 and renewed at t=2 s; returns it with the clock at 2 s. */
  async function leaderRenewedOnce(
    options: Parameters<typeof replica>[3] = {},
  ): Promise<{ clock: FakeClock; client: FakeLeaseClient; a: Replica }> {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a', options);
    await clock.advance(RETRY_MS);
    expect(a.elector.isLeader()).toBe(true);
    return { clock, client, a };
  }

  it.each([
    ['the API answers 503', (client: FakeLeaseClient) => client.failAlways('any', new K8sApiError(503))],
    [
      'the API answers 403 (RBAC taken away)',
      (client: FakeLeaseClient) => client.failAlways('any', new K8sApiError(403)),
    ],
    [
      'requests hang (apiserver unreachable)',
      (client: FakeLeaseClient) => {
        client.delay('get', 3_600_000);
        client.delay('replace', 3_600_000);
      },
    ],
  ])('stops leading exactly when the renew deadline passes when %s', async (_name, breakApi) => {
    const { clock, client, a } = await leaderRenewedOnce();
    breakApi(client);
    const lastRenewal = clock.monotonic();

    await clock.advance(DEADLINE_MS - 1);
    expect(a.elector.leadership()).toEqual({ leading: true, term: 0 });
    expect(a.events).toEqual(['leader a', 'started 0']);

    await clock.advance(1);
    expect(clock.monotonic() - lastRenewal).toBe(DEADLINE_MS);
    expect(a.elector.leadership()).toEqual({ leading: false });
    expect(a.events).toEqual(['leader a', 'started 0', 'stopped: renew deadline passed']);
    expect(await metricValue(a.registry, 'npu_fault_controller_leader')).toBe(0);
    expect(
      await metricValue(a.registry, 'npu_fault_controller_leader_transitions_total', { to: 'follower' }),
    ).toBe(1);
    // Heal the API so the release on stop goes through.
    client.failAlways('any', undefined);
    client.delay('get', undefined);
    client.delay('replace', undefined);
    await a.stop();
  });

  it('counts failed renewals and keeps leading while one succeeds within the deadline', async () => {
    const { clock, client, a } = await leaderRenewedOnce();
    client.failNext('any', new K8sApiError(500), 6); // fast path + read fail at 4, 6 and 8 s
    await clock.advance(4 * RETRY_MS);
    expect(a.elector.isLeader()).toBe(true);
    expect(await metricValue(a.registry, 'npu_fault_controller_lease_renew_failures_total')).toBe(3);
    expect(a.events).toEqual(['leader a', 'started 0']);
    await clock.advance(DEADLINE_MS);
    expect(a.elector.isLeader()).toBe(true);
    await a.stop();
  });

  it('stops leading at once when the lease was taken by another', async () => {
    const { clock, client, a } = await leaderRenewedOnce();
    client.put(KEY, heldBy('intruder', { leaseTransitions: 1 }));
    await clock.advance(RETRY_MS);
    expect(a.elector.isLeader()).toBe(false);
    expect(a.events).toEqual([
      'leader a',
      'started 0',
      'leader intruder',
      'stopped: lease taken by intruder',
    ]);
    expect(client.peek(KEY)?.spec.holderIdentity).toBe('intruder');
    await a.stop();
  });

  it('stops leading when its lease is deleted, then recreates it with the next term (never back to 0)', async () => {
    const { clock, client, a } = await leaderRenewedOnce();
    client.put(KEY, { ...client.peek(KEY)?.spec, leaseTransitions: 7 });
    await clock.advance(RETRY_MS); // a renews over the new version: term 7 in the lease, still a's
    client.delete(KEY);
    await clock.advance(RETRY_MS);
    expect(a.events).toEqual(['leader a', 'started 0', 'stopped: lease deleted', 'started 8']);
    expect(client.peek(KEY)?.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 8 });
    await a.stop();
  });

  it('contends again after losing, and leads again with the same term when nobody took over', async () => {
    const { clock, client, a } = await leaderRenewedOnce();
    client.failAlways('any', new K8sApiError(503));
    await clock.advance(DEADLINE_MS);
    expect(a.elector.isLeader()).toBe(false);
    client.failAlways('any', undefined);
    await clock.advance(2.2 * RETRY_MS);
    expect(a.elector.leadership()).toEqual({ leading: true, term: 0 });
    expect(a.events).toEqual(['leader a', 'started 0', 'stopped: renew deadline passed', 'started 0']);
    await a.stop();
  });

  it('lowers the fence once the deadline passes even when the event loop stalls (no timer runs)', async () => {
    const clock = new StallableClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a');
    await clock.advance(0);
    expect(a.elector.leadership()).toEqual({ leading: true, term: 0 });

    clock.stall(DEADLINE_MS - 1);
    expect(a.elector.leadership()).toEqual({ leading: true, term: 0 });
    clock.stall(1);
    // No timer has run and no promise has settled: the fence is computed when asked.
    expect(a.elector.leadership()).toEqual({ leading: false });
    expect(a.elector.isLeader()).toBe(false);
    expect(await metricValue(a.registry, 'npu_fault_controller_leader')).toBe(0);

    // When the loop runs again it reports the loss, then re-takes the lease (still its own).
    await clock.advance(RETRY_MS);
    expect(a.events).toEqual(['leader a', 'started 0', 'stopped: renew deadline passed', 'started 0']);
    expect(a.elector.leadership()).toEqual({ leading: true, term: 0 });
    await a.stop();
  });
});

describe('LeaderElector: resigning and late renewals', () => {
  it('resign drops the fence at once, releases the lease for a standby, and waits a lease duration before contending', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a');
    await clock.advance(0);
    const b = replica(clock, client, 'b');
    await clock.advance(RETRY_MS);
    a.elector.resign('a newer term published');
    expect(a.elector.leadership()).toEqual({ leading: false });
    await clock.advance(0);
    expect(a.events.slice(0, 3)).toEqual([
      'leader a',
      'started 0',
      'stopped: resigned: a newer term published',
    ]);
    expect(client.peek(KEY)?.spec.holderIdentity).toBeUndefined();
    await clock.advance(2.2 * RETRY_MS);
    expect(b.elector.leadership()).toEqual({ leading: true, term: 1 });
    await clock.advance(LEASE_MS + 3 * RETRY_MS);
    expect(a.elector.isLeader()).toBe(false);
    expect(a.elector.leader()).toBe('b');
    a.elector.resign('not leading: nothing happens');
    await a.stop();
    await b.stop();
  });

  it('treats a renewal that came back after the deadline as lost (client-go: the renew times out)', async () => {
    const clock = new StallableClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a');
    await clock.advance(0);
    client.failAlways('any', new K8sApiError(503));
    await clock.advance(3 * RETRY_MS); // renewals at 2 s, 4 s, 6 s fail: the last renewal stays at 0
    client.failAlways('any', undefined);
    client.delay('replace', 1500);
    await clock.advance(RETRY_MS); // at 8 s a renewal goes out; its answer comes at 9.5 s
    clock.stall(600); // the event loop stalls: the answer is handled 10.1 s after the last renewal
    await clock.advance(1500); // ...before the deadline timer has run
    expect(a.events.slice(0, 3)).toEqual(['leader a', 'started 0', 'stopped: renew deadline passed']);
    client.delay('replace', undefined);
    await a.stop();
  });
});

describe('LeaderElector: shutting down', () => {
  it('releases the lease on abort, and a standby takes over at its next retry', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a');
    await clock.advance(0);
    const b = replica(clock, client, 'b');
    await clock.advance(RETRY_MS);
    expect(b.elector.leader()).toBe('a');

    await a.stop();
    expect(a.events).toEqual(['leader a', 'started 0', 'stopped: shutting down', 'leader (none)']);
    expect(client.peek(KEY)?.spec).toEqual({
      holderIdentity: undefined,
      leaseDurationSeconds: 1,
      acquireTime: clock.now(),
      renewTime: clock.now(),
      leaseTransitions: 0,
    });
    const releasedAt = clock.monotonic();
    await clock.advance(RETRY_MS);
    expect(b.elector.leadership()).toEqual({ leading: true, term: 1 });
    expect(clock.monotonic() - releasedAt).toBeLessThanOrEqual(RETRY_MS);
    await b.stop();
  });

  it('without release (a crash), the standby waits out the lease duration after the last renewal it saw', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a', { config: { releaseOnCancel: false } });
    await clock.advance(0);
    // b read the lease at 0 and polls again after the longest jittered wait (~4.4 s).
    const b = replica(clock, client, 'b', { random: () => 0.999 });
    const secondPoll = RETRY_MS * (1 + 0.999 * JITTER_FACTOR);
    await clock.advance(RETRY_MS);
    const lastRenewal = clock.monotonic();
    await a.stop();
    expect(client.peek(KEY)?.spec.holderIdentity).toBe('a');

    // b sees a's last renewal only at its second poll: the lease expires a lease duration later.
    await clock.advance(secondPoll + LEASE_MS - lastRenewal - 1);
    expect(b.elector.isLeader()).toBe(false);
    await clock.advance(1);
    expect(b.elector.leadership()).toEqual({ leading: true, term: 1 });
    // The worst case: a lease duration plus one full jittered retry period after the last renewal.
    expect(clock.monotonic() - lastRenewal).toBeLessThanOrEqual(LEASE_MS + (1 + JITTER_FACTOR) * RETRY_MS);
    await b.stop();
  });

  it('does not release a lease someone else wrote since (the 409 protects it)', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a');
    await clock.advance(0);
    client.put(KEY, heldBy('successor', { leaseTransitions: 1 }));
    await a.stop();
    expect(client.peek(KEY)?.spec.holderIdentity).toBe('successor');
  });

  it('refuses to start twice, and to start without an identity', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    const a = replica(clock, client, 'a');
    await expect(a.elector.start(new AbortController().signal)).rejects.toThrow(/already started/);
    await a.stop();
    expect(() =>
      createLeaderElector(
        { client, clock, log: memoryLog().log, registry: new Registry() },
        { identity: '', config: CONFIG },
      ),
    ).toThrow(/identity/);
  });
});

describe('LeaderElector: clocks', () => {
  it.each([
    ['forward an hour', 3_600_000],
    ['back an hour', -3_600_000],
  ])('a follower whose wall clock steps %s still waits the full lease duration', async (_name, step) => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    client.put(KEY, heldBy('old'));
    const b = replica(clock, client, 'b');
    await clock.advance(RETRY_MS);
    clock.stepWallClock(step);
    await clock.advance(LEASE_MS - RETRY_MS - 1);
    expect(b.elector.isLeader()).toBe(false);
    await clock.advance(1);
    expect(b.elector.isLeader()).toBe(true);
    await b.stop();
  });

  it('a leader whose wall clock steps back a day keeps its lease: followers see the record change', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    const aClock = new SteppedWallClock(clock, 0);
    const a = replica(aClock, client, 'a');
    await clock.advance(0);
    const b = replica(clock, client, 'b');
    aClock.offsetMs = -86_400_000;
    await clock.advance(38 * RETRY_MS);
    expect(a.elector.isLeader()).toBe(true);
    expect(b.elector.isLeader()).toBe(false);
    expect(client.peek(KEY)?.spec.renewTime).toBe(clock.now() - 86_400_000);
    await a.stop();
    await b.stop();
  });
});

/** A FakeClock whose time can also jump without firing anything: a blocked event loop. */
class StallableClock extends FakeClock {
  #stalled = 0;
  stall(ms: number): void {
    this.#stalled += ms;
  }
  override now(): number {
    return super.now() + this.#stalled;
  }
  override monotonic(): number {
    return super.monotonic() + this.#stalled;
  }
}

/** Another replica's view of the same time, its wall clock off by `offsetMs`. */
class SteppedWallClock implements Clock {
  constructor(
    readonly inner: Clock,
    public offsetMs: number,
  ) {}
  now(): number {
    return this.inner.now() + this.offsetMs;
  }
  monotonic(): number {
    return this.inner.monotonic();
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.inner.sleep(ms, signal);
  }
  schedule(ms: number, callback: () => void): Cancel {
    return this.inner.schedule(ms, callback);
  }
}

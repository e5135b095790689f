import { describe, expect, it } from '@jest/globals';
import { FakeClock, createLogger } from '../../platform/index.js';
import { drainConfigSchema } from './config.js';
import { drainNode, type DrainReport, type DrainRequest } from './drain.js';
import { FakePodClient, fakePod, type FakePodScript } from './fake-pod-client.js';
import type { PodSummary } from './pod-client.js';

const config = (fields: Record<string, unknown> = {}) => drainConfigSchema.parse(fields);

function setup() {
  const clock = new FakeClock();
  const pods = new FakePodClient({ clock });
  const controller = new AbortController();
  const deps = { pods, clock, log: createLogger({ level: 'silent' }), random: () => 0.5 };
  const add = (fields: Partial<PodSummary> & { name: string }, script?: FakePodScript) =>
    pods.add(fakePod(fields), 'n1', script);
  /** Starts a drain; `report()` is its report once it has ended (undefined before). */
  const start = (request: Partial<DrainRequest> = {}) => {
    let report: DrainReport | undefined;
    let failure: unknown;
    const promise = drainNode(deps, { node: 'n1', config: config(), ...request }, controller.signal);
    promise.then(
      (r) => (report = r),
      (e: unknown) => (failure = e),
    );
    return { promise, report: () => report, failure: () => failure };
  };
  return { clock, pods, controller, add, start };
}

describe('drainNode', () => {
  it('evicts every pod but DaemonSet, mirror and finished ones, and waits for them to go', async () => {
    const { clock, pods, add, start } = setup();
    add({ name: 'web' }, { terminateAfterMs: 1200 });
    add({ name: 'scratch', emptyDirVolumes: ['tmp'] });
    add({ name: 'agent', daemonSet: true });
    add({ name: 'static', mirror: true });
    add({ name: 'done', phase: 'Succeeded' });
    pods.add(fakePod({ name: 'elsewhere' }), 'n2');
    const drain = start();
    await clock.advance(1000);
    expect(drain.report()).toBeUndefined();
    expect(pods.has('default/web')).toBe(true);
    await clock.advance(500);
    expect(drain.report()).toEqual({
      outcome: 'drained',
      scope: 'node',
      evicted: ['default/scratch', 'default/web'],
      forced: [],
      alreadyGone: [],
      skipped: [
        { pod: 'default/agent', why: 'daemonset' },
        { pod: 'default/static', why: 'mirror' },
        { pod: 'default/done', why: 'finished' },
      ],
      blocking: [],
      startedAt: Date.UTC(2026, 0, 1),
      finishedAt: Date.UTC(2026, 0, 1) + 1500,
    });
    expect(pods.has('default/agent') && pods.has('default/elsewhere')).toBe(true);
    // One list of the node per poll, whatever the number of pods waiting.
    expect(pods.calls.filter((c) => c === 'list n1')).toHaveLength(4);
  });

  it('retries a refused eviction with exponential backoff and full jitter', async () => {
    const { clock, pods, add, start } = setup();
    add({ name: 'web' }, { answers: ['blocked', 'blocked', 'blocked'] });
    const drain = start({ backoff: { initialMs: 1000, maxMs: 3000 } });
    // random 0.5: 500, 1000, then the 1500 of the 3000 cap (not 2000).
    await clock.advance(499);
    expect(pods.evictions('default/web')).toBe(1);
    await clock.advance(1);
    expect(pods.evictions('default/web')).toBe(2);
    await clock.advance(999);
    expect(pods.evictions('default/web')).toBe(2);
    await clock.advance(1);
    expect(pods.evictions('default/web')).toBe(3);
    await clock.advance(1499);
    expect(pods.evictions('default/web')).toBe(3);
    await clock.advance(1);
    expect(pods.evictions('default/web')).toBe(4);
    await clock.advance(500);
    expect(drain.report()).toMatchObject({ outcome: 'drained', evicted: ['default/web'], blocking: [] });
  });

  it('draws each delay from the whole range up to the ceiling', async () => {
    const { clock, pods, add } = setup();
    const draws = [0.9, 0.1];
    add({ name: 'web' }, { answers: ['blocked', 'blocked'] });
    const deps = { pods, clock, log: createLogger({ level: 'silent' }), random: () => draws.shift() ?? 0 };
    void drainNode(deps, { node: 'n1', config: config() }, new AbortController().signal);
    await clock.advance(899);
    expect(pods.evictions('default/web')).toBe(1);
    await clock.advance(1); // 0.9 × 1000
    expect(pods.evictions('default/web')).toBe(2);
    await clock.advance(200); // 0.1 × 2000
    expect(pods.evictions('default/web')).toBe(3);
  });

  it('reports a pod that does not terminate within podTimeoutSeconds as blocking', async () => {
    const { clock, add, start } = setup();
    add({ name: 'stuck' }, { terminateAfterMs: 'never' });
    add({ name: 'web' });
    const drain = start({ config: config({ podTimeoutSeconds: 5 }) });
    await clock.advance(4999);
    expect(drain.report()).toBeUndefined();
    await clock.advance(1);
    expect(drain.report()).toMatchObject({
      outcome: 'timed-out',
      evicted: ['default/stuck', 'default/web'],
      blocking: [{ pod: 'default/stuck', reason: 'evicted, but did not terminate within 5 s' }],
      finishedAt: Date.UTC(2026, 0, 1) + 5000,
    });
  });

  it('ends after timeoutSeconds with the blocking pods, never forcing', async () => {
    const { clock, pods, add, start } = setup();
    add({ name: 'guarded' }, { then: 'blocked' });
    add({ name: 'web' });
    const drain = start({ config: config({ timeoutSeconds: 30 }) });
    await clock.advance(29_999);
    expect(drain.report()).toBeUndefined();
    await clock.advance(1);
    expect(drain.report()).toMatchObject({
      outcome: 'timed-out',
      evicted: ['default/web'],
      forced: [],
      blocking: [
        { pod: 'default/guarded', reason: expect.stringMatching(/^eviction refused: Cannot evict pod/) },
      ],
      finishedAt: Date.UTC(2026, 0, 1) + 30_000,
    });
    expect(pods.calls.some((c) => c.startsWith('delete'))).toBe(false);
    expect(pods.has('default/guarded')).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('reports a pod whose evictions keep failing with the API error', async () => {
    const { clock, add, start } = setup();
    add(
      { name: 'odd' },
      { then: { status: 500, message: 'This pod has more than one PodDisruptionBudget' } },
    );
    const drain = start({ config: config({ timeoutSeconds: 10 }) });
    await clock.advance(10_000);
    expect(drain.report()?.blocking).toEqual([
      {
        pod: 'default/odd',
        reason:
          'eviction failed: Kubernetes API 500 InternalError: This pod has more than one PodDisruptionBudget',
      },
    ]);
  });

  it('retries an API failure and carries on', async () => {
    const { clock, add, start } = setup();
    add({ name: 'web' }, { answers: [{ status: 503 }, { status: 500 }] });
    const drain = start();
    await clock.advance(2000);
    expect(drain.report()).toMatchObject({ outcome: 'drained', evicted: ['default/web'] });
  });

  it('deletes a pod still refused after forceDeleteAfterSeconds, and counts it as forced', async () => {
    const { clock, pods, add, start } = setup();
    add({ name: 'guarded' }, { then: 'blocked' });
    const drain = start({
      config: config({ forceDeleteAfterSeconds: 10 }),
      backoff: { initialMs: 4000, maxMs: 8000 },
    });
    await clock.advance(9999);
    expect(pods.calls.filter((c) => c.startsWith('delete'))).toEqual([]);
    // The backoff (2000, 4000, then 4000 more) is cut short to meet the deadline at 10 000.
    await clock.advance(1);
    expect(pods.calls.filter((c) => c.startsWith('delete'))).toEqual(['delete default/guarded uid-guarded']);
    await clock.advance(500);
    expect(drain.report()).toMatchObject({
      outcome: 'drained',
      evicted: [],
      forced: ['default/guarded'],
      blocking: [],
    });
  });

  it('retries a failed force delete with backoff', async () => {
    const { clock, pods, add, start } = setup();
    add({ name: 'guarded' }, { then: 'blocked' });
    pods.deleteFailures.push(new Error('connection reset'));
    const drain = start({ config: config({ forceDeleteAfterSeconds: 1 }) });
    await clock.advance(1000);
    expect(pods.calls.filter((c) => c.startsWith('delete'))).toHaveLength(1);
    await clock.advance(2000);
    expect(pods.calls.filter((c) => c.startsWith('delete'))).toHaveLength(2);
    await clock.advance(1000);
    expect(drain.report()).toMatchObject({ outcome: 'drained', forced: ['default/guarded'] });
  });

  it('stops at once when aborted, while waiting or in the middle of a call', async () => {
    const { clock, pods, controller, add, start } = setup();
    add({ name: 'guarded' }, { then: 'blocked' });
    add({ name: 'slow' }, { answers: ['hang'] });
    const drain = start();
    await clock.advance(2000);
    controller.abort(new Error('leadership lost'));
    await drain.promise;
    expect(drain.report()).toMatchObject({
      outcome: 'aborted',
      evicted: [],
      blocking: [
        { pod: 'default/guarded', reason: expect.stringMatching(/^eviction refused/) },
        { pod: 'default/slow', reason: 'not evicted yet' },
      ],
      finishedAt: Date.UTC(2026, 0, 1) + 2000,
    });
    expect(clock.pending).toBe(0);
    const calls = pods.calls.length;
    await clock.advance(60_000);
    expect(pods.calls).toHaveLength(calls);
  });

  it('returns aborted without a call when the signal has already aborted', async () => {
    const { pods, controller, add, start } = setup();
    add({ name: 'web' });
    controller.abort();
    const drain = start();
    await drain.promise;
    expect(drain.report()?.outcome).toBe('aborted');
    expect(pods.calls).toEqual([]);
  });

  it('takes a 404 as gone', async () => {
    const { clock, add, start } = setup();
    add({ name: 'vanished' }, { answers: ['gone'] });
    const drain = start();
    await clock.advance(0);
    expect(drain.report()).toMatchObject({
      outcome: 'drained',
      evicted: [],
      alreadyGone: ['default/vanished'],
    });
  });

  it('evicts only the incarnation it listed (uid precondition)', async () => {
    const { clock, pods, add, start } = setup();
    add({ name: 'db-0' }, { answers: ['blocked'] });
    const drain = start();
    await clock.advance(100);
    // A StatefulSet replaced it under the same name while the eviction was refused.
    const successor = pods.add(fakePod({ name: 'db-0', uid: 'uid-db-0-b' }), 'n1');
    await clock.advance(1000);
    expect(pods.calls.filter((c) => c.startsWith('evict'))).toEqual([
      'evict default/db-0 uid-db-0',
      'evict default/db-0 uid-db-0',
    ]);
    expect(drain.report()).toMatchObject({ outcome: 'drained', alreadyGone: ['default/db-0'] });
    expect(pods.pod('default/db-0')).toBe(successor);
  });

  it('carries on a half-done drain: waits for a terminating pod without evicting it again', async () => {
    const { clock, pods, add, start } = setup();
    add({ name: 'going', terminating: true }, { terminateAfterMs: 'never' });
    add({ name: 'web' });
    const drain = start();
    await clock.advance(700);
    expect(pods.evictions('default/going')).toBe(0);
    expect(drain.report()).toBeUndefined();
    pods.remove('default/going');
    await clock.advance(500);
    expect(drain.report()).toMatchObject({
      outcome: 'drained',
      evicted: ['default/web'],
      skipped: [{ pod: 'default/going', why: 'terminating' }],
    });
    const again = start();
    await clock.advance(0);
    expect(again.report()).toMatchObject({ outcome: 'drained', evicted: [], skipped: [], blocking: [] });
  });

  it('evicts only the holders of the failed devices when perDevice; pods asking for no accelerator stay', async () => {
    const { clock, pods, add, start } = setup();
    const ascend = ['huawei.com/Ascend910'];
    add({ name: 'a', annotations: { 'huawei.com/Ascend910': 'Ascend910-0' }, deviceResources: ascend });
    add({ name: 'b', annotations: { 'huawei.com/Ascend910': 'Ascend910-1' }, deviceResources: ascend });
    add({ name: 'web' });
    const drain = start({ devices: ['Ascend910-1'], config: config({ perDevice: true }) });
    await clock.advance(500);
    expect(drain.report()).toMatchObject({
      outcome: 'drained',
      scope: 'devices',
      evicted: ['default/b'],
      skipped: [
        { pod: 'default/a', why: 'other-devices' },
        { pod: 'default/web', why: 'no-accelerator' },
      ],
    });
    expect(pods.has('default/a') && pods.has('default/web')).toBe(true);
  });

  it('drains the whole node when perDevice is off; per device, an unreadable allocation evicts only that pod', async () => {
    const { clock, pods, add, start } = setup();
    add({ name: 'a', annotations: { 'huawei.com/Ascend910': 'Ascend910-0' } });
    const off = start({ devices: ['Ascend910-1'] });
    await clock.advance(500);
    expect(off.report()).toMatchObject({ scope: 'node', evicted: ['default/a'] });
    add({ name: 'plain' });
    add({ name: 'silent', deviceResources: ['huawei.com/Ascend910'] });
    const perDevice = start({ devices: ['Ascend910-1'], config: config({ perDevice: true }) });
    await clock.advance(500);
    expect(perDevice.report()).toMatchObject({
      scope: 'devices',
      evicted: ['default/silent'],
      skipped: [{ pod: 'default/plain', why: 'no-accelerator' }],
    });
    expect(pods.has('default/plain')).toBe(true);
  });

  it('rejects when the pods cannot be listed, and rides out a failed poll', async () => {
    const { clock, pods, add, start } = setup();
    pods.listFailures.push(new Error('apiserver down'));
    const failed = start();
    await clock.advance(0);
    expect((failed.failure() as Error).message).toBe('apiserver down');
    expect(clock.pending).toBe(0);
    add({ name: 'web' }, { terminateAfterMs: 100 });
    const drain = start();
    await clock.advance(0);
    pods.listFailures.push(new Error('blip'));
    await clock.advance(1000);
    expect(drain.report()).toMatchObject({ outcome: 'drained', finishedAt: Date.UTC(2026, 0, 1) + 1000 });
  });
});

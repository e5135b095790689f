import { describe, expect, it } from '@jest/globals';
import { FakeClock, K8sApiError, isAlreadyExists, isConflict, isNotFound } from '../../platform/index.js';
import { FakeLeaseClient } from './fake-lease-client.js';

const KEY = { namespace: 'ns', name: 'lease' };
const spec = { holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 };
const live = (): AbortSignal => new AbortController().signal;

/** The rejection of `promise` (fails the test when it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('FakeLeaseClient', () => {
  it('creates once (then 409 AlreadyExists), reads back, and replaces only at the current version (else 409 Conflict)', async () => {
    const client = new FakeLeaseClient(new FakeClock());
    expect(await client.get(KEY, live())).toBeUndefined();
    const created = await client.create(KEY, spec, live());
    expect(isAlreadyExists(await rejectionOf(client.create(KEY, spec, live())))).toBe(true);
    expect(await client.get(KEY, live())).toEqual(created);

    const replaced = await client.replace(
      KEY,
      created.resourceVersion,
      { ...spec, holderIdentity: 'b' },
      live(),
    );
    expect(replaced.resourceVersion).not.toBe(created.resourceVersion);
    const stale = await rejectionOf(client.replace(KEY, created.resourceVersion, spec, live()));
    expect(isConflict(stale)).toBe(true);
    expect(isAlreadyExists(stale)).toBe(false);
    expect(client.peek(KEY)?.spec.holderIdentity).toBe('b');
  });

  it('answers 404 to a replace of a missing lease and 422 to invalid fields, as the API does', async () => {
    const client = new FakeLeaseClient(new FakeClock());
    expect(isNotFound(await rejectionOf(client.replace(KEY, '1', spec, live())))).toBe(true);
    const invalid = await rejectionOf(client.create(KEY, { ...spec, leaseDurationSeconds: 0 }, live()));
    expect((invalid as K8sApiError).apiStatus).toBe(422);
    expect(String(invalid)).toMatch(/spec.leaseDurationSeconds/);
  });

  it('fails the next calls as told, then heals', async () => {
    const client = new FakeLeaseClient(new FakeClock());
    client.failNext('get', new K8sApiError(503), 2);
    await expect(client.get(KEY, live())).rejects.toThrow(/503/);
    await expect(client.get(KEY, live())).rejects.toThrow(/503/);
    await expect(client.get(KEY, live())).resolves.toBeUndefined();
    client.failAlways('any', new K8sApiError(500));
    await expect(client.create(KEY, spec, live())).rejects.toThrow(/500/);
    client.failAlways('any', undefined);
    await expect(client.create(KEY, spec, live())).resolves.toBeDefined();
    expect(client.calls.map((c) => c.op)).toEqual(['get', 'get', 'get', 'create', 'create']);
  });

  it('delays calls on its clock; an abort cancels the call before it reaches the store', async () => {
    const clock = new FakeClock();
    const client = new FakeLeaseClient(clock);
    client.delay('create', 1000);
    const controller = new AbortController();
    const creating = client.create(KEY, spec, controller.signal);
    await clock.advance(999);
    controller.abort(new Error('deadline'));
    await expect(creating).rejects.toThrow('deadline');
    expect(client.peek(KEY)).toBeUndefined();

    const second = client.create(KEY, spec, live());
    await clock.advance(1000);
    await expect(second).resolves.toBeDefined();
  });
});

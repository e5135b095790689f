import { describe, expect, it } from '@jest/globals';
import { FakeClock, K8sApiError } from '../../platform/index.js';
import { FakeConfigMapClient } from './fake-configmap-client.js';

const KEY = { namespace: 'ai-infra', name: 'npu-fault-status-v3' };
const CONTENT = { labels: { a: '1' }, data: { k: 'v' } };
const signal = (): AbortSignal => new AbortController().signal;

describe('FakeConfigMapClient', () => {
  it('creates, reads and replaces at the current resourceVersion, keeping uid and merging labels', async () => {
    const client = new FakeConfigMapClient(new FakeClock());
    expect(await client.get(KEY, signal())).toBeUndefined();
    const created = await client.create(KEY, CONTENT, signal());
    expect(await client.get(KEY, signal())).toEqual(created);
    const replaced = await client.replace(
      KEY,
      created.resourceVersion,
      { labels: { b: '2' }, data: { k: 'w' } },
      signal(),
    );
    expect(replaced.uid).toBe(created.uid);
    expect(Number(replaced.resourceVersion)).toBeGreaterThan(Number(created.resourceVersion));
    expect(replaced.labels).toEqual({ a: '1', b: '2' });
    expect(replaced.data).toEqual({ k: 'w' });
  });

  it('answers as the apiserver: 409 AlreadyExists, 409 Conflict, 404', async () => {
    const client = new FakeConfigMapClient(new FakeClock());
    await expect(client.replace(KEY, '1', CONTENT, signal())).rejects.toMatchObject({ apiStatus: 404 });
    const created = await client.create(KEY, CONTENT, signal());
    await expect(client.create(KEY, CONTENT, signal())).rejects.toMatchObject({
      apiStatus: 409,
      reason: 'AlreadyExists',
    });
    client.put(KEY, { data: { other: 'writer' } });
    const conflict = client.replace(KEY, created.resourceVersion, CONTENT, signal());
    await expect(conflict).rejects.toMatchObject({ apiStatus: 409, reason: 'Conflict' });
    client.setNamespaces(['ai-infra']);
    await expect(client.create({ ...KEY, namespace: 'gone' }, CONTENT, signal())).rejects.toMatchObject({
      apiStatus: 404,
    });
  });

  it('deletes only when the preconditions still hold', async () => {
    const client = new FakeConfigMapClient(new FakeClock());
    const created = await client.create(KEY, CONTENT, signal());
    const stale = { uid: created.uid, resourceVersion: created.resourceVersion };
    client.put(KEY, { data: { changed: 'yes' } });
    await expect(client.delete(KEY, stale, signal())).rejects.toMatchObject({
      apiStatus: 409,
      reason: 'Conflict',
    });
    const current = client.peek(KEY);
    await expect(
      client.delete(KEY, { uid: 'other', resourceVersion: current?.resourceVersion ?? '' }, signal()),
    ).rejects.toMatchObject({ apiStatus: 409, reason: 'Conflict' });
    await client.delete(KEY, { uid: created.uid, resourceVersion: current?.resourceVersion ?? '' }, signal());
    expect(client.peek(KEY)).toBeUndefined();
    await expect(client.delete(KEY, stale, signal())).rejects.toMatchObject({ apiStatus: 404 });
  });

  it('injects failures and other writers, and records every call with its result', async () => {
    const client = new FakeConfigMapClient(new FakeClock());
    const created = await client.create(KEY, CONTENT, signal());
    client.failNext('get', new K8sApiError(500, 'InternalError'));
    await expect(client.get(KEY, signal())).rejects.toThrow(/500/);
    client.beforeNext('replace', () => client.put(KEY, { data: { slipped: 'in' } }));
    await expect(client.replace(KEY, created.resourceVersion, CONTENT, signal())).rejects.toMatchObject({
      apiStatus: 409,
      reason: 'Conflict',
    });
    expect(client.calls.map((c) => [c.op, c.result])).toEqual([
      ['create', 'ok'],
      ['get', 500],
      ['replace', 409],
    ]);
  });

  it('delays a call on the clock and cancels it with its signal', async () => {
    const clock = new FakeClock();
    const client = new FakeConfigMapClient(clock);
    client.delay('create', 100);
    const controller = new AbortController();
    const pending = client.create(KEY, CONTENT, controller.signal);
    await clock.advance(50);
    controller.abort(new Error('leadership lost'));
    await expect(pending).rejects.toThrow('leadership lost');
    expect(client.peek(KEY)).toBeUndefined();
    const done = client.create(KEY, CONTENT, signal());
    await clock.advance(100);
    await done;
    expect(client.calls.at(-1)?.storedAt).toBe(150);
  });
});

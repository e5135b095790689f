import { describe, expect, it } from '@jest/globals';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import { FakeListWatchClient } from '../../platform/k8s/watch/testing.js';
import type { RawObject } from '../../platform/k8s/index.js';
import { MIRROR_LABEL_SELECTOR, createMirrorNamespaceWatch, mirrorNamespaceOf } from './namespaces.js';

const namespace = (name: string, labels: Record<string, string>, phase = 'Active'): RawObject => ({
  metadata: { name, labels },
  status: { phase },
});
const mirror = { 'npu-fault.io/status-mirror': 'true' };

describe('mirror namespaces', () => {
  it('the server-side selector asks for the label set to true', () => {
    expect(MIRROR_LABEL_SELECTOR).toBe('npu-fault.io/status-mirror=true');
  });

  it.each([
    ['labelled true', namespace('a', mirror), 'a'],
    ['labelled otherwise', namespace('a', { 'npu-fault.io/status-mirror': 'yes' }), undefined],
    ['unlabelled', namespace('a', {}), undefined],
    ['terminating', namespace('a', mirror, 'Terminating'), undefined],
  ])('%s → %s', (_name, raw, expected) => {
    expect(mirrorNamespaceOf(raw)).toBe(expected);
  });

  it('reports the whole set once synced, then after every change; current() follows', async () => {
    const clock = new FakeClock();
    const client = new FakeListWatchClient();
    const sets: string[][] = [];
    const watch = createMirrorNamespaceWatch(
      { client, clock, log: createLogger({ level: 'silent' }), registry: new Registry() },
      { onChange: (set) => sets.push([...set].sort()) },
    );
    client.apply(namespace('team-a', mirror));
    client.apply(namespace('team-b', mirror));
    const stop = new AbortController();
    const running = watch.start(stop.signal);
    await client.waitForWatch(1);
    expect(watch.synced()).toBe(true);
    expect(sets).toEqual([['team-a', 'team-b']]);

    client.apply(namespace('team-c', mirror));
    client.apply(namespace('team-a', {})); // the label removed (a label-selected watch reports DELETED; either way it leaves)
    client.apply(namespace('team-b', mirror, 'Terminating'));
    client.delete('team-c');
    expect(sets.slice(1)).toEqual([['team-a', 'team-b', 'team-c'], ['team-b', 'team-c'], ['team-c'], []]);
    expect(watch.current()).toEqual(new Set());
    // A change that does not touch the set (another label) reports nothing.
    client.apply(namespace('team-d', { ...mirror, other: '1' }));
    client.apply(namespace('team-d', { ...mirror, other: '2' }));
    expect(sets.at(-1)).toEqual(['team-d']);
    expect(sets).toHaveLength(6);
    stop.abort();
    await running;
  });

  it('reports an empty set at sync when there is none', async () => {
    const client = new FakeListWatchClient();
    const sets: ReadonlySet<string>[] = [];
    const watch = createMirrorNamespaceWatch(
      { client, clock: new FakeClock(), log: createLogger({ level: 'silent' }), registry: new Registry() },
      { onChange: (set) => sets.push(set) },
    );
    const stop = new AbortController();
    const running = watch.start(stop.signal);
    await watch.whenSynced();
    expect(sets).toEqual([new Set()]);
    stop.abort();
    await running;
  });
});

import { afterEach, describe, expect, it } from '@jest/globals';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import type { RawObject } from '../../platform/k8s/index.js';
import { FakeListWatchClient } from '../../platform/k8s/watch/testing.js';
import { createLeaseLeaderSource } from './lease.js';

const log = createLogger({ level: 'silent' });

function lease(holderIdentity?: string): RawObject {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'npu-fault-controller', namespace: 'ai-infra' },
    spec:
      holderIdentity === undefined
        ? { leaseDurationSeconds: 15 }
        : { holderIdentity, leaseDurationSeconds: 15 },
  };
}

describe('createLeaseLeaderSource', () => {
  const stops: AbortController[] = [];
  afterEach(() => {
    for (const stop of stops.splice(0)) stop.abort();
  });

  it('follows the holder: none, taken, moved, released, deleted', async () => {
    const client = new FakeListWatchClient();
    const source = createLeaseLeaderSource({ client, clock: new FakeClock(), log, registry: new Registry() });
    const seen: (string | undefined)[] = [];
    source.subscribe(() => seen.push(source.holder()));
    const stop = new AbortController();
    stops.push(stop);
    void source.start(stop.signal);
    await client.waitForWatch(1);
    expect(source.holder()).toBeUndefined();
    client.apply(lease('controller-0'));
    expect(source.holder()).toBe('controller-0');
    client.apply(lease('controller-1'));
    expect(source.holder()).toBe('controller-1');
    client.apply(lease(''));
    expect(source.holder()).toBeUndefined();
    client.apply(lease('controller-0'));
    client.delete('ai-infra/npu-fault-controller');
    expect(source.holder()).toBeUndefined();
    expect(seen).toEqual(['controller-0', 'controller-1', undefined, 'controller-0', undefined]);
  });

  it('reads a holder that was there before the watch, and keeps it across a 410 re-list', async () => {
    const client = new FakeListWatchClient();
    client.apply(lease('controller-1'));
    const source = createLeaseLeaderSource({ client, clock: new FakeClock(), log, registry: new Registry() });
    const stop = new AbortController();
    stops.push(stop);
    void source.start(stop.signal);
    await client.waitForWatch(1);
    expect(source.holder()).toBe('controller-1');
    client.unseen(() => client.apply(lease('controller-0')));
    client.compact({ expireOpen: true });
    await client.waitForWatch(2);
    expect(source.holder()).toBe('controller-0');
  });
});

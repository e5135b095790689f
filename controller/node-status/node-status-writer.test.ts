import { describe, expect, it } from '@jest/globals';
import type { PublishedNode } from '../../contracts/index.js';
import type { LatchedDevice } from '../../core/engine/index.js';
import { FakeClock, createLogger, createRegistry } from '../../platform/index.js';
import type { Leadership } from '../leader-election/index.js';
import { CLEAR_ANNOTATION } from '../../contracts/index.js';
import { LATCHED_ANNOTATION } from './annotations.js';
import { FakeNodeClient } from './fake-clients.js';
import { createNodeStatusWriter, type NodeFacts, type NodeView } from './node-status-writer.js';

const failedEntry: PublishedNode = {
  node: 'n1',
  observed_at: '2026-12-01T00:00:00.000Z',
  agent: 'ok',
  summary: { total: 8, healthy: 7, degraded: 0, failed: 1, unknown: 0 },
  npus: [
    {
      id: 'npu3',
      key: 'k3',
      resource_id: 'Ascend910-3',
      kind: 'npu',
      model: '910B',
      status: 'failed',
      since: '2026-12-01T00:00:00.000Z',
      reason: 'ecc-uncorrectable',
      reasons: ['ecc-uncorrectable'],
      signals: [],
      temperature_c: 50,
      power_w: 100,
      ecc_errors: 3,
      pcie_link_status: 'up',
    },
  ],
};
const latch: LatchedDevice = {
  key: 'k3',
  id: 'npu3',
  resource_id: 'Ascend910-3',
  kind: 'npu',
  model: '910B',
  reasons: ['ecc-uncorrectable'],
  since: '2026-12-01T00:00:00.000Z',
  ecc_errors: 3,
  ecc_uncorrectable: 1,
};

function setup() {
  const client = new FakeNodeClient();
  const clock = new FakeClock();
  const facts = new Map<string, NodeFacts>([['n1', {}]]);
  const views = new Map<string, NodeView>([['n1', { observed: true, entry: null, latched: [] }]]);
  const applied = new Map<string, string>();
  const published = new Set<string>();
  let lead: Leadership = { leading: true, term: 3 };
  const writer = createNodeStatusWriter(
    {
      client,
      clock,
      log: createLogger({ level: 'silent' }),
      registry: createRegistry('controller'),
      leadership: () => lead,
      facts: (n) => facts.get(n),
      view: (n) => views.get(n) ?? { observed: false, entry: null, latched: [] },
      appliedClear: (n) => applied.get(n),
      clearPublished: (n) => published.has(n),
      nodes: () => facts.keys(),
    },
    { resyncMs: 60_000 },
  );
  const abort = new AbortController();
  let running: Promise<void> = Promise.resolve();
  /** The Node watch catching up with what was written. */
  const catchUp = (): void => {
    for (const [name, f] of facts) {
      const c = client.conditions.get(name);
      const a = client.annotations.get(name) ?? {};
      facts.set(name, {
        ...f,
        ...(c ? { condition: c } : {}),
        latched: a[LATCHED_ANNOTATION],
        clear: CLEAR_ANNOTATION in a ? a[CLEAR_ANNOTATION] : f.clear,
      });
    }
  };
  return {
    clock,
    begin: () => {
      running = writer.start(abort.signal);
    },
    client,
    facts,
    views,
    applied,
    published,
    writer,
    catchUp,
    depose: () => (lead = { leading: false }),
    stop: async () => {
      abort.abort();
      await running;
    },
  };
}

describe('node status writer', () => {
  it('writes the condition once, then only on change', async () => {
    const t = setup();
    t.begin();
    await t.writer.idle();
    expect(t.client.writes).toEqual(['condition n1 True AllDevicesHealthy']);
    t.catchUp();
    t.writer.markDirty('n1');
    await t.writer.idle();
    expect(t.client.writes).toHaveLength(1);
    t.views.set('n1', { observed: true, entry: failedEntry, latched: [latch] });
    t.writer.markDirty('n1');
    await t.writer.idle();
    expect(t.client.writes.slice(1).sort()).toEqual([
      'annotation n1 npu-fault.io/latched=' + JSON.stringify([latch]),
      'condition n1 False DeviceFailed',
    ]);
    expect(t.client.conditions.get('n1')?.lastTransitionTime).toBeDefined();
    await t.stop();
  });

  it('keeps the transition time when only the message changes', async () => {
    const t = setup();
    t.views.set('n1', { observed: true, entry: failedEntry, latched: [] });
    t.begin();
    await t.writer.idle();
    t.catchUp();
    const first = t.client.conditions.get('n1')?.lastTransitionTime;
    await t.clock.advance(5000);
    const two = {
      ...failedEntry,
      npus: [...failedEntry.npus, { ...failedEntry.npus[0]!, id: 'npu4', key: 'k4' }],
    };
    t.views.set('n1', { observed: true, entry: two, latched: [] });
    t.writer.markDirty('n1');
    await t.writer.idle();
    expect(t.client.writes).toHaveLength(2);
    expect(t.client.conditions.get('n1')?.lastTransitionTime).toBe(first);
    expect(t.client.conditions.get('n1')?.lastHeartbeatTime).not.toBe(first);
    await t.stop();
  });

  it('writes nothing about a node its agent has not reported, and keeps its latched record', async () => {
    const t = setup();
    t.facts.set('n1', { latched: JSON.stringify([latch]) });
    t.views.set('n1', { observed: false, entry: null, latched: [] });
    t.begin();
    await t.writer.idle();
    expect(t.client.writes).toEqual([]);
    await t.stop();
  });

  it('writes the cleared latch at once, and removes the clear annotation once a later document is published', async () => {
    const t = setup();
    t.facts.set('n1', { latched: JSON.stringify([latch]), clear: 'npu3' });
    t.client.annotations.set('n1', { [CLEAR_ANNOTATION]: 'npu3' });
    t.views.set('n1', { observed: false, entry: null, latched: [] }); // seeded, cleared, not reported since
    t.applied.set('n1', 'npu3');
    t.begin();
    await t.writer.idle();
    expect(t.client.writes).toEqual(['annotation n1 npu-fault.io/latched=<removed>']);
    t.catchUp();
    t.published.add('n1');
    t.writer.markDirty('n1');
    await t.writer.idle();
    expect(t.client.writes).toContain('annotation n1 npu-fault.io/clear=<removed>');
    expect(t.client.annotations.get('n1')).toEqual({});
    await t.stop();
  });

  it('keeps a clear an operator rewrote after the applied one (removes only the value applied)', async () => {
    const t = setup();
    t.facts.set('n1', { clear: 'npu3' });
    // The operator added npu4 after this replica applied npu3 (its cache still says npu3).
    t.client.annotations.set('n1', { [CLEAR_ANNOTATION]: 'npu3,npu4' });
    t.views.set('n1', { observed: true, entry: null, latched: [] });
    t.applied.set('n1', 'npu3');
    t.published.add('n1');
    t.begin();
    await t.writer.idle();
    expect(t.client.annotations.get('n1')).toEqual({ [CLEAR_ANNOTATION]: 'npu3,npu4' });
    await t.stop();
  });

  it('leaves a clear it has not applied yet', async () => {
    const t = setup();
    t.facts.set('n1', { clear: 'all' });
    t.begin();
    await t.writer.idle();
    expect(t.client.writes.some((w) => w.includes(CLEAR_ANNOTATION))).toBe(false);
    await t.stop();
  });

  it('writes nothing once deposed', async () => {
    const t = setup();
    t.depose();
    t.begin();
    await t.writer.idle();
    expect(t.client.writes).toEqual([]);
    await t.stop();
  });

  it('counts a failed write and retries it on the next mark', async () => {
    const t = setup();
    t.client.fail = new Error('503');
    t.begin();
    await t.writer.idle();
    expect(t.client.writes).toEqual([]);
    t.client.fail = undefined;
    t.writer.markDirty('n1');
    await t.writer.idle();
    expect(t.client.writes).toEqual(['condition n1 True AllDevicesHealthy']);
    await t.stop();
  });
});

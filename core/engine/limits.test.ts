import { describe, expect, it } from '@jest/globals';
import { publishedDocumentSchema, rulesSchema } from '../../contracts/index.js';
import { createEngine, type ReloadableEngine } from './index.js';
import { at, gpuSnapshot, npuSnapshot, type GpuSpec } from './testing.js';

const publisher = { identity: 'ctl-1', term: 7 };

function capped(max: number): ReloadableEngine {
  return createEngine(rulesSchema.parse({ max_devices_per_node: max }));
}

/** `count` GPUs (uuids from their index; withUuids gives them invented ones). */
function gpus(count: number): GpuSpec[] {
  return Array.from({ length: count }, (_, index) => ({ index }));
}

function withUuids(snapshot: ReturnType<typeof gpuSnapshot>, prefix: string): ReturnType<typeof gpuSnapshot> {
  if (snapshot.payload.family !== 'nvidia') throw new Error('nvidia only');
  snapshot.payload.gpus.forEach((gpu, i) => (gpu.uuid = `GPU-${prefix}-${i}`));
  return snapshot;
}

describe('max_devices_per_node (CONTRACT §1.2)', () => {
  it('drops a snapshot listing more devices than a node may hold: no seq taken, the node not kept alive', () => {
    const e = capped(4);
    expect(e.observe(gpuSnapshot({ node: 'g', seq: 1, t: 0 }, gpus(5)), at(0))).toEqual({
      accepted: false,
      dropped: 'too-many-devices',
      transitions: [],
    });
    expect(e.deviceCount()).toBe(0);
    expect(e.nodeEntry('g')).toBeNull();
    // The same seq is still the next one.
    expect(e.observe(gpuSnapshot({ node: 'g', seq: 1, t: 1 }, gpus(4)), at(1)).accepted).toBe(true);
    expect(e.observe(gpuSnapshot({ node: 'g', seq: 2, t: 2 }, gpus(5)), at(2)).dropped).toBe(
      'too-many-devices',
    );
    // The dropped snapshot did not keep it alive: 5 s after seq 1 it is stale.
    e.tick(at(6));
    expect(e.nodeEntry('g')?.agent).toBe('stale');
  });

  it('counts a 310P card by its chips', () => {
    const e = capped(3);
    const snapshot = npuSnapshot({ node: 'p', seq: 1, t: 0 }, [{ npu: 0 }]);
    const card = (id: number): object => ({
      card: id,
      chips: [0, 1].map((chip) => ({ chip, device_id: id * 2 + chip })),
    });
    const cards = { ...snapshot, payload: { family: '310P', cards: [card(0), card(1)] } } as never;
    expect(e.observe(cards, at(0)).dropped).toBe('too-many-devices');
  });

  it('keeps a flooding node within the limit by forgetting the devices it no longer lists', () => {
    const e = capped(8);
    for (let s = 1; s <= 8; s++) {
      const result = e.observe(
        withUuids(gpuSnapshot({ node: 'flood', seq: s, t: s }, gpus(8)), `s${s}`),
        at(s),
      );
      expect(result.accepted).toBe(true);
      expect(e.deviceCount()).toBe(8);
    }
    expect(e.stats().retired).toBe(7 * 8);
    // Everything it holds is what it listed last: nothing device-missing, nothing failed.
    expect(e.nodeEntry('flood')).toBeNull();
  });

  it('forgets left-out devices without a latch first, then those listed longest ago', () => {
    const e = capped(4);
    const base = (seq: number, t: number, specs: GpuSpec[], uuids: string[]) => {
      const snapshot = gpuSnapshot({ node: 'n', seq, t }, specs);
      if (snapshot.payload.family === 'nvidia')
        snapshot.payload.gpus.forEach((gpu, i) => (gpu.uuid = uuids[i] as string));
      return e.observe(snapshot, at(t));
    };
    // A (XID 79: latched), B, C, D; then C and D leave (missing), then A and B leave too.
    base(
      1,
      0,
      [{ index: 0, xids: [{ xid: 79, at: null }] }, { index: 1 }, { index: 2 }, { index: 3 }],
      ['A', 'B', 'C', 'D'],
    );
    base(2, 1, [{ index: 0 }, { index: 1 }], ['A', 'B']);
    base(3, 2, [{ index: 0 }], ['E']);
    // Room for E: one of A, B, C, D goes; C and D (unlatched, listed longest ago) first, C by key.
    const keys = (): string[] =>
      (publishedDocumentSchema.parse(e.document(at(2), publisher)).nodes.n?.npus ?? [])
        .map((d) => d.key)
        .sort();
    expect(keys()).toEqual(['A', 'B', 'D']);
    base(4, 3, [{ index: 0 }, { index: 1 }], ['E', 'F']);
    expect(keys()).toEqual(['A', 'B']);
    base(5, 4, [{ index: 0 }, { index: 1 }, { index: 2 }], ['E', 'F', 'G']);
    // B goes before A: A holds a latched failure.
    expect(keys()).toEqual(['A']);
    expect(e.deviceCount()).toBe(4);
  });

  it('seeds no more devices than a node may hold', () => {
    const e = capped(2);
    const latched = (key: string) => ({
      key,
      id: key,
      resource_id: key,
      kind: 'gpu' as const,
      model: 'H100',
      reasons: ['xid-79'],
      since: new Date(at(0)).toISOString(),
      ecc_errors: 0,
      ecc_uncorrectable: 0,
    });
    e.seed([{ node: 'n', latched: ['a', 'b', 'c', 'd'].map(latched) }], at(1));
    expect(e.deviceCount()).toBe(2);
    expect(e.latched('n').map((d) => d.key)).toEqual(['a', 'b']);
  });
});

describe('an ingest outage never hides a known failure (CONTRACT §5.3)', () => {
  it('summarises stale nodes holding nothing failed or degraded, and lists those that do', () => {
    const e = createEngine(rulesSchema.parse({ degrade_after_s: 2 }));
    const names = Array.from({ length: 10 }, (_, i) => `n${i}`);
    const npus = (name: string) =>
      name === 'n1'
        ? [{ npu: 0, link: 'down' as const, power: 100 }, { npu: 1 }]
        : name === 'n2'
          ? [{ npu: 0, temp: 95 }, { npu: 1 }]
          : [{ npu: 0 }, { npu: 1 }];
    for (let t = 0; t <= 6; t++)
      for (const name of names) e.observe(npuSnapshot({ node: name, seq: t + 1, t }, npus(name)), at(t));
    // n0..n3 go silent; the rest keep posting.
    for (let t = 7; t <= 14; t++)
      for (const name of names.slice(4))
        e.observe(npuSnapshot({ node: name, seq: t + 1, t }, npus(name)), at(t));
    e.tick(at(14));
    const doc = publishedDocumentSchema.parse(e.document(at(14), publisher));
    expect(doc.ingest_degraded).toEqual({ stale_nodes: 4 });
    expect(Object.keys(doc.nodes)).toEqual(['n1', 'n2']);
    expect(doc.nodes.n1?.npus.map((d) => `${d.id}:${d.status}:${d.reason}`)).toEqual([
      'npu0:failed:pcie-link-down',
      'npu1:unknown:agent-unreachable',
    ]);
    // Degraded under the overlay is published unknown (§3.7), but it is listed.
    expect(doc.nodes.n2?.npus.map((d) => `${d.id}:${d.status}`)).toEqual(['npu0:unknown', 'npu1:unknown']);
    expect(e.explain('n0', undefined, at(14))).toMatchObject({ withheld: 'ingest-outage' });
    expect(e.explain('n1', undefined, at(14))).toMatchObject({ withheld: null });
  });
});

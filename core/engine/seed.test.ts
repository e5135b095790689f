import { describe, expect, it } from '@jest/globals';
import { publishedDocumentSchema, type PublishedDocument } from '../../contracts/index.js';
import { createEngine } from './engine.js';
import type { ReloadableEngine } from './api.js';
import { at, npuSnapshot, type NpuSpec } from './testing.js';

const PUB = { identity: 'a', term: 1 };

/** Feeds node `n1` eight healthy NPUs from seq/second `from` to `to`, with `override` for some. */
function feed(
  engine: ReloadableEngine,
  from: number,
  to: number,
  override: (t: number) => Record<number, Partial<NpuSpec>> = () => ({}),
  boot = 'b1',
): void {
  for (let t = from; t <= to; t++) {
    const specs = Array.from({ length: 8 }, (_, npu) => ({
      npu,
      sbe: 0,
      dbe: 0,
      ...override(t)[npu],
    }));
    engine.observe(npuSnapshot({ node: 'n1', boot, seq: t, t }, specs), at(t));
  }
}

const statusOf = (doc: PublishedDocument, npu: string): string =>
  doc.nodes.n1?.npus.find((d) => d.id === npu)?.status ?? 'healthy';

describe('nodeEntry', () => {
  it('is null for a healthy node and for an unknown one, and equals the document entry otherwise', () => {
    const engine = createEngine();
    expect(engine.nodeEntry('n1')).toBeNull();
    feed(engine, 0, 3);
    expect(engine.nodeEntry('n1')).toBeNull();
    feed(engine, 4, 5, () => ({ 2: { link: 'down', power: 100 } }));
    const entry = engine.nodeEntry('n1');
    expect(entry?.npus.map((d) => [d.id, d.status, d.reason])).toEqual([
      ['npu2', 'failed', 'pcie-link-down'],
    ]);
    expect(entry).toEqual(engine.document(at(5), PUB).nodes.n1);
  });
});

describe('removeNode', () => {
  it('takes the node out of the document and the counts, and its deadlines never fire', () => {
    const engine = createEngine();
    feed(engine, 0, 2, () => ({ 1: { link: 'down', power: 100 } }));
    expect(engine.deviceCount()).toBe(8);
    engine.removeNode('n1');
    expect(engine.deviceCount()).toBe(0);
    expect(engine.document(at(3), PUB).nodes).toEqual({});
    expect(engine.tick(at(60))).toEqual([]);
    expect(engine.nodeEntry('n1')).toBeNull();
  });
});

describe('seed from the published document', () => {
  function failedDocument(): { doc: PublishedDocument; source: ReloadableEngine } {
    const source = createEngine();
    feed(source, 0, 10, (t) => ({
      1: { link: t >= 5 ? 'down' : 'up', power: 100 },
      4: { dbe: t >= 6 ? 1 : 0, sbe: t >= 6 ? 1 : 0 },
    }));
    return { doc: source.document(at(10), PUB), source };
  }

  it('restores every failed device of a fresh engine with its since and reason', () => {
    const { doc } = failedDocument();
    expect(statusOf(doc, 'npu1')).toBe('failed');
    expect(statusOf(doc, 'npu4')).toBe('failed');
    const engine = createEngine();
    const changes = engine.seed([{ node: 'n1', entry: doc.nodes.n1 }], at(11));
    expect(changes.map((c) => `${c.npu}:${c.from}>${c.to}:${c.reason}`)).toEqual([
      'npu1:unknown>failed:pcie-link-down',
      'npu4:unknown>failed:ecc-uncorrectable',
    ]);
    const seeded = engine.document(at(11), { identity: 'b', term: 2 });
    expect(publishedDocumentSchema.safeParse(seeded).success).toBe(true);
    for (const id of ['npu1', 'npu4']) {
      const before = doc.nodes.n1?.npus.find((d) => d.id === id);
      const after = seeded.nodes.n1?.npus.find((d) => d.id === id);
      expect({ status: after?.status, since: after?.since, reason: after?.reason }).toEqual({
        status: before?.status,
        since: before?.since,
        reason: before?.reason,
      });
    }
  });

  it('a seeded failure recovers on 5 clean samples; a seeded latch never does, until cleared', () => {
    const { doc } = failedDocument();
    const engine = createEngine();
    engine.seed([{ node: 'n1', entry: doc.nodes.n1 }], at(11));
    // The agent's counters stay where they were (1 double-bit error): no new increase.
    feed(engine, 11, 14, () => ({ 4: { dbe: 1, sbe: 1 } }), 'b1');
    expect(statusOf(engine.document(at(14), PUB), 'npu1')).toBe('failed');
    feed(engine, 15, 15, () => ({ 4: { dbe: 1, sbe: 1 } }));
    const later = engine.document(at(15), PUB);
    expect(statusOf(later, 'npu1')).toBe('healthy');
    feed(engine, 16, 60, () => ({ 4: { dbe: 1, sbe: 1 } }));
    expect(statusOf(engine.document(at(60), PUB), 'npu4')).toBe('failed');
    engine.clear('n1', 'npu4', at(61));
    expect(statusOf(engine.document(at(61), PUB), 'npu4')).toBe('healthy');
  });

  it('an engine that saw the samples up to the document keeps its own state', () => {
    const { doc, source } = failedDocument();
    // A hot standby that saw the same stream, and the device recovered since.
    feed(source, 11, 16, () => ({ 4: { dbe: 1, sbe: 1 } }));
    expect(statusOf(source.document(at(16), PUB), 'npu1')).toBe('healthy');
    expect(source.seed([{ node: 'n1', entry: doc.nodes.n1 }], at(17))).toEqual([]);
    expect(statusOf(source.document(at(17), PUB), 'npu1')).toBe('healthy');
  });

  it('an engine behind the document adopts its failures (a replica after a gap)', () => {
    const { doc } = failedDocument();
    const behind = createEngine();
    feed(behind, 0, 3); // saw the first seconds only
    expect(statusOf(behind.document(at(4), PUB), 'npu1')).toBe('healthy');
    const changes = behind.seed([{ node: 'n1', entry: doc.nodes.n1 }], at(11));
    expect(changes.map((c) => `${c.npu}:${c.to}`).sort()).toEqual(['npu1:failed', 'npu4:failed']);
  });

  it('a seeded node that never reports again goes stale, and its failure stays failed', () => {
    const { doc } = failedDocument();
    const engine = createEngine();
    engine.seed([{ node: 'n1', entry: doc.nodes.n1 }], at(11));
    const stale = engine.tick(at(16));
    expect(stale).toEqual([]); // only failed devices are known, and failed stays failed
    const later = engine.document(at(16), PUB);
    expect(later.nodes.n1?.agent).toBe('stale');
    expect(statusOf(later, 'npu1')).toBe('failed');
  });
});

describe('latched failures recorded on the Node', () => {
  it('round-trip: recorded by one engine, seeded into another, cleared by reset counters only', () => {
    const source = createEngine();
    feed(source, 0, 8, (t) => ({ 3: { dbe: t >= 4 ? 2 : 0, sbe: t >= 4 ? 7 : 0 } }));
    const records = source.latched('n1');
    expect(records).toMatchObject([
      {
        key: '0000:C4:00.0',
        id: 'npu3',
        resource_id: 'Ascend910-3',
        kind: 'npu',
        reasons: ['ecc-uncorrectable'],
        since: new Date(at(4)).toISOString(),
        ecc_errors: 9,
        ecc_uncorrectable: 2,
      },
    ]);
    const restarted = createEngine();
    restarted.seed([{ node: 'n1', latched: records }], at(100));
    feed(restarted, 100, 110, () => ({ 3: { dbe: 2, sbe: 7 } }));
    expect(statusOf(restarted.document(at(110), PUB), 'npu3')).toBe('failed');
    // An agent rollout (new boot, same counters) is no repair...
    feed(restarted, 111, 120, () => ({ 3: { dbe: 2, sbe: 7 } }), 'b2');
    expect(statusOf(restarted.document(at(120), PUB), 'npu3')).toBe('failed');
    // ...a driver reload that reset the counters is.
    feed(restarted, 121, 130, () => ({ 3: { dbe: 0, sbe: 0 } }), 'b3');
    expect(statusOf(restarted.document(at(130), PUB), 'npu3')).toBe('healthy');
    expect(restarted.latched('n1')).toEqual([]);
  });

  it('a record older than what the engine sampled since does not re-latch a device it saw healthy', () => {
    const engine = createEngine();
    feed(engine, 0, 20);
    const stale = {
      key: '0000:C1:00.0',
      id: 'npu0',
      resource_id: 'Ascend910-0',
      kind: 'npu' as const,
      model: '910B',
      reasons: ['ecc-uncorrectable'],
      since: new Date(at(5)).toISOString(),
      ecc_errors: 0,
      ecc_uncorrectable: 0,
    };
    expect(engine.seed([{ node: 'n1', latched: [stale] }], at(21))).toEqual([]);
  });
});

describe('census', () => {
  it('counts devices by family and published status, and stale and unobserved nodes', () => {
    const engine = createEngine();
    engine.setKnownNodes(['n1', 'n2']);
    feed(engine, 0, 2, () => ({ 0: { link: 'down', power: 100 } }));
    const census = engine.census();
    expect(census.devices.sort((a, b) => a.status.localeCompare(b.status))).toEqual([
      { family: '910B', status: 'failed', count: 1 },
      { family: '910B', status: 'healthy', count: 7 },
    ]);
    expect({ nodes: census.nodes, stale: census.stale, unobserved: census.unobserved }).toEqual({
      nodes: 1,
      stale: 0,
      unobserved: 1,
    });
    engine.tick(at(10));
    expect(engine.census().stale).toBe(1);
  });
});

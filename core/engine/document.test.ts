import { describe, expect, it } from '@jest/globals';
import { publishedDocumentSchema, rulesSchema } from '../../contracts/index.js';
import { createEngine } from './index.js';
import { compareText, utf8Length } from './document.js';
import { at, npuSnapshot } from './testing.js';

const publisher = { identity: 'ctl-1', term: 7 };

describe('published document', () => {
  it('lists only nodes with trouble, only their troubled devices, and unobserved known nodes', () => {
    const e = createEngine();
    e.setKnownNodes(['a', 'b', 'c', 'z']);
    e.observe(
      npuSnapshot({ node: 'a', seq: 1, t: 0 }, [
        { npu: 0 },
        { npu: 1, link: 'down', power: 100 },
        { npu: 10, health: 'Warning' },
        { npu: 2, health: 'Warning' },
      ]),
      at(0),
    );
    e.observe(npuSnapshot({ node: 'b', seq: 1, t: 0 }, [{ npu: 0 }]), at(0));
    const doc = publishedDocumentSchema.parse(e.document(at(1), publisher));
    expect(doc).toMatchObject({
      version: '3.0',
      timestamp: new Date(at(1)).toISOString(),
      publisher,
      node_count: 4,
      unobserved: ['c', 'z'],
      cluster_summary: { total: 5, healthy: 2, degraded: 0, failed: 1, unknown: 2 },
    });
    expect(Object.keys(doc.nodes)).toEqual(['a']);
    expect(doc.nodes.a?.summary).toEqual({ total: 4, healthy: 1, degraded: 0, failed: 1, unknown: 2 });
    expect(doc.nodes.a?.npus.map((d) => `${d.id}:${d.status}:${d.signals.join()}`)).toEqual([
      'npu1:failed:',
      'npu2:unknown:health-warning',
      'npu10:unknown:health-warning',
    ]);
    expect(doc.ingest_degraded).toBeUndefined();
    expect(doc.omitted_nodes).toBeUndefined();
  });

  it('reports ingest_degraded instead of listing stale nodes when more than 20% are stale', () => {
    const e = createEngine();
    const names = Array.from({ length: 10 }, (_, i) => `n${i}`);
    for (const name of names) e.observe(npuSnapshot({ node: name, seq: 1, t: 0 }, [{ npu: 0 }]), at(0));
    // First two of ten go silent (20%: still listed), then a third (30%: an ingest outage).
    for (const name of names.slice(2))
      e.observe(npuSnapshot({ node: name, seq: 2, t: 6 }, [{ npu: 0 }]), at(6));
    e.tick(at(6));
    const twenty = publishedDocumentSchema.parse(e.document(at(6), publisher));
    expect(Object.keys(twenty.nodes)).toEqual(['n0', 'n1']);
    expect(twenty.nodes.n0?.agent).toBe('stale');
    expect(twenty.ingest_degraded).toBeUndefined();
    for (const name of names.slice(2).filter((n) => n !== 'n2'))
      e.observe(npuSnapshot({ node: name, seq: 3, t: 11.5 }, [{ npu: 0 }]), at(11.5));
    e.tick(at(11.5));
    const thirty = publishedDocumentSchema.parse(e.document(at(11.5), publisher));
    expect(thirty.ingest_degraded).toEqual({ stale_nodes: 3 });
    expect(thirty.nodes).toEqual({});
    expect(thirty.cluster_summary.unknown).toBe(3);
  });

  it('lists a silent node of a small cluster instead of calling it an ingest outage', () => {
    const e = createEngine();
    for (const name of ['a', 'b']) e.observe(npuSnapshot({ node: name, seq: 1, t: 0 }, [{ npu: 0 }]), at(0));
    e.observe(npuSnapshot({ node: 'b', seq: 2, t: 6 }, [{ npu: 0 }]), at(6));
    e.tick(at(6));
    // 50% of nodes are stale, but one node is a broken node, not an ingest outage.
    const doc = publishedDocumentSchema.parse(e.document(at(6), publisher));
    expect(doc.ingest_degraded).toBeUndefined();
    expect(doc.nodes.a?.agent).toBe('stale');
    expect(doc.nodes.a?.npus[0]?.status).toBe('unknown');
  });

  it('cuts the least severe nodes beyond the byte budget and counts them', () => {
    const e = createEngine(rulesSchema.parse({ publish: { max_bytes: 4096 } }));
    for (let i = 0; i < 30; i++) {
      const failing = i % 10 === 0;
      e.observe(
        npuSnapshot({ node: `node-${i}`, seq: 1, t: 0 }, [
          { npu: 0, health: 'Warning', link: failing ? 'down' : 'up', power: 100 },
        ]),
        at(0),
      );
    }
    const doc = publishedDocumentSchema.parse(e.document(at(0), publisher));
    expect(utf8Length(JSON.stringify(doc))).toBeLessThanOrEqual(4096);
    expect(doc.omitted_nodes).toBeGreaterThan(0);
    expect(Object.keys(doc.nodes).length + (doc.omitted_nodes ?? 0)).toBe(30);
    for (const failed of ['node-0', 'node-10', 'node-20']) expect(doc.nodes[failed]?.summary.failed).toBe(1);
  });

  it('renders equal state as byte-identical documents', () => {
    const build = (order: string[]): string => {
      const e = createEngine();
      for (const n of order)
        e.observe(npuSnapshot({ node: n, seq: 1, t: 0 }, [{ npu: 0, health: 'Alarm' }]), at(0));
      return JSON.stringify(e.document(at(1), publisher));
    };
    expect(build(['b', 'a', 'c'])).toBe(build(['c', 'b', 'a']));
  });
});

describe('helpers', () => {
  it.each([
    ['npu2', 'npu10', -1],
    ['npu10', 'npu2', 1],
    ['npu1', 'npu1-1', -1],
    ['gpu0', 'npu0', -1],
    ['a', 'a', 0],
  ])('compareText(%s, %s) has sign %d', (a, b, sign) => {
    expect(Math.sign(compareText(a, b))).toBe(sign);
  });

  it('counts UTF-8 bytes', () => {
    expect(['a', 'é', '€', '😀'].map(utf8Length)).toEqual([1, 2, 3, 4]);
  });
});

import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { publishedDocumentSchema, rulesSchema, type PublishedDocument } from '../../contracts/index.js';
import { createEngine, type ReloadableEngine } from './index.js';
import { utf8Length } from './document.js';
import { at, npuSnapshot, type NpuSpec } from './testing.js';

const publisher = { identity: 'ctl-1', term: 7 };
const down = (npu: number): NpuSpec => ({ npu, link: 'down', power: 100 });

/** `devices` NPUs of `node`, every one with its link down (failed), in one snapshot at t=0. */
function failAll(e: ReloadableEngine, node: string, devices: number): void {
  e.observe(
    npuSnapshot(
      { node, seq: 1, t: 0 },
      Array.from({ length: devices }, (_, i) => down(i)),
    ),
    at(0),
  );
}

function engine(maxBytes: number, overrides: Record<string, unknown> = {}): ReloadableEngine {
  return createEngine(
    rulesSchema.parse({ degrade_after_s: 0, publish: { max_bytes: maxBytes }, ...overrides }),
  );
}

function render(e: ReloadableEngine, seconds = 0): PublishedDocument {
  return publishedDocumentSchema.parse(e.document(at(seconds), publisher));
}

const size = (doc: PublishedDocument): number => utf8Length(JSON.stringify(doc));

/** The document's size with no budget (what the steps start from). */
function unbudgeted(feed: (e: ReloadableEngine) => void): number {
  const e = engine(100 * 1024 * 1024);
  feed(e);
  return size(render(e));
}

describe('the byte budget (CONTRACT §5.3)', () => {
  /**
   * node-f: four failed devices and two unknown ones; node-s: a signal only; node-u: unknown
   * only; node-w0..: `unknownNodes` more of those.
   */
  const fleet = (e: ReloadableEngine, unknownNodes = 0): void => {
    const warn = (npu: number): NpuSpec => ({ npu, health: 'Warning' });
    e.observe(
      npuSnapshot({ node: 'node-f', seq: 1, t: 0 }, [down(0), down(1), down(2), down(3), warn(4), warn(5)]),
      at(0),
    );
    e.observe(npuSnapshot({ node: 'node-s', seq: 1, t: 0 }, [{ npu: 0, sbe: 0 }]), at(0));
    e.observe(npuSnapshot({ node: 'node-s', seq: 2, t: 1 }, [{ npu: 0, sbe: 2 }]), at(1));
    e.observe(
      npuSnapshot({ node: 'node-u', seq: 1, t: 1 }, [
        { npu: 0, health: 'Warning' },
        { npu: 1, health: 'Warning' },
      ]),
      at(1),
    );
    for (let i = 0; i < unknownNodes; i++)
      e.observe(npuSnapshot({ node: `node-w${i}`, seq: 1, t: 1 }, [{ npu: 0, health: 'Warning' }]), at(1));
  };

  it('drops who holds each device in the first step, before any device, keeping the engine’s own entry', () => {
    const holders = {
      'Ascend910-0': Array.from({ length: 32 }, (_, i) => `team-${i}/pod-${'x'.repeat(40)}`),
    };
    const feed = (e: ReloadableEngine): void => {
      e.observe(npuSnapshot({ node: 'node-h', seq: 1, t: 0, holders }, [down(0), down(1)]), at(0));
    };
    const full = unbudgeted(feed);
    const e = engine(full - 100);
    feed(e);
    const doc = render(e);
    expect(doc.nodes['node-h']?.npus.map((x) => [x.id, x.pods])).toEqual([
      ['npu0', undefined],
      ['npu1', undefined],
    ]);
    expect(doc.nodes['node-h']?.omitted_devices).toBeUndefined();
    expect(e.nodeEntry('node-h')?.npus[0]?.pods).toHaveLength(32);
  });

  it('drops signals first: a node listed for a signal only leaves, and is not counted as omitted', () => {
    const full = unbudgeted(fleet);
    const e = engine(full - 1, { degrade_after_s: 60 });
    fleet(e);
    const doc = render(e, 1);
    expect(size(doc)).toBeLessThanOrEqual(full - 1);
    expect(Object.keys(doc.nodes)).toEqual(['node-f', 'node-u']);
    expect(doc.omitted_nodes).toBeUndefined();
    expect(doc.nodes['node-f']?.npus.every((d) => d.signals.length === 0)).toBe(true);
    expect(doc.nodes['node-f']?.npus[0]?.temperature_c).toBe(50); // readings stay
  });

  it('then the devices of failing nodes that are not failed or degraded, then a share of the failed ones, then whole nodes', () => {
    // Scanning the budget down, each step first happens at a smaller budget than the one before.
    const crowd = (e: ReloadableEngine): void => fleet(e, 6);
    const full = unbudgeted(crowd);
    const first: Record<string, number> = {};
    for (let budget = full; budget >= 1024; budget -= 16) {
      const e = engine(budget, { degrade_after_s: 60 });
      crowd(e);
      const doc = render(e, 1);
      expect(size(doc)).toBeLessThanOrEqual(budget);
      const f = doc.nodes['node-f'];
      const seen = {
        signals: doc.nodes['node-s'] === undefined,
        devices: (f?.omitted_devices ?? 0) > 0,
        nodes: (doc.omitted_nodes ?? 0) > 0,
        failed: (f?.npus.filter((d) => d.status === 'failed').length ?? 0) < 4,
      };
      for (const [step, happened] of Object.entries(seen)) if (happened) first[step] ??= budget;
    }
    const order = ['signals', 'devices', 'failed', 'nodes'];
    expect(Object.keys(first).sort()).toEqual([...order].sort());
    for (let i = 1; i < order.length; i++)
      expect(first[order[i] as string]).toBeLessThan(first[order[i - 1] as string] as number);
  });

  it('gives every failing node a fair share: one node with many failures cannot push the others out', () => {
    const feed = (e: ReloadableEngine): void => {
      failAll(e, 'flood', 32);
      for (const node of ['a', 'b', 'c'])
        e.observe(npuSnapshot({ node, seq: 1, t: 0 }, [{ npu: 0 }, down(1)]), at(0));
    };
    const full = unbudgeted(feed);
    const e = engine(Math.floor(full / 3));
    feed(e);
    const doc = render(e);
    expect(size(doc)).toBeLessThanOrEqual(Math.floor(full / 3));
    expect(doc.omitted_nodes).toBeUndefined();
    for (const node of ['a', 'b', 'c']) {
      expect(doc.nodes[node]?.npus.map((d) => `${d.id}:${d.status}`)).toEqual(['npu1:failed']);
      expect(doc.nodes[node]?.omitted_devices).toBeUndefined();
    }
    const flood = doc.nodes.flood;
    expect(flood?.summary.failed).toBe(32);
    expect(flood?.npus.length).toBeGreaterThan(1);
    expect((flood?.npus.length ?? 0) + (flood?.omitted_devices ?? 0)).toBe(32);
    // The largest share that fits: one more device each would not.
    expect(size(doc) + utf8Length(JSON.stringify(flood?.npus[0])) + 1).toBeGreaterThan(Math.floor(full / 3));
  });

  it('keeps failed devices before degraded ones in a share', () => {
    const feed = (e: ReloadableEngine): void => {
      const npus = [
        { npu: 0, health: 'Warning' },
        { npu: 1, health: 'Warning' },
        { npu: 2, health: 'Warning' },
        down(3),
      ];
      e.observe(npuSnapshot({ node: 'mixed', seq: 1, t: 0 }, npus), at(0));
      e.observe(npuSnapshot({ node: 'mixed', seq: 2, t: 1 }, npus), at(1));
    };
    let trimmed = 0;
    for (let budget = unbudgeted(feed); budget >= 1024; budget -= 32) {
      const e = engine(budget);
      feed(e);
      const entry = render(e, 1).nodes.mixed;
      expect(entry?.summary).toMatchObject({ failed: 1, degraded: 3 });
      if ((entry?.omitted_devices ?? 0) === 0) continue;
      trimmed++;
      if (entry?.npus.length) expect(entry.npus.map((d) => d.status)).toContain('failed');
    }
    expect(trimmed).toBeGreaterThan(0);
  });

  it('keeps one failed device of every failing node while that fits, cutting the least severe nodes first', () => {
    // Reviewer's case: many nodes with one failure each and many other devices listed.
    const feed = (e: ReloadableEngine, nodes: number): void => {
      for (let n = 0; n < nodes; n++)
        e.observe(
          npuSnapshot({ node: `n${String(n).padStart(3, '0')}`, seq: 1, t: 0 }, [
            down(0),
            ...Array.from({ length: 7 }, (_, i) => ({ npu: i + 1, health: 'Warning' })),
          ]),
          at(0),
        );
    };
    for (const budget of [4096, 8192, 20_000]) {
      const e = engine(budget, { degrade_after_s: 60 });
      feed(e, 60);
      const doc = render(e);
      expect(size(doc)).toBeLessThanOrEqual(budget);
      const listed = Object.values(doc.nodes);
      expect(listed.length).toBeGreaterThan(0);
      // Every listed node shows its failed device; what did not fit is cut whole and counted.
      for (const entry of listed) expect(entry.npus.map((d) => d.status)).toContain('failed');
      expect(listed.length + (doc.omitted_nodes ?? 0)).toBe(60);
    }
  });

  it('lists a node holding nothing failed with the others rather than cutting it, while its entry fits', () => {
    const feed = (e: ReloadableEngine): void => {
      failAll(e, 'flood', 32);
      e.observe(npuSnapshot({ node: 'quiet', seq: 1, t: 0 }, [{ npu: 0 }, { npu: 1 }]), at(0));
      e.tick(at(6)); // quiet goes stale: unknown, nothing held
      e.observe(
        npuSnapshot(
          { node: 'flood', seq: 2, t: 6 },
          Array.from({ length: 32 }, (_, i) => down(i)),
        ),
        at(6),
      );
    };
    const full = unbudgeted(feed);
    const e = engine(Math.floor(full / 2));
    feed(e);
    const doc = render(e, 6);
    expect(doc.omitted_nodes).toBeUndefined();
    expect(doc.nodes.quiet?.agent).toBe('stale');
    expect(doc.nodes.flood?.omitted_devices).toBeGreaterThan(0);
  });

  it('cuts whole nodes, least severe first, only when no share fits', () => {
    const e = engine(1024);
    for (let i = 0; i < 20; i++)
      e.observe(
        npuSnapshot(
          { node: `n${String(i).padStart(2, '0')}`, seq: 1, t: 0 },
          i === 7 ? [down(0), down(1)] : [down(0)],
        ),
        at(0),
      );
    const doc = render(e);
    expect(size(doc)).toBeLessThanOrEqual(1024);
    expect(doc.omitted_nodes).toBeGreaterThan(0);
    expect(doc.nodes.n07?.summary.failed).toBe(2); // the most severe node is the last to go
    expect(Object.keys(doc.nodes).length + (doc.omitted_nodes ?? 0)).toBe(20);
  });

  it('always fits when the document without nodes fits, never loses a failed device silently, and stays valid', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            devices: fc.integer({ min: 1, max: 12 }),
            failed: fc.integer({ min: 0, max: 12 }),
            warning: fc.integer({ min: 0, max: 12 }),
            stale: fc.boolean(),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        fc.integer({ min: 1024, max: 40_000 }),
        (nodes, maxBytes) => {
          const e = engine(maxBytes, {
            degrade_after_s: 0,
            publish: { max_bytes: maxBytes, ingest_degraded_min_nodes: 100 },
          });
          nodes.forEach((spec, n) => {
            const npus = Array.from({ length: spec.devices }, (_, i): NpuSpec =>
              i < spec.failed
                ? down(i)
                : i < spec.failed + spec.warning
                  ? { npu: i, health: 'Warning' }
                  : { npu: i },
            );
            e.observe(
              npuSnapshot({ node: `node-${n}`, seq: 1, t: spec.stale ? 0 : 10 }, npus),
              at(spec.stale ? 0 : 10),
            );
            e.observe(
              npuSnapshot({ node: `node-${n}`, seq: 2, t: spec.stale ? 1 : 20 }, npus),
              at(spec.stale ? 1 : 20),
            );
          });
          e.tick(at(20));
          const doc = render(e, 20);
          expect(size(doc)).toBeLessThanOrEqual(maxBytes);
          nodes.forEach((spec, n) => {
            const entry = doc.nodes[`node-${n}`];
            const failed = Math.min(spec.failed, spec.devices);
            if (failed === 0) return;
            // A node with a failed device is listed with all of them, or says what it left out.
            if (entry === undefined) expect(doc.omitted_nodes).toBeGreaterThan(0);
            else {
              const listed = entry.npus.filter((d) => d.status === 'failed').length;
              expect(entry.summary.failed).toBe(failed);
              expect(listed).toBeGreaterThan(0); // a listed failing node always shows a failed device
              if (listed < failed) expect(entry.omitted_devices).toBeGreaterThanOrEqual(failed - listed);
            }
          });
        },
      ),
      { numRuns: 60 },
    );
  });
});

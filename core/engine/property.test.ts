import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { publishedDocumentSchema } from '../../contracts/published.js';
import type { Snapshot } from '../../contracts/snapshot.js';
import { runReplay } from '../../cli/replay.js';
import { createEngine, type Transition } from './index.js';
import { at, gpuSnapshot, npuSnapshot, type NpuSpec } from './testing.js';

const RUNS = { numRuns: 60 };

/** A random non-critical sample of chip 0 (temperature, ECC, warning health, warning codes). */
const benignNpu = fc.record({
  npu: fc.constant(0),
  temp: fc.oneof(fc.constant(null), fc.double({ min: 20, max: 100, noNaN: true })),
  sbe: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 5 })),
  health: fc.constantFrom('OK', 'Warning', 'Alarm', 'UNKNOWN'),
  codes: fc.constantFrom([], ['80E00209'], ['81078603', '12345678']),
}) as fc.Arbitrary<NpuSpec>;

/** A sample carrying one critical reason, with its expected reason names. */
const criticalNpu: fc.Arbitrary<{ spec: NpuSpec; reasons: string[] }> = fc.constantFrom(
  { spec: { npu: 0, link: 'down', power: 100 }, reasons: ['pcie-link-down'] },
  { spec: { npu: 0, link: 'down', power: null }, reasons: ['npu-offline'] },
  { spec: { npu: 0, health: 'Critical' }, reasons: ['health-critical'] },
  { spec: { npu: 0, codes: ['80E18402'] }, reasons: ['fault-code'] },
  {
    spec: { npu: 0, present: false, temp: null, power: null, sbe: null, dbe: null, link: null },
    reasons: ['device-missing'],
  },
  { spec: { npu: 0, dbe: 999 }, reasons: ['ecc-uncorrectable'] },
);

function feed(snapshots: Snapshot[]): { transitions: Transition[]; engine: ReturnType<typeof createEngine> } {
  const engine = createEngine();
  const transitions: Transition[] = [];
  for (const s of snapshots) transitions.push(...engine.observe(s, Date.parse(s.collected_at)).transitions);
  return { transitions, engine };
}

describe('properties of the engine', () => {
  it('never degrades a device on isolated single-sample spikes', () => {
    // Each hot sample is followed by at least 4 cool ones: at most one hot sample per window of 5.
    const trace = fc.array(
      fc.record({
        spike: fc.double({ min: 85.01, max: 150, noNaN: true }),
        gap: fc.integer({ min: 4, max: 12 }),
      }),
      { minLength: 1, maxLength: 40 },
    );
    fc.assert(
      fc.property(trace, (bursts) => {
        const temps: number[] = [];
        for (const { spike, gap } of bursts) temps.push(spike, ...Array<number>(gap).fill(60));
        const { transitions } = feed(
          temps.map((temp, t) => npuSnapshot({ seq: t + 1, t }, [{ npu: 0, temp }])),
        );
        expect(transitions.map((x) => x.to)).toEqual(['healthy']);
      }),
      RUNS,
    );
  });

  it('fails a device in the same sample as any critical reason, whatever came before', () => {
    fc.assert(
      // At least one sample first: an uncorrectable count needs a baseline to increase from.
      fc.property(fc.array(benignNpu, { minLength: 1, maxLength: 80 }), criticalNpu, (prefix, critical) => {
        const snaps = prefix.map((spec, t) => npuSnapshot({ seq: t + 1, t }, [spec]));
        const { engine } = feed(snaps);
        const t = prefix.length;
        engine.observe(npuSnapshot({ seq: t + 1, t }, [{ sbe: 0, dbe: 0, ...critical.spec }]), at(t));
        const doc = publishedDocumentSchema.parse(engine.document(at(t), { identity: 'p', term: 0 }));
        const device = doc.nodes['node-a']?.npus[0];
        expect(device?.status).toBe('failed');
        expect(critical.reasons).toContain(device?.reason);
      }),
      RUNS,
    );
  });

  it('renders a valid document, with consistent counts, after any sequence of events', () => {
    const event = fc.oneof(
      fc.record({
        kind: fc.constant('npu' as const),
        node: fc.constantFrom('n1', 'n2', 'n3'),
        dt: fc.integer({ min: 0, max: 8 }),
        cached: fc.boolean(),
        npus: fc.array(
          fc.oneof(
            benignNpu,
            criticalNpu.map((c) => c.spec),
          ),
          { minLength: 1, maxLength: 3 },
        ),
      }),
      fc.record({
        kind: fc.constant('gpu' as const),
        dt: fc.integer({ min: 0, max: 8 }),
        xid: fc.constantFrom(48, 63, 79, 13),
        lost: fc.boolean(),
      }),
      fc.record({
        kind: fc.constant('ready' as const),
        node: fc.constantFrom('n1', 'n2', 'g1'),
        ready: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('clear' as const), node: fc.constantFrom('n1', 'g1') }),
      fc.record({ kind: fc.constant('tick' as const), dt: fc.integer({ min: 0, max: 20 }) }),
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 60 }), (events) => {
        const engine = createEngine();
        engine.setKnownNodes(['n1', 'n2', 'n3', 'g1', 'n9']);
        let t = 0;
        let seq = 0;
        const check = (): void => {
          const doc = publishedDocumentSchema.parse(engine.document(at(t), { identity: 'p', term: 3 }));
          const c = doc.cluster_summary;
          expect(c.total).toBe(c.healthy + c.degraded + c.failed + c.unknown);
          expect(c.total).toBe(engine.deviceCount());
          for (const node of Object.values(doc.nodes)) {
            // Only devices not healthy or with a signal are listed, and reason is the first reason.
            expect(node.npus.every((d) => d.status !== 'healthy' || d.signals.length > 0)).toBe(true);
            expect(node.npus.every((d) => d.reason === null || d.reasons.includes(d.reason))).toBe(true);
            expect(node.summary.total).toBe(
              node.summary.healthy + node.summary.degraded + node.summary.failed + node.summary.unknown,
            );
          }
          expect(doc.unobserved).toEqual(doc.unobserved.slice().sort());
        };
        for (const e of events) {
          if (e.kind === 'npu') {
            t += e.dt;
            engine.observe(
              npuSnapshot(
                { node: e.node, seq: ++seq, t, cached: e.cached },
                e.npus.map((n, i) => ({ ...n, npu: i })),
              ),
              at(t),
            );
          } else if (e.kind === 'gpu') {
            t += e.dt;
            engine.observe(
              gpuSnapshot({ node: 'g1', seq: ++seq, t }, [
                { index: 0, xids: [{ xid: e.xid, at: null }] },
                { index: 1, lost: e.lost },
              ]),
              at(t),
            );
          } else if (e.kind === 'ready') engine.setNodeReady(e.node, e.ready, at(t));
          else if (e.kind === 'clear') engine.clear(e.node, undefined, at(t));
          else {
            t += e.dt;
            engine.tick(at(t));
          }
          check();
        }
      }),
      RUNS,
    );
  });

  it('replays deterministically, whatever the interleaving of different nodes', () => {
    const nodeTrace = fc.array(
      fc.tuple(
        fc.integer({ min: 0, max: 7 }),
        fc.oneof(
          benignNpu,
          criticalNpu.map((c) => c.spec),
        ),
        fc.integer({ min: 0, max: 3 }),
      ),
      { minLength: 1, maxLength: 25 },
    );
    fc.assert(
      fc.property(
        fc.array(nodeTrace, { minLength: 2, maxLength: 4 }),
        fc.infiniteStream(fc.nat()),
        (traces, picks) => {
          const perNode = traces.map((trace, n) => {
            let t = 0;
            return trace.map(([dt, spec, seqJump], i) => {
              t += dt;
              // seqJump 0 repeats the previous seq: a duplicate for dedup to drop.
              return npuSnapshot({ node: `node-${n}`, seq: i + (seqJump === 0 ? 0 : 1), t: t + n / 10 }, [
                spec,
              ]);
            });
          });
          const sorted = perNode.flat();
          // A random interleaving that keeps each node's own order.
          const queues = perNode.map((q) => [...q]);
          const mixed: Snapshot[] = [];
          const it = picks[Symbol.iterator]();
          while (queues.some((q) => q.length > 0)) {
            const open = queues.filter((q) => q.length > 0);
            const q = open[(it.next().value as number) % open.length] as Snapshot[];
            mixed.push(q.shift() as Snapshot);
          }
          const a = runReplay(sorted);
          const b = runReplay(mixed);
          expect(b.transitions).toEqual(a.transitions);
          expect(JSON.stringify(b.document)).toBe(JSON.stringify(a.document));
          expect(runReplay(mixed).transitions).toEqual(b.transitions);
        },
      ),
      RUNS,
    );
  });
});

describe('labelled traces from small generators', () => {
  /** `seconds` of samples above 85 °C, one per second: degraded iff high-temp (from t=2) lasted 60 s. */
  it('sustained heat: degraded iff hot for at least 62 one-second samples after the first', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 140 }), (seconds) => {
        const { transitions } = feed(
          Array.from({ length: seconds + 1 }, (_, t) =>
            npuSnapshot({ seq: t + 1, t }, [{ npu: 0, temp: 95 }]),
          ),
        );
        const label = seconds >= 62 ? 'degraded' : 'healthy';
        expect(transitions.at(-1)?.to).toBe(label);
      }),
      RUNS,
    );
  });

  /** A link-down sample followed by `clean` clean samples: healthy iff clean ≥ 5. */
  it('recovery: healthy iff at least 5 clean samples follow the failure', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 12 }), (clean) => {
        const snaps = [npuSnapshot({ seq: 1, t: 0 }, [{ npu: 0, link: 'down', power: 50 }])];
        for (let t = 1; t <= clean; t++) snaps.push(npuSnapshot({ seq: t + 1, t }, [{ npu: 0 }]));
        const { transitions } = feed(snaps);
        expect(transitions.at(-1)?.to).toBe(clean >= 5 ? 'healthy' : 'failed');
        expect(transitions.filter((x) => x.to === 'healthy')).toHaveLength(clean >= 5 ? 1 : 0);
      }),
      RUNS,
    );
  });

  /** A silence of `gap` ms between two samples: stale iff gap > 5000 (a sample at exactly 5 s is in time). */
  it('silence: agent-unreachable iff the gap exceeds 5 s, stamped at last_seen + 5 s', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 12000 }), (gap) => {
        const { transitions } = feed([
          npuSnapshot({ seq: 1, t: 0 }, [{ npu: 0 }]),
          npuSnapshot({ seq: 2, t: gap / 1000 }, [{ npu: 0 }]),
        ]);
        const stale = transitions.filter((x) => x.reason === 'agent-unreachable');
        expect(stale.map((x) => x.at)).toEqual(gap > 5000 ? [new Date(at(5)).toISOString()] : []);
      }),
      RUNS,
    );
  });
});

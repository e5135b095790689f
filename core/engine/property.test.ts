import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { publishedDocumentSchema, rulesSchema, type Snapshot } from '../../contracts/index.js';
import { createEngine, parseTimestamp, type Transition } from './index.js';
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

  it('renders a valid document, reasons null exactly when healthy, overlays on time, after any sequence of events', () => {
    const event = fc.oneof(
      fc.record({
        kind: fc.constant('npu' as const),
        node: fc.constantFrom('n1', 'n2', 'n3'),
        dt: fc.integer({ min: 0, max: 8000 }),
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
        dt: fc.integer({ min: 0, max: 8000 }),
        xid: fc.constantFrom(48, 63, 79, 13),
        lost: fc.boolean(),
      }),
      fc.record({
        kind: fc.constant('ready' as const),
        node: fc.constantFrom('n1', 'n2', 'g1'),
        ready: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('clear' as const), node: fc.constantFrom('n1', 'g1') }),
      fc.record({ kind: fc.constant('tick' as const), dt: fc.integer({ min: 0, max: 20000 }) }),
      fc.record({
        kind: fc.constant('rules' as const),
        stale: fc.constantFrom(2, 5, 9),
        collector: fc.constantFrom(3, 10, 20),
      }),
    );
    // Twenty known nodes, so three stale ones never read as an ingest outage (every overlay is listed).
    const known = ['n1', 'n2', 'n3', 'g1', ...Array.from({ length: 16 }, (_, i) => `idle-${i}`)];
    fc.assert(
      fc.property(fc.array(event, { maxLength: 60 }), (events) => {
        const engine = createEngine();
        engine.setKnownNodes(known);
        const model = new OverlayModel();
        let ms = 0;
        let seq = 0;
        const lastFresh = new Map<string, number>();
        const check = (transitions: Transition[]): void => {
          for (const x of transitions) expect(x.reason === null).toBe(x.to === 'healthy');
          const doc = publishedDocumentSchema.parse(
            engine.document(at(ms / 1000), { identity: 'p', term: 3 }),
          );
          const c = doc.cluster_summary;
          expect(c.total).toBe(c.healthy + c.degraded + c.failed + c.unknown);
          expect(c.total).toBe(engine.deviceCount());
          for (const name of known) expect(doc.nodes[name]?.agent ?? 'ok').toBe(model.agent(name));
          for (const node of Object.values(doc.nodes)) {
            for (const d of node.npus) {
              // Listed devices are not healthy or have a signal; a healthy one has no reason,
              // any other one always has one (active, or the cause that put it there).
              expect(d.status !== 'healthy' || d.signals.length > 0).toBe(true);
              expect(d.reason === null).toBe(d.status === 'healthy');
              expect(d.signals.every((x) => d.reasons.includes(x))).toBe(true);
            }
            expect(node.summary.total).toBe(
              node.summary.healthy + node.summary.degraded + node.summary.failed + node.summary.unknown,
            );
          }
          expect(doc.unobserved).toEqual(doc.unobserved.slice().sort());
        };
        const observe = (snapshot: Snapshot): Transition[] => {
          model.observe(snapshot.node, snapshot.cached, at(ms / 1000));
          return engine.observe(snapshot, at(ms / 1000)).transitions;
        };
        for (const e of events) {
          let out: Transition[] = [];
          if (e.kind === 'npu') {
            ms += e.dt;
            // A cached resend carries the collected_at of the node's last fresh sample (CONTRACT §1).
            const t = e.cached ? (lastFresh.get(e.node) ?? ms) / 1000 : ms / 1000;
            if (!e.cached) lastFresh.set(e.node, ms);
            const npus = e.npus.map((n, i) => ({ ...n, npu: i }));
            out = observe(npuSnapshot({ node: e.node, seq: ++seq, t, cached: e.cached }, npus));
          } else if (e.kind === 'gpu') {
            ms += e.dt;
            const gpus = [
              { index: 0, xids: [{ xid: e.xid, at: null }] },
              { index: 1, lost: e.lost },
            ];
            out = observe(gpuSnapshot({ node: 'g1', seq: ++seq, t: ms / 1000 }, gpus));
          } else if (e.kind === 'ready') out = engine.setNodeReady(e.node, e.ready, at(ms / 1000));
          else if (e.kind === 'clear') out = engine.clear(e.node, undefined, at(ms / 1000));
          else if (e.kind === 'rules') {
            const overlays = { agent_unreachable_s: e.stale, collector_error_s: e.collector };
            engine.setRules(rulesSchema.parse({ overlays }));
            model.setRules(e.stale * 1000, e.collector * 1000);
          } else {
            ms += e.dt;
            out = engine.tick(at(ms / 1000));
            model.tick(at(ms / 1000));
            for (const x of out.filter((y) => y.reason === 'agent-unreachable'))
              expect(parseTimestamp(x.at)).toBe(model.staleAt.get(x.node));
          }
          check(out);
        }
      }),
      RUNS,
    );
  });
});

/**
 * A reference of the two timed overlays, straight from CONTRACT §2.5 with no queue: what
 * the engine's deadline heap must agree with after every call.
 */
class OverlayModel {
  #staleMs = 5000;
  #collectorMs = 10000;
  readonly #lastSeen = new Map<string, number>();
  readonly #cachedSince = new Map<string, number>();
  readonly #stale = new Set<string>();
  readonly #failing = new Set<string>();
  /** When each node last went stale. */
  readonly staleAt = new Map<string, number>();

  observe(node: string, cached: boolean, now: number): void {
    this.#expire(node, (deadline) => deadline < now);
    this.#lastSeen.set(node, Math.max(now, this.#lastSeen.get(node) ?? now));
    this.#stale.delete(node);
    if (cached) {
      if (!this.#cachedSince.has(node)) this.#cachedSince.set(node, now);
    } else {
      this.#cachedSince.delete(node);
      this.#failing.delete(node);
    }
  }

  tick(now: number): void {
    for (const node of this.#lastSeen.keys()) this.#expire(node, (deadline) => deadline <= now);
  }

  setRules(staleMs: number, collectorMs: number): void {
    this.#staleMs = staleMs;
    this.#collectorMs = collectorMs;
  }

  agent(node: string): 'ok' | 'stale' | 'collector-error' {
    if (this.#stale.has(node)) return 'stale';
    return this.#failing.has(node) ? 'collector-error' : 'ok';
  }

  #expire(node: string, due: (deadline: number) => boolean): void {
    const seen = this.#lastSeen.get(node);
    if (seen !== undefined && !this.#stale.has(node) && due(seen + this.#staleMs)) {
      this.#stale.add(node);
      this.staleAt.set(node, seen + this.#staleMs);
    }
    const since = this.#cachedSince.get(node);
    if (since !== undefined && !this.#failing.has(node) && due(since + this.#collectorMs))
      this.#failing.add(node);
  }
}

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

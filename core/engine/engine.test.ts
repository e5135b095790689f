import { describe, expect, it } from '@jest/globals';
import { publishedDocumentSchema, type PublishedDevice } from '../../contracts/published.js';
import { rulesSchema } from '../../contracts/rules.js';
import type { Snapshot } from '../../contracts/snapshot.js';
import { createEngine, type ReloadableEngine, type Transition } from './index.js';
import { at, gpuSnapshot, isoAt, npuSnapshot, type GpuSpec, type NpuSpec } from './testing.js';

/** Drives one engine with now = collected_at and keeps every transition. */
class Driver {
  readonly engine: ReloadableEngine;
  readonly log: Transition[] = [];
  seq = 0;
  constructor(engine: ReloadableEngine = createEngine()) {
    this.engine = engine;
    // Ten known nodes, so one stale node (10%) stays listed rather than read as an ingest outage.
    engine.setKnownNodes([
      'node-a',
      'node-b',
      'node-c',
      'node-d',
      'node-e',
      'node-f',
      'node-g',
      'node-h',
      'node-i',
      'node-j',
    ]);
  }
  clear(node: string, device: string | undefined, t: number): Transition[] {
    const out = this.engine.clear(node, device, at(t));
    this.log.push(...out);
    return out;
  }
  feed(snapshot: Snapshot, now = Date.parse(snapshot.collected_at)): Transition[] {
    const out = this.engine.observe(snapshot, now).transitions;
    this.log.push(...out);
    return out;
  }
  npus(
    t: number,
    npus: NpuSpec[],
    extra: { node?: string; boot?: string; cached?: boolean; seq?: number } = {},
  ): Transition[] {
    return this.feed(npuSnapshot({ seq: extra.seq ?? ++this.seq, t, ...extra }, npus));
  }
  gpus(t: number, gpus: GpuSpec[], extra: { node?: string; boot?: string; seq?: number } = {}): Transition[] {
    return this.feed(gpuSnapshot({ seq: extra.seq ?? ++this.seq, t, ...extra }, gpus));
  }
  tick(t: number): Transition[] {
    const out = this.engine.tick(at(t));
    this.log.push(...out);
    return out;
  }
  /** The published entry of a device, or undefined when it is not listed. */
  device(id: string, t: number, node = 'node-a'): PublishedDevice | undefined {
    const doc = publishedDocumentSchema.parse(this.engine.document(at(t), { identity: 'test', term: 1 }));
    return doc.nodes[node]?.npus.find((d) => d.id === id);
  }
  /** Compact view of the transitions so far: `t:id:from>to:reason`. */
  changes(): string[] {
    return this.log.map((x) => `${(Date.parse(x.at) - at(0)) / 1000}:${x.npu}:${x.from}>${x.to}:${x.reason}`);
  }
}

const hot = (npu = 0): NpuSpec => ({ npu, temp: 90 });
const cool = (npu = 0): NpuSpec => ({ npu, temp: 50 });

describe('unknown → healthy', () => {
  it('goes healthy on the first clean sample, with no reason', () => {
    const d = new Driver();
    expect(d.npus(0, [cool()])).toEqual([
      {
        at: isoAt(0),
        node: 'node-a',
        npu: 'npu0',
        key: '0000:C1:00.0',
        from: 'unknown',
        to: 'healthy',
        reason: null,
      },
    ]);
    expect(d.device('npu0', 0)).toBeUndefined();
  });
});

describe('high-temp smoothing and the 60 s degrade timer', () => {
  it('degrades on exactly 3 of 5 samples above 85 °C, 60 s after high-temp first holds, not before', () => {
    const d = new Driver();
    // H H C H C repeated: every window of 5 holds exactly 3 hot samples from the 4th sample on.
    const pattern = [true, true, false, true, false];
    for (let t = 0; t <= 63; t++) d.npus(t, [pattern[t % 5] ? hot() : cool()]);
    // high-temp first holds at t=3 (H H C H); 60 s later is t=63.
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null', '63:npu0:healthy>degraded:high-temp']);
  });

  it('does not count 85.0 itself as hot (strictly above)', () => {
    const d = new Driver();
    for (let t = 0; t <= 120; t++) d.npus(t, [{ npu: 0, temp: 85.0 }]);
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null']);
  });

  it('degrades at exactly 60 s, not at 59.999 s', () => {
    const d = new Driver();
    for (let t = 0; t <= 61; t++) d.npus(t, [hot()]); // high-temp holds from t=2 (third hot sample)
    d.npus(61.999, [hot()]);
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null']);
    d.npus(62, [hot()]);
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null', '62:npu0:healthy>degraded:high-temp']);
  });

  it('restarts the 60 s when every warning lapses for one sample', () => {
    const d = new Driver();
    for (let t = 0; t <= 29; t++) d.npus(t, [{ npu: 0, health: 'Warning' }]);
    d.npus(30, [cool()]); // gap: no warning
    for (let t = 31; t <= 90; t++) d.npus(t, [{ npu: 0, health: 'Warning' }]);
    expect(d.changes()).toEqual(['30:npu0:unknown>healthy:null']);
    d.npus(91, [{ npu: 0, health: 'Warning' }]);
    expect(d.changes()).toEqual(['30:npu0:unknown>healthy:null', '91:npu0:healthy>degraded:health-warning']);
  });

  it('lets different warnings take turns without a gap', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    for (let t = 1; t <= 29; t++) d.npus(t, [{ npu: 0, health: 'Warning' }]);
    for (let t = 30; t <= 39; t++) d.npus(t, [{ npu: 0, health: 'Alarm' }]);
    for (let t = 40; t <= 60; t++) d.npus(t, [{ npu: 0, codes: ['80E00209'] }]); // warning fault code
    d.npus(61, [{ npu: 0, codes: ['DEADBEEF'] }]); // unknown code: warning
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null', '61:npu0:healthy>degraded:fault-code']);
  });

  it('never degrades on isolated single hot samples', () => {
    const d = new Driver();
    for (let t = 0; t < 300; t++) d.npus(t, [t % 3 === 0 ? hot() : cool()]);
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null']);
  });
});

describe('degraded → failed and recovery', () => {
  it('fails after 180 s degraded while a reason holds', () => {
    const d = new Driver();
    for (let t = 0; t <= 242; t++) d.npus(t, [hot()]);
    expect(d.changes()).toEqual([
      '0:npu0:unknown>healthy:null',
      '62:npu0:healthy>degraded:high-temp',
      '242:npu0:degraded>failed:high-temp',
    ]);
  });

  it('recovers on exactly the 5th consecutive clean sample, not the 4th', () => {
    const d = new Driver();
    for (let t = 0; t <= 62; t++) d.npus(t, [hot()]);
    // Three cool samples empty the 3-of-5 window; clean samples count from the first one with no reason.
    let t = 63;
    while (d.device('npu0', t)?.reasons.length !== 0) d.npus(t++, [cool()]);
    const firstClean = t - 1;
    for (let i = 2; i <= 4; i++) d.npus(t++, [cool()]);
    expect(d.changes().at(-1)).toBe('62:npu0:healthy>degraded:high-temp');
    d.npus(t, [cool()]);
    expect(d.changes().at(-1)).toBe(`${t}:npu0:degraded>healthy:null`);
    expect(t - firstClean + 1).toBe(5);
  });

  it('restarts the clean count when a reason returns', () => {
    const d = new Driver();
    d.npus(0, [{ npu: 0, link: 'down', power: 100 }]);
    for (let t = 1; t <= 4; t++) d.npus(t, [cool()]);
    d.npus(5, [{ npu: 0, health: 'Warning' }]);
    for (let t = 6; t <= 9; t++) d.npus(t, [cool()]);
    expect(d.changes()).toEqual(['0:npu0:unknown>failed:pcie-link-down']);
    d.npus(10, [cool()]);
    expect(d.changes().at(-1)).toBe('10:npu0:failed>healthy:null');
  });
});

describe('critical reasons fail in the same sample', () => {
  it.each([
    {
      name: 'link down, power up: pcie-link-down',
      npu: { npu: 0, link: 'down', power: 120 },
      reason: 'pcie-link-down',
    },
    {
      name: 'link down, power below 5 W: npu-offline',
      npu: { npu: 0, link: 'down', power: 4.9 },
      reason: 'npu-offline',
    },
    {
      name: 'link down, power null: npu-offline',
      npu: { npu: 0, link: 'down', power: null },
      reason: 'npu-offline',
    },
    { name: 'health Critical', npu: { npu: 0, health: 'Critical' }, reason: 'health-critical' },
    { name: 'critical fault code', npu: { npu: 0, codes: ['80e01801'] }, reason: 'fault-code' },
    {
      name: 'present: false',
      npu: { npu: 0, present: false, temp: null, power: null },
      reason: 'device-missing',
    },
  ] satisfies Array<{ name: string; npu: NpuSpec; reason: string }>)('$name', ({ npu, reason }) => {
    const d = new Driver();
    d.npus(0, [cool()]);
    d.npus(1, [npu]);
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null', `1:npu0:healthy>failed:${reason}`]);
  });

  it('fails a device unhealthy from its very first sample', () => {
    const d = new Driver();
    d.npus(0, [{ npu: 0, link: 'down', power: 0 }]);
    expect(d.changes()).toEqual(['0:npu0:unknown>failed:npu-offline']);
  });

  it('keeps a device warning from its first sample unknown, with the signal, until 60 s', () => {
    const d = new Driver();
    d.npus(0, [{ npu: 0, health: 'Alarm' }]);
    expect(d.changes()).toEqual([]);
    expect(d.device('npu0', 0)).toMatchObject({
      status: 'unknown',
      reason: 'health-warning',
      signals: ['health-warning'],
    });
    d.npus(60, [{ npu: 0, health: 'Alarm' }]);
    expect(d.changes()).toEqual(['60:npu0:unknown>degraded:health-warning']);
  });

  it('fails a degraded device at once on a critical reason', () => {
    const d = new Driver();
    for (let t = 0; t <= 62; t++) d.npus(t, [hot()]);
    d.npus(63, [{ npu: 0, temp: 90, link: 'down', power: 50 }]);
    expect(d.changes().at(-1)).toBe('63:npu0:degraded>failed:pcie-link-down');
    expect(d.device('npu0', 63)).toMatchObject({
      reasons: ['pcie-link-down', 'high-temp'],
      signals: ['high-temp'],
    });
  });
});

describe('ECC counters', () => {
  it('reports ecc-error for the window after an increase, ecc-thermal above 75 °C', () => {
    const d = new Driver();
    d.npus(0, [{ npu: 0, sbe: 3 }]);
    d.npus(1, [{ npu: 0, sbe: 4 }]);
    expect(d.device('npu0', 1)).toMatchObject({
      status: 'healthy',
      reasons: ['ecc-error'],
      signals: ['ecc-error'],
    });
    d.npus(2, [{ npu: 0, sbe: 4, temp: 80 }]);
    expect(d.device('npu0', 2)?.reasons).toEqual(['ecc-thermal']);
    for (let t = 3; t <= 5; t++) d.npus(t, [{ npu: 0, sbe: 4 }]);
    expect(d.device('npu0', 5)?.reasons).toEqual(['ecc-error']); // 5th sample of the window
    d.npus(6, [{ npu: 0, sbe: 4 }]);
    expect(d.device('npu0', 6)).toBeUndefined();
  });

  it('treats a counter that goes down as a reset: new baseline, no increase', () => {
    const d = new Driver();
    d.npus(0, [{ npu: 0, sbe: 10 }]);
    d.npus(1, [{ npu: 0, sbe: 0 }]);
    expect(d.device('npu0', 1)).toBeUndefined();
    d.npus(2, [{ npu: 0, sbe: 1 }]);
    expect(d.device('npu0', 2)?.reasons).toEqual(['ecc-error']);
  });

  it('lets null cross no threshold and keeps the last baseline', () => {
    const d = new Driver();
    d.npus(0, [{ npu: 0, sbe: 5, temp: null }]);
    for (let t = 1; t <= 70; t++) d.npus(t, [{ npu: 0, sbe: null, dbe: null, temp: null, power: null }]);
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null']);
    d.npus(71, [{ npu: 0, sbe: 5 }]);
    expect(d.device('npu0', 71)).toBeUndefined();
    d.npus(72, [{ npu: 0, sbe: 6 }]);
    expect(d.device('npu0', 72)?.reasons).toEqual(['ecc-error']);
  });
});

describe('latched reasons', () => {
  const unc = (dbe: number): NpuSpec => ({ npu: 0, sbe: 0, dbe });

  it('keeps ecc-uncorrectable failed through clean samples until an operator clear', () => {
    const d = new Driver();
    d.npus(0, [unc(0)]);
    d.npus(1, [unc(1)]);
    for (let t = 2; t <= 30; t++) d.npus(t, [unc(1)]);
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null', '1:npu0:healthy>failed:ecc-uncorrectable']);
    expect(d.device('npu0', 30)?.reasons).toEqual(['ecc-uncorrectable']); // ecc-error (the same increase) left the window
    expect(d.engine.clear('node-a', 'npu0', at(31))).toEqual([
      expect.objectContaining({ at: isoAt(31), from: 'failed', to: 'healthy', reason: null }),
    ]);
    d.npus(32, [unc(1)]);
    expect(d.device('npu0', 32)).toBeUndefined();
  });

  it('clears by key and by node, and leaves a device failed for another reason failed', () => {
    const d = new Driver();
    d.npus(0, [unc(0), { npu: 1, dbe: 0 }]);
    d.npus(1, [unc(1), { npu: 1, dbe: 1, link: 'down', power: 100 }]);
    expect(d.engine.clear('node-a', undefined, at(2)).map((x) => x.npu)).toEqual(['npu0']);
    expect(d.device('npu1', 2)).toMatchObject({ status: 'failed', reasons: ['pcie-link-down'] });
    expect(d.engine.clear('node-b', undefined, at(2))).toEqual([]);
  });

  it('clears latches on a new boot_id; the device then recovers after 5 clean samples', () => {
    const d = new Driver();
    d.npus(0, [unc(0)]);
    d.npus(1, [unc(2)]);
    for (let t = 2; t <= 10; t++) d.npus(t, [unc(2)]);
    // Agent restart: new boot, seq from 1, counters reset by the driver reload.
    for (let t = 11; t <= 14; t++) d.npus(t, [unc(0)], { boot: 'boot-2', seq: t - 10 });
    expect(d.changes().at(-1)).toBe('1:npu0:healthy>failed:ecc-uncorrectable');
    d.npus(15, [unc(0)], { boot: 'boot-2', seq: 5 });
    expect(d.changes().at(-1)).toBe('15:npu0:failed>healthy:null');
  });

  it('keeps a latched failure through an agent restart whose counters did not reset (a rollout is no repair)', () => {
    const d = new Driver();
    d.npus(0, [unc(0)]);
    d.npus(1, [unc(2)]);
    // New agent process, same driver: the cumulative counter still reads 2.
    for (let t = 2; t <= 20; t++) d.npus(t, [unc(2)], { boot: 'boot-2', seq: t - 1 });
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null', '1:npu0:healthy>failed:ecc-uncorrectable']);
    expect(d.device('npu0', 20)).toMatchObject({ status: 'failed', reason: 'ecc-uncorrectable' });
    // The driver reloads (counters reset) under a third agent boot: the latch clears.
    for (let t = 21; t <= 25; t++) d.npus(t, [unc(0)], { boot: 'boot-3', seq: t - 20 });
    expect(d.changes().at(-1)).toBe('25:npu0:failed>healthy:null');
  });

  it('catches an uncorrectable increase that happened while the agent restarted', () => {
    const d = new Driver();
    d.npus(0, [unc(0)]);
    d.npus(1, [unc(0)]);
    d.npus(2, [unc(3)], { boot: 'boot-2', seq: 1 });
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null', '2:npu0:healthy>failed:ecc-uncorrectable']);
  });

  it('latches xid-79, does not re-fire a rolling XID list, and ignores unwatched XIDs', () => {
    const d = new Driver();
    const event = { xid: 79, at: isoAt(1) };
    d.gpus(0, [{ index: 0, xids: [{ xid: 13, at: isoAt(0) }] }]);
    d.gpus(1, [{ index: 0, xids: [event] }]);
    for (let t = 2; t <= 20; t++) d.gpus(t, [{ index: 0, xids: [event] }]);
    expect(d.changes()).toEqual(['0:gpu0:unknown>healthy:null', '1:gpu0:healthy>failed:xid-79']);
    d.clear('node-a', 'GPU-0000-0', 21);
    for (let t = 22; t <= 40; t++) d.gpus(t, [{ index: 0, xids: [event] }]);
    expect(d.changes()).toEqual([
      '0:gpu0:unknown>healthy:null',
      '1:gpu0:healthy>failed:xid-79',
      '21:gpu0:failed>healthy:null',
    ]);
  });

  it('keeps a non-latched critical XID active for the window, then recovers after 5 clean samples', () => {
    const d = new Driver();
    d.gpus(0, [{ index: 0 }]);
    d.gpus(1, [{ index: 0, xids: [{ xid: 74, at: isoAt(1) }] }]);
    for (let t = 2; t <= 9; t++) d.gpus(t, [{ index: 0, xids: [{ xid: 74, at: isoAt(1) }] }]);
    expect(d.changes()).toEqual(['0:gpu0:unknown>healthy:null', '1:gpu0:healthy>failed:xid-74']);
    d.gpus(10, [{ index: 0 }]); // active at 1..5, clean at 6..10
    expect(d.changes().at(-1)).toBe('10:gpu0:failed>healthy:null');
  });

  it('publishes a warning XID as a signal only', () => {
    const d = new Driver();
    d.gpus(0, [{ index: 0 }]);
    d.gpus(1, [{ index: 0, xids: [{ xid: 63, at: null }] }]);
    expect(d.device('gpu0', 1)).toMatchObject({ status: 'healthy', reason: 'xid-63', signals: ['xid-63'] });
  });
});

describe('device identity and presence', () => {
  it('fails a device seen earlier in the boot that a later snapshot leaves out', () => {
    const d = new Driver();
    d.npus(0, [cool(0), cool(1)]);
    d.npus(1, [cool(0)]);
    expect(d.changes().at(-1)).toBe('1:npu1:healthy>failed:device-missing');
    expect(d.device('npu1', 1)).toMatchObject({ temperature_c: null, pcie_link_status: null });
  });

  it('calls a device missing when a new boot leaves it out, and forgets it on an operator clear', () => {
    const d = new Driver();
    d.npus(0, [cool(0), cool(1)]);
    d.npus(1, [cool(0)], { boot: 'boot-2', seq: 1 });
    expect(d.changes()).toEqual([
      '0:npu0:unknown>healthy:null',
      '0:npu1:unknown>healthy:null',
      '1:npu1:healthy>failed:device-missing',
    ]);
    expect(d.clear('node-a', 'npu1', 2)).toEqual([]);
    d.npus(2, [cool(0)], { boot: 'boot-2', seq: 2 });
    const doc = publishedDocumentSchema.parse(d.engine.document(at(2), { identity: 't', term: 1 }));
    expect(doc.nodes['node-a']).toBeUndefined();
    expect(doc.cluster_summary.total).toBe(1);
    expect(d.engine.deviceCount()).toBe(1);
  });

  it('keys GPU state by uuid, so a GPU off the bus does not shift its neighbours', () => {
    const d = new Driver();
    d.gpus(0, [{ index: 0 }, { index: 1, temp: 90 }, { index: 2 }]);
    // gpu1 falls off the bus: every metric null → link down, power null → npu-offline.
    d.gpus(1, [{ index: 0 }, { index: 1, lost: true }, { index: 2 }]);
    expect(d.changes()).toEqual([
      '0:gpu0:unknown>healthy:null',
      '0:gpu1:unknown>healthy:null',
      '0:gpu2:unknown>healthy:null',
      '1:gpu1:healthy>failed:npu-offline',
    ]);
  });
});

describe('admission: duplicates, order, boots, future', () => {
  it('drops duplicates and older seqs, applies each sample once', () => {
    const e = createEngine();
    const s1 = npuSnapshot({ seq: 1, t: 0 }, [hot()]);
    const s2 = npuSnapshot({ seq: 2, t: 1 }, [hot()]);
    const s3 = npuSnapshot({ seq: 3, t: 2 }, [hot()]);
    expect(e.observe(s1, at(0)).accepted).toBe(true);
    expect(e.observe(s1, at(0))).toEqual({ accepted: false, dropped: 'duplicate', transitions: [] });
    expect(e.observe(s3, at(2)).accepted).toBe(true);
    expect(e.observe(s2, at(2))).toEqual({ accepted: false, dropped: 'out-of-order', transitions: [] });
    // Only two hot samples were applied: high-temp (3 of 5) is not active, nothing is listed.
    expect(publishedDocumentSchema.parse(e.document(at(2), { identity: 't', term: 0 })).nodes).toEqual({});
    expect(e.observe(npuSnapshot({ seq: 4, t: 3 }, [hot()]), at(3)).accepted).toBe(true);
    expect(
      publishedDocumentSchema.parse(e.document(at(3), { identity: 't', term: 0 })).nodes['node-a']?.npus[0]
        ?.reasons,
    ).toEqual(['high-temp']);
  });

  it('drops a straggler of a replaced boot', () => {
    const e = createEngine();
    e.observe(npuSnapshot({ seq: 10, t: 0, boot: 'old' }, [cool()]), at(0));
    expect(e.observe(npuSnapshot({ seq: 1, t: 1, boot: 'new' }, [cool()]), at(1)).accepted).toBe(true);
    expect(e.observe(npuSnapshot({ seq: 11, t: 1, boot: 'old' }, [cool()]), at(2)).dropped).toBe('old-boot');
  });

  it('rejects a snapshot more than 5 s ahead of the receiver, accepts one exactly 5 s ahead', () => {
    const e = createEngine();
    expect(e.observe(npuSnapshot({ seq: 1, t: 5.001 }, [cool()]), at(0)).dropped).toBe('future');
    expect(e.deviceCount()).toBe(0);
    expect(e.observe(npuSnapshot({ seq: 2, t: 5 }, [cool()]), at(0)).accepted).toBe(true);
    expect(e.deviceCount()).toBe(1);
  });
});

describe('overlays', () => {
  it('marks a node stale at exactly last_seen + 5 s and lifts it on the next snapshot', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    expect(d.tick(4.999)).toEqual([]);
    expect(d.tick(5)).toEqual([
      expect.objectContaining({ at: isoAt(5), from: 'healthy', to: 'unknown', reason: 'agent-unreachable' }),
    ]);
    expect(d.tick(30)).toEqual([]);
    expect(d.device('npu0', 30)).toMatchObject({
      status: 'unknown',
      reason: 'agent-unreachable',
      since: isoAt(5),
    });
    d.npus(31, [cool()]);
    expect(d.changes().at(-1)).toBe('31:npu0:unknown>healthy:null');
  });

  it('stamps a staleness noticed late at its deadline (observe after a silence, no tick)', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    d.npus(20, [cool()]);
    expect(d.changes()).toEqual([
      '0:npu0:unknown>healthy:null',
      '5:npu0:healthy>unknown:agent-unreachable',
      '20:npu0:unknown>healthy:null',
    ]);
  });

  it('keeps a failed device failed while its node is silent', () => {
    const d = new Driver();
    d.npus(0, [cool(0), { npu: 1, link: 'down', power: 100 }]);
    d.tick(60);
    expect(d.changes()).toEqual([
      '0:npu0:unknown>healthy:null',
      '0:npu1:unknown>failed:pcie-link-down',
      '5:npu0:healthy>unknown:agent-unreachable',
    ]);
    expect(d.device('npu1', 60)).toMatchObject({
      status: 'failed',
      reason: 'pcie-link-down',
      reasons: ['pcie-link-down', 'agent-unreachable'],
    });
  });

  it('returns a degraded device to degraded, not healthy, when an overlay lifts', () => {
    const d = new Driver();
    for (let t = 0; t <= 62; t++) d.npus(t, [hot()]);
    d.tick(67);
    d.npus(70, [hot()]);
    expect(d.changes()).toEqual([
      '0:npu0:unknown>healthy:null',
      '62:npu0:healthy>degraded:high-temp',
      '67:npu0:degraded>unknown:agent-unreachable',
      '70:npu0:unknown>degraded:high-temp',
    ]);
    expect(d.device('npu0', 70)).toMatchObject({ status: 'degraded', since: isoAt(62) });
  });

  it('applies node-not-ready and returns to the state machine when Ready again', () => {
    const d = new Driver();
    for (let t = 0; t <= 62; t++) d.npus(t, [hot(0), cool(1)]);
    expect(d.engine.setNodeReady('node-a', false, at(63)).map((x) => `${x.npu}>${x.to}:${x.reason}`)).toEqual(
      ['npu0>unknown:node-not-ready', 'npu1>unknown:node-not-ready'],
    );
    expect(d.engine.setNodeReady('node-a', false, at(64))).toEqual([]);
    expect(d.engine.setNodeReady('node-a', true, at(65)).map((x) => `${x.npu}>${x.to}`)).toEqual([
      'npu0>degraded',
      'npu1>healthy',
    ]);
  });

  it('dates an unknown that begins under an overlay from its own change, not the overlay start', () => {
    const d = new Driver();
    d.npus(0, [cool(0)]);
    d.npus(1, [{ npu: 0, link: 'down', power: 0 }]);
    expect(d.engine.setNodeReady('node-a', false, at(2))).toEqual([]); // failed stays failed
    expect(d.device('npu0', 2)).toMatchObject({ status: 'failed', since: isoAt(1) });
    for (let t = 3; t <= 7; t++) d.npus(t, [cool(0)]);
    // The 5th clean sample (t=7) ends the failure; under the overlay it publishes as unknown.
    expect(d.changes().at(-1)).toBe('7:npu0:failed>unknown:node-not-ready');
    expect(d.device('npu0', 8)).toMatchObject({
      status: 'unknown',
      since: isoAt(7),
      reason: 'node-not-ready',
    });
  });

  it('raises collector-error after 10 s of only cached snapshots, which advance no device', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    for (let t = 1; t <= 11; t++) d.npus(t, [hot()], { cached: true });
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null']); // first cached at 1: deadline 11, not yet passed
    d.tick(11);
    expect(d.changes().at(-1)).toBe('11:npu0:healthy>unknown:collector-error');
    const doc = publishedDocumentSchema.parse(d.engine.document(at(12), { identity: 't', term: 0 }));
    expect(doc.nodes['node-a']?.agent).toBe('collector-error');
    expect(doc.nodes['node-a']?.npus[0]?.reasons).toEqual(['collector-error']); // the cached hot samples did not count
    d.npus(13, [cool()]);
    expect(d.changes().at(-1)).toBe('13:npu0:unknown>healthy:null');
  });

  it('keeps the agent alive on cached snapshots (no agent-unreachable)', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    for (let t = 1; t <= 9; t++) d.npus(t, [cool()], { cached: true });
    expect(d.tick(9)).toEqual([]);
  });
});

describe('rules', () => {
  it('uses configured thresholds and fault codes', () => {
    const rules = rulesSchema.parse({
      high_temp: { threshold_c: 70, min_samples: 1 },
      degrade_after_s: 0,
      fault_codes: { '80e00209': 'critical' },
    });
    const d = new Driver(createEngine(rules));
    d.npus(0, [
      { npu: 0, temp: 71 },
      { npu: 1, codes: ['80E00209'] },
    ]);
    expect(d.changes()).toEqual(['0:npu0:unknown>degraded:high-temp', '0:npu1:unknown>failed:fault-code']);
  });

  it('hot-reloads rules keeping state and latches', () => {
    const d = new Driver();
    d.gpus(0, [{ index: 0 }]);
    d.gpus(1, [{ index: 0, xids: [{ xid: 79, at: null }] }]);
    d.engine.setRules(
      rulesSchema.parse({ xids: { watched: [13, 79], critical: [79] }, latched: ['xid-79'] }),
    );
    for (let t = 2; t <= 10; t++) d.gpus(t, [{ index: 0 }]);
    expect(d.device('gpu0', 10)).toMatchObject({ status: 'failed', reasons: ['xid-79'] });
    expect(d.engine.rules().xids.watched).toEqual([13, 79]);
  });
});

import { describe, expect, it } from '@jest/globals';
import {
  type PublishedDevice,
  publishedDocumentSchema,
  rulesSchema,
  type Snapshot,
} from '../../contracts/index.js';
import { createEngine, parseTimestamp, type ReloadableEngine, type Transition } from './index.js';
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
  feed(snapshot: Snapshot, now = parseTimestamp(snapshot.collected_at)): Transition[] {
    const out = this.engine.observe(snapshot, now).transitions;
    this.log.push(...out);
    return out;
  }
  npus(
    t: number,
    npus: NpuSpec[],
    extra: { node?: string; boot?: string; cached?: boolean; seq?: number; now?: number } = {},
  ): Transition[] {
    const { now, ...env } = extra;
    const snapshot = npuSnapshot({ seq: env.seq ?? ++this.seq, t, ...env }, npus);
    return this.feed(snapshot, now === undefined ? undefined : at(now));
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
    return this.log.map(compact);
  }
}

/** `t:id:from>to:reason`, t in seconds after T0. */
function compact(x: Transition): string {
  return `${(parseTimestamp(x.at) - at(0)) / 1000}:${x.npu}:${x.from}>${x.to}:${x.reason}`;
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

  it('publishes a warning XID as a signal only (a healthy device has no reason)', () => {
    const d = new Driver();
    d.gpus(0, [{ index: 0 }]);
    d.gpus(1, [{ index: 0, xids: [{ xid: 63, at: null }] }]);
    expect(d.device('gpu0', 1)).toMatchObject({
      status: 'healthy',
      reason: null,
      reasons: ['xid-63'],
      signals: ['xid-63'],
    });
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

  it('raises a critical node_conditions reason as an overlay while the Node has the condition', () => {
    const d = new Driver();
    d.npus(0, [cool(0), { npu: 1, link: 'down', power: 0 }]);
    const on = d.engine.setNodeConditions(
      'node-a',
      { KernelDeadlock: 'True', MemoryPressure: 'False' },
      at(1),
    );
    expect(on.map((x) => `${x.npu}>${x.to}:${x.reason}`)).toEqual(['npu0>unknown:kernel-deadlock']);
    expect(d.engine.setNodeConditions('node-a', { KernelDeadlock: 'True' }, at(2))).toEqual([]);
    expect(d.device('npu0', 2)).toMatchObject({
      status: 'unknown',
      reason: 'kernel-deadlock',
      reasons: ['kernel-deadlock'],
    });
    expect(d.device('npu1', 2)).toMatchObject({ status: 'failed', reason: 'npu-offline' }); // failed stays failed
    const explained = d.engine.explain('node-a', undefined, at(2));
    expect(explained.tracked && explained.overlays).toEqual(['kernel-deadlock']);
    const off = d.engine.setNodeConditions('node-a', { KernelDeadlock: 'False' }, at(3));
    expect(off.map((x) => `${x.npu}>${x.to}:${x.reason}`)).toEqual(['npu0>healthy:null']);
    expect(d.device('npu0', 3)).toBeUndefined();
  });

  it('publishes a warning node_conditions reason as a signal on every device, changing no status', () => {
    const d = new Driver();
    d.npus(0, [cool(0), cool(1)]);
    expect(d.engine.setNodeConditions('node-a', { DiskPressure: 'True' }, at(1))).toEqual([]);
    const doc = publishedDocumentSchema.parse(d.engine.document(at(1), { identity: 't', term: 0 }));
    expect(doc.nodes['node-a']?.summary).toMatchObject({ healthy: 2, unknown: 0 });
    expect(doc.nodes['node-a']?.npus.map((x) => [x.id, x.status, x.reason, x.reasons, x.signals])).toEqual([
      ['npu0', 'healthy', null, ['node-disk-pressure'], ['node-disk-pressure']],
      ['npu1', 'healthy', null, ['node-disk-pressure'], ['node-disk-pressure']],
    ]);
    d.engine.setNodeConditions('node-a', {}, at(2));
    expect(d.engine.nodeEntry('node-a')).toBeNull();
  });

  it('does not list a node with no devices for a warning node_conditions reason alone, but does for a critical one', () => {
    const d = new Driver();
    d.npus(0, []); // a node whose tool lists no device (a liveness sample)
    d.engine.setNodeConditions('node-a', { DiskPressure: 'True' }, at(1));
    expect(d.engine.nodeEntry('node-a')).toBeNull();
    d.engine.setNodeConditions('node-a', { DiskPressure: 'True', KernelDeadlock: 'True' }, at(2));
    expect(d.engine.nodeEntry('node-a')).toMatchObject({ node: 'node-a', npus: [] });
  });

  it('ignores condition types the rules do not name and statuses other than True, False, Unknown', () => {
    const d = new Driver();
    d.npus(0, [cool(0)]);
    const odd = {
      Ready: 'False',
      Custom: 'True',
      KernelDeadlock: 'true',
      ReadonlyFilesystem: '',
      ['__proto__']: 'True',
    };
    expect(d.engine.setNodeConditions('node-a', odd, at(1))).toEqual([]);
    expect(
      d.engine.setNodeConditions(
        'node-a',
        JSON.parse('{"__proto__":"True"}') as Record<string, string>,
        at(1),
      ),
    ).toEqual([]);
    expect(d.engine.nodeEntry('node-a')).toBeNull();
    // A Node no snapshot came from yet is not listed, but its conditions count once it reports.
    d.engine.setNodeConditions('node-b', { KernelDeadlock: 'True' }, at(1));
    expect(d.npus(2, [cool(0)], { node: 'node-b' })).toEqual([]); // born unknown, held there
    expect(d.device('npu0', 2, 'node-b')).toMatchObject({ status: 'unknown', reason: 'kernel-deadlock' });
  });

  it('evaluates the Node conditions again on a rules reload', () => {
    const d = new Driver();
    d.npus(0, [cool(0)]);
    // GPUFallenOff is no default: kept, but it raises nothing yet.
    expect(
      d.engine.setNodeConditions('node-a', { GPUFallenOff: 'True', DiskPressure: 'True' }, at(1)),
    ).toEqual([]);
    expect(d.device('npu0', 1)).toMatchObject({ status: 'healthy', signals: ['node-disk-pressure'] });
    // The operator maps their own condition, and no other.
    const own = { node_conditions: [{ type: 'GPUFallenOff', reason: 'gpu-fallen-off' }] };
    d.engine.setRules(rulesSchema.parse(own));
    expect(d.tick(2).map((x) => `${x.npu}>${x.to}:${x.reason}`)).toEqual(['npu0>unknown:gpu-fallen-off']);
    expect(d.device('npu0', 2)).toMatchObject({ status: 'unknown', reasons: ['gpu-fallen-off'] });
    // node-not-ready keeps its place across a reload; the condition's reason goes with its entry.
    d.engine.setNodeReady('node-a', false, at(3));
    d.engine.setRules(rulesSchema.parse({ node_conditions: [] }));
    expect(d.tick(4)).toEqual([]);
    expect(d.device('npu0', 4)).toMatchObject({
      status: 'unknown',
      reason: 'node-not-ready',
      reasons: ['node-not-ready'],
    });
    expect(d.engine.setNodeReady('node-a', true, at(5)).map((x) => `${x.npu}>${x.to}`)).toEqual([
      'npu0>healthy',
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

  it('applies the events of a stale_readings snapshot but keeps collector-error: the tool is still failing', () => {
    const d = new Driver();
    d.gpus(0, [{ index: 0 }]);
    for (let t = 1; t <= 11; t++)
      d.feed(gpuSnapshot({ seq: ++d.seq, t: 0, cached: true }, [{ index: 0 }]), at(t));
    d.tick(11);
    expect(d.changes().at(-1)).toBe('11:gpu0:healthy>unknown:collector-error');
    // XID 79 from the kernel log, sent on the last good reading while the tool hangs.
    const event = gpuSnapshot({ seq: ++d.seq, t: 12 }, [{ index: 0, xids: [{ xid: 79, at: isoAt(12) }] }]);
    d.feed({ ...event, stale_readings: true }, at(12));
    expect(d.changes().at(-1)).toBe('12:gpu0:unknown>failed:xid-79');
    const doc = publishedDocumentSchema.parse(d.engine.document(at(13), { identity: 't', term: 0 }));
    expect(doc.nodes['node-a']?.agent).toBe('collector-error');
    // Without the flag the same snapshot would have ended the overlay.
    const fresh = new Driver();
    fresh.gpus(0, [{ index: 0 }]);
    for (let t = 1; t <= 11; t++)
      fresh.feed(gpuSnapshot({ seq: ++fresh.seq, t: 0, cached: true }, [{ index: 0 }]), at(t));
    fresh.tick(11);
    fresh.feed(gpuSnapshot({ seq: ++fresh.seq, t: 12 }, [{ index: 0 }]), at(12));
    const after = publishedDocumentSchema.parse(fresh.engine.document(at(13), { identity: 't', term: 0 }));
    expect(after.nodes['node-a']).toBeUndefined();
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

describe('degraded → failed after 180 s (a reason must still be active)', () => {
  const warn: NpuSpec = { npu: 0, health: 'Warning' };

  it('fails at exactly 180 s degraded while a reason is active, not at 179.999 s', () => {
    const d = new Driver();
    for (let t = 0; t <= 239; t++) d.npus(t, [warn]); // degraded at 60
    d.npus(239.999, [warn]);
    expect(d.changes()).toEqual(['60:npu0:unknown>degraded:health-warning']);
    d.npus(240, [warn]);
    expect(d.changes().at(-1)).toBe('240:npu0:degraded>failed:health-warning');
  });

  it('keeps a device whose reason went quiet at 170 s degraded past 180 s, then heals it on the 5th clean sample', () => {
    const d = new Driver();
    for (let t = 0; t <= 229; t++) d.npus(t, [warn]); // degraded at 60; the warning ends after 169 s
    for (const t of [230, 235, 240, 241]) d.npus(t, [cool()]); // 4 clean samples; 240 is 180 s degraded
    expect(d.changes()).toEqual(['60:npu0:unknown>degraded:health-warning']);
    // Still degraded, and still says why (item: a not-healthy status always carries its reason).
    expect(d.device('npu0', 241)).toMatchObject({
      status: 'degraded',
      since: isoAt(60),
      reason: 'health-warning',
      reasons: [],
      signals: [],
    });
    d.npus(245, [cool()]);
    expect(d.changes().at(-1)).toBe('245:npu0:degraded>healthy:null');
  });

  it('fails a device degraded for more than 180 s as soon as a reason returns before it recovered', () => {
    const d = new Driver();
    for (let t = 0; t <= 229; t++) d.npus(t, [warn]);
    for (const t of [230, 235, 240]) d.npus(t, [cool()]);
    d.npus(245, [warn]); // not yet 5 clean samples: it never stopped being degraded
    expect(d.changes().at(-1)).toBe('245:npu0:degraded>failed:health-warning');
  });
});

describe('published reasons: null exactly when healthy', () => {
  it('keeps the reason of a degraded device whose warning went quiet, also when it returns from an overlay', () => {
    const d = new Driver();
    for (let t = 0; t <= 62; t++) d.npus(t, [{ npu: 0, health: 'Warning' }]);
    d.npus(63, [cool()]);
    d.npus(64, [cool()]);
    d.tick(69);
    d.npus(70, [cool()]);
    expect(d.changes()).toEqual([
      '60:npu0:unknown>degraded:health-warning',
      '69:npu0:degraded>unknown:agent-unreachable',
      '70:npu0:unknown>degraded:health-warning',
    ]);
    d.npus(71, [cool()]);
    d.npus(72, [cool()]);
    expect(d.changes().at(-1)).toBe('72:npu0:degraded>healthy:null');
  });

  it('gives a healthy device with an active warning no reason when an overlay lifts; the warning is a signal', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    d.npus(1, [{ npu: 0, health: 'Warning' }]);
    expect(d.engine.setNodeReady('node-a', false, at(2))).toEqual([
      expect.objectContaining({ to: 'unknown', reason: 'node-not-ready' }),
    ]);
    expect(d.engine.setNodeReady('node-a', true, at(3))).toEqual([
      expect.objectContaining({ from: 'unknown', to: 'healthy', reason: null }),
    ]);
    expect(d.device('npu0', 3)).toMatchObject({
      status: 'healthy',
      reason: null,
      reasons: ['health-warning'],
      signals: ['health-warning'],
    });
  });

  it('keeps the critical cause of a failure after it went quiet; later warnings are signals', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    d.npus(1, [{ npu: 0, link: 'down', power: 100 }]);
    d.npus(2, [{ npu: 0, health: 'Warning' }]);
    expect(d.device('npu0', 2)).toMatchObject({
      status: 'failed',
      reason: 'pcie-link-down',
      reasons: ['health-warning'],
      signals: ['health-warning'],
    });
    for (let t = 3; t <= 7; t++) d.npus(t, [cool()]);
    expect(d.changes()).toEqual([
      '0:npu0:unknown>healthy:null',
      '1:npu0:healthy>failed:pcie-link-down',
      '7:npu0:failed>healthy:null',
    ]);
  });

  it('names the warning that failed a device through 180 s of degradation, until a critical one holds it', () => {
    const d = new Driver();
    for (let t = 0; t <= 240; t++) d.npus(t, [{ npu: 0, health: 'Warning' }]);
    d.npus(241, [cool()]);
    expect(d.device('npu0', 241)).toMatchObject({ status: 'failed', reason: 'health-warning', signals: [] });
    d.npus(242, [{ npu: 0, link: 'down', power: 100 }]);
    d.npus(243, [{ npu: 0, health: 'Warning' }]);
    // The link-down held it last: it is the reason now, and the warning a signal.
    expect(d.device('npu0', 243)).toMatchObject({
      status: 'failed',
      reason: 'pcie-link-down',
      reasons: ['health-warning'],
      signals: ['health-warning'],
    });
  });

  it('keeps the reason of a latched failure, also under an overlay', () => {
    const d = new Driver();
    d.npus(0, [{ npu: 0, dbe: 0 }]);
    d.npus(1, [{ npu: 0, dbe: 1 }]);
    d.tick(10);
    expect(d.device('npu0', 10)).toMatchObject({
      status: 'failed',
      reason: 'ecc-uncorrectable',
      reasons: ['ecc-uncorrectable', 'ecc-error', 'agent-unreachable'],
    });
  });

  it('gives an unknown device its overlay, or the reason that keeps it from its first clean sample', () => {
    const d = new Driver();
    d.npus(0, [{ npu: 0, health: 'Alarm' }]);
    expect(d.device('npu0', 0)).toMatchObject({ status: 'unknown', reason: 'health-warning' });
    d.tick(5);
    expect(d.device('npu0', 5)).toMatchObject({ status: 'unknown', reason: 'agent-unreachable' });
  });

  it('takes what is still active as the reason after an operator clear removed the cause', () => {
    const d = new Driver();
    d.npus(0, [{ npu: 0, dbe: 0 }]);
    d.npus(1, [{ npu: 0, dbe: 1, health: 'Warning' }]);
    d.clear('node-a', 'npu0', 2);
    expect(d.device('npu0', 2)).toMatchObject({ status: 'failed', reason: 'health-warning' });
  });
});

describe('sub-millisecond collected_at', () => {
  const warn = (seq: number, collectedAt: string): Snapshot =>
    npuSnapshot({ seq, t: 0, collectedAt }, [{ npu: 0, health: 'Warning' }]);

  it('does not count 59.9992 s of warning as 60 s; 60.0000 s degrades, stamped with microseconds', () => {
    const d = new Driver();
    d.feed(npuSnapshot({ seq: 1, t: 0 }, [cool()]));
    d.feed(warn(2, '2026-11-29T08:00:01.0008Z'));
    for (let s = 2; s <= 60; s++) d.feed(warn(s + 1, isoAt(s)));
    d.feed(warn(62, '2026-11-29T08:01:01.0000Z')); // 59.9992 s after the first warning
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null']);
    d.feed(warn(63, '2026-11-29T08:01:01.000800000Z')); // exactly 60 s
    expect(d.log.at(-1)).toMatchObject({
      at: '2026-11-29T08:01:01.000800Z',
      from: 'healthy',
      to: 'degraded',
      reason: 'health-warning',
    });
  });

  it('times staleness with sub-millisecond receiver clocks', () => {
    const d = new Driver();
    d.feed(npuSnapshot({ seq: 1, t: 0, collectedAt: '2026-11-29T08:00:00.0004Z' }, [cool()]), at(0) + 0.4);
    expect(d.engine.tick(at(5) + 0.3)).toEqual([]);
    expect(d.engine.tick(at(5) + 0.4)).toEqual([
      expect.objectContaining({ at: '2026-11-29T08:00:05.000400Z', reason: 'agent-unreachable' }),
    ]);
  });
});

describe('cached resends (CONTRACT §1: the original collected_at, the receiver clock for staleness)', () => {
  it('keep a node alive on their original collected_at, advance no device, and end in collector-error at first cached + 10 s', () => {
    const d = new Driver();
    for (let t = 0; t <= 2; t++) d.npus(t, [cool()]);
    // The tool fails: 30 s of resends of the sample collected at t=2, hot on purpose (never applied).
    for (let now = 3; now <= 32; now++) {
      d.tick(now - 0.001);
      d.npus(2, [hot()], { cached: true, now });
    }
    d.tick(32);
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null', '13:npu0:healthy>unknown:collector-error']);
    const doc = publishedDocumentSchema.parse(d.engine.document(at(32), { identity: 't', term: 0 }));
    expect(doc.nodes['node-a']).toMatchObject({ agent: 'collector-error', observed_at: isoAt(2) });
    expect(doc.nodes['node-a']?.npus[0]).toMatchObject({ temperature_c: 50, reasons: ['collector-error'] });
    d.npus(33, [cool()]);
    expect(d.changes().at(-1)).toBe('33:npu0:unknown>healthy:null');
  });

  it('does not move the duration clock of the node', () => {
    const d = new Driver();
    for (let t = 0; t <= 3; t++) d.npus(t, [cool()]);
    // A resend of a sample this receiver never got, from an agent whose clock runs 4 s ahead.
    d.npus(8, [cool()], { cached: true, now: 4 });
    d.npus(5, [{ npu: 0, link: 'down', power: 100 }], { now: 5 });
    expect(d.changes()).toEqual(['0:npu0:unknown>healthy:null', '5:npu0:healthy>failed:pcie-link-down']);
    const doc = publishedDocumentSchema.parse(d.engine.document(at(5), { identity: 't', term: 0 }));
    expect(doc.nodes['node-a']?.observed_at).toBe(isoAt(8)); // the newest collected_at accepted
  });

  it('skew-checks a cached collected_at like any other: 30 s old is fine, more than 5 s ahead is dropped', () => {
    const e = createEngine();
    e.observe(npuSnapshot({ seq: 1, t: 0 }, [cool()]), at(0));
    expect(e.observe(npuSnapshot({ seq: 2, t: 0, cached: true }, [cool()]), at(30)).accepted).toBe(true);
    expect(e.observe(npuSnapshot({ seq: 3, t: 35.001, cached: true }, [cool()]), at(30)).dropped).toBe(
      'future',
    );
    expect(e.observe(npuSnapshot({ seq: 4, t: 35, cached: true }, [cool()]), at(30)).accepted).toBe(true);
  });

  it('stamps the agent-unreachable it lifts at the receiver clock, not at its old collected_at', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    d.tick(20);
    for (const now of [20, 24, 28]) d.npus(0, [cool()], { cached: true, now });
    d.tick(29.999);
    d.tick(30);
    expect(d.changes()).toEqual([
      '0:npu0:unknown>healthy:null',
      '5:npu0:healthy>unknown:agent-unreachable',
      '20:npu0:unknown>healthy:null',
      '30:npu0:healthy>unknown:collector-error',
    ]);
  });

  it('renders a node whose only snapshots are cached (observed_at is their collected_at)', () => {
    const d = new Driver();
    for (const now of [0, 4, 8]) d.npus(-30, [cool()], { cached: true, now });
    d.tick(10);
    const doc = publishedDocumentSchema.parse(d.engine.document(at(10), { identity: 't', term: 0 }));
    expect(doc.nodes['node-a']).toMatchObject({
      agent: 'collector-error',
      observed_at: isoAt(-30),
      npus: [],
    });
  });
});

describe('deadline queue: a tick costs what expires, not the fleet', () => {
  const nodes = Array.from({ length: 1000 }, (_, i) => `n${i}`);
  const pops = (e: ReloadableEngine, fn: () => void): number => {
    const before = e.stats().pops;
    fn();
    return e.stats().pops - before;
  };

  it('pops nothing on ticks with nothing due, one entry per node per 5 s otherwise', () => {
    const e = createEngine();
    const seq = new Map<string, number>();
    const see = (name: string, t: number): void => {
      seq.set(name, (seq.get(name) ?? 0) + 1);
      e.observe(npuSnapshot({ node: name, seq: seq.get(name) ?? 0, t }, [cool()]), at(t));
    };
    for (const name of nodes) see(name, 0);
    expect(e.stats()).toMatchObject({ nodes: 1000, queued: 1000, pushes: 1000 });
    // Four seconds of jittered traffic, a tick at every clock move: 4,000 observes, 4,000 ticks.
    let work = 0;
    for (let s = 1; s <= 4; s++) {
      nodes.forEach((name, i) => {
        if (s > 1 && i < 10) return; // ten nodes fall silent after t=1
        const t = s + (i % 40) / 1000 - 0.02;
        work += pops(e, () => e.tick(at(t) - 1));
        see(name, t);
      });
    }
    expect(work).toBe(0);
    expect(e.stats().pushes).toBe(1000); // observes re-arm nothing: their entries are still queued
    expect(pops(e, () => e.tick(at(4.999)))).toBe(0);
    // At t=5 each node's first entry pops once and is queued again at its real deadline.
    let fired: Transition[] = [];
    expect(pops(e, () => (fired = e.tick(at(5))))).toBe(1000);
    expect(fired).toEqual([]);
    // The ten silent nodes went stale at 1 + 5 s (±20 ms): ten pops, ten transitions.
    expect(pops(e, () => (fired = e.tick(at(6.02))))).toBe(10);
    expect(fired.map((x) => x.node)).toEqual(nodes.slice(0, 10));
    expect(fired.map((x) => x.at)).toEqual(nodes.slice(0, 10).map((_, i) => isoAt(1 + i / 1000 - 0.02 + 5)));
    expect(pops(e, () => e.tick(at(8.9)))).toBe(0);
    expect(e.stats().fired).toBe(10);
  });

  it('fires deadlines in time order across nodes and kinds, even when noticed late', () => {
    const d = new Driver();
    d.npus(0, [cool()], { node: 'node-a' }); // stale at 5
    d.npus(0, [cool()], { node: 'node-b' });
    for (let t = 1; t <= 11; t++) d.npus(0, [cool()], { node: 'node-b', cached: true, now: t }); // collector-error at 11, stale at 16
    d.npus(2, [cool()], { node: 'node-c' }); // stale at 7
    const late = d.tick(30).map((x) => `${(parseTimestamp(x.at) - at(0)) / 1000}:${x.node}:${x.reason}`);
    expect(late).toEqual([
      '5:node-a:agent-unreachable',
      '7:node-c:agent-unreachable',
      '11:node-b:collector-error',
    ]);
    expect(d.engine.stats().fired).toBe(4); // node-b's agent-unreachable at 16 changed nothing published
  });

  it('fires agent-unreachable before collector-error on equal deadlines, and nodes in creation order', () => {
    const d = new Driver(createEngine(rulesSchema.parse({ overlays: { agent_unreachable_s: 10 } })));
    d.npus(0, [cool()], { node: 'node-b' });
    d.npus(0, [cool()], { node: 'node-a' });
    d.npus(0, [cool()], { node: 'node-b', cached: true });
    expect(d.tick(10).map((x) => `${x.node}:${x.reason}`)).toEqual([
      'node-b:agent-unreachable',
      'node-a:agent-unreachable',
    ]);
    expect(d.device('npu0', 10, 'node-b')?.reasons).toEqual(['agent-unreachable', 'collector-error']);
  });
});

describe('rules hot reload re-times pending deadlines', () => {
  const stale = (seconds: number, collector = 10): ReturnType<typeof rulesSchema.parse> =>
    rulesSchema.parse({ overlays: { agent_unreachable_s: seconds, collector_error_s: collector } });

  it('waits for a longer agent-unreachable threshold', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    d.engine.setRules(stale(10));
    expect(d.tick(5)).toEqual([]);
    expect(d.tick(9.999)).toEqual([]);
    expect(d.changes().at(-1)).toBe('0:npu0:unknown>healthy:null');
    d.tick(10);
    expect(d.changes().at(-1)).toBe('10:npu0:healthy>unknown:agent-unreachable');
  });

  it('fires earlier on a shorter one, stamped at the new deadline, even when that is already past', () => {
    const d = new Driver();
    d.npus(0, [cool()], { node: 'node-a' });
    d.npus(2.5, [cool()], { node: 'node-b' });
    d.tick(3);
    d.engine.setRules(stale(2));
    d.tick(3);
    expect(d.changes().slice(2)).toEqual(['2:npu0:healthy>unknown:agent-unreachable']);
    expect(d.tick(4.499)).toEqual([]);
    d.tick(4.5);
    expect(d.log.at(-1)).toMatchObject({ node: 'node-b', at: isoAt(4.5), reason: 'agent-unreachable' });
  });

  it('applies the new threshold to a snapshot after a silence (observe expires by the rules in force)', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    d.engine.setRules(stale(2));
    d.npus(3, [cool()]);
    expect(d.changes()).toEqual([
      '0:npu0:unknown>healthy:null',
      '2:npu0:healthy>unknown:agent-unreachable',
      '3:npu0:unknown>healthy:null',
    ]);
  });

  it('follows a shorten-then-restore without firing at the abandoned deadline', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    d.engine.setRules(stale(2));
    d.engine.setRules(stale(5));
    expect(d.tick(4.999)).toEqual([]);
    d.tick(5);
    expect(d.changes().at(-1)).toBe('5:npu0:healthy>unknown:agent-unreachable');
  });

  it('re-times collector-error both ways', () => {
    const d = new Driver(createEngine(stale(60)));
    d.npus(0, [cool()]);
    d.npus(0, [cool()], { cached: true, now: 1 }); // collector-error due at 11
    d.engine.setRules(stale(60, 30));
    expect(d.tick(20)).toEqual([]);
    d.engine.setRules(stale(60, 3));
    d.tick(20);
    expect(d.changes().at(-1)).toBe('4:npu0:healthy>unknown:collector-error');
  });

  it('leaves node-not-ready and clear out of the deadlines', () => {
    const d = new Driver();
    d.npus(0, [cool()]);
    d.log.push(...d.engine.setNodeReady('node-a', false, at(1)));
    d.clear('node-a', undefined, 2);
    d.tick(5);
    expect(d.engine.setNodeReady('node-a', true, at(6))).toEqual([]);
    expect(d.device('npu0', 6)).toMatchObject({ status: 'unknown', reason: 'agent-unreachable' });
    d.npus(7, [cool()]);
    expect(d.changes()).toEqual([
      '0:npu0:unknown>healthy:null',
      '1:npu0:healthy>unknown:node-not-ready',
      '7:npu0:unknown>healthy:null',
    ]);
    expect(d.engine.stats().fired).toBe(1);
  });
});

import { describe, expect, it } from '@jest/globals';
import { LinkTracker, formatWindow, type LinkReading, type LinkTrackerOptions } from './tracker.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 0, 1);

function tracker(options: Partial<LinkTrackerOptions> = {}): LinkTracker {
  return new LinkTracker({
    configured: { nic: [], rdma: [], hccn: [] },
    flapThreshold: 3,
    flapWindowMs: 10 * MIN,
    ...options,
  });
}

function nic(id: string, up: boolean | undefined, extra: Partial<LinkReading> = {}): LinkReading {
  return {
    id,
    kind: 'nic',
    up,
    seen:
      up === undefined
        ? 'operstate unreadable (EACCES)'
        : up
          ? 'operstate up, carrier 1'
          : 'operstate down, carrier 0',
    eligible: true,
    device: '0000:3b:00.0',
    ...extra,
  };
}

function rdma(id: string, up: boolean, extra: Partial<LinkReading> = {}): LinkReading {
  return {
    id,
    kind: 'rdma',
    up,
    seen: up ? 'state 4: ACTIVE, phys_state 5: LinkUp' : 'state 1: DOWN, phys_state 3: Disabled',
    eligible: true,
    ...extra,
  };
}

function hccn(id: string, up: boolean | undefined): LinkReading {
  return { id, kind: 'hccn', up, seen: `hccn_tool: link status ${up ? 'UP' : 'DOWN'}`, eligible: true };
}

const nics = (...readings: LinkReading[]) => ({ nic: { readings, absentIsGone: true } });

describe('LinkTracker: which links are watched', () => {
  it('watches an eligible NIC once seen up, and raises nic-link-down naming it and what was read', () => {
    const t = tracker();
    const first = t.update(T0, nics(nic('eth2', true)));
    expect(first.problems).toEqual([]);
    expect(first.watched.nic).toBe(1);
    expect(first.events).toEqual([expect.objectContaining({ id: 'eth2', what: 'watched' })]);
    const down = t.update(T0 + 5000, nics(nic('eth2', false)));
    expect(down.problems).toEqual([
      { reason: 'nic-link-down', message: 'eth2 down (operstate down, carrier 0)' },
    ]);
    expect(down.down.nic).toBe(1);
    expect(down.events).toEqual([expect.objectContaining({ id: 'eth2', what: 'down' })]);
    const back = t.update(T0 + 10_000, nics(nic('eth2', true)));
    expect(back.problems).toEqual([]);
    expect(back.events).toEqual([expect.objectContaining({ id: 'eth2', what: 'up' })]);
  });

  it('never watches a link that is not eligible (slow, virtual) or was never up since the start', () => {
    const t = tracker();
    t.update(T0, nics(nic('eth0', true, { eligible: false }), nic('eth5', false)));
    const verdict = t.update(T0 + 5000, nics(nic('eth0', false, { eligible: false }), nic('eth5', false)));
    expect(verdict.problems).toEqual([]);
    expect(verdict.watched.nic).toBe(0);
  });

  it('watches configured links from the first read, up or not; one never listed is not present', () => {
    const t = tracker({ configured: { nic: ['eth5', 'eth9'], rdma: [], hccn: [] } });
    const verdict = t.update(T0, nics(nic('eth5', false, { eligible: false })));
    expect(verdict.problems).toEqual([
      { reason: 'nic-link-down', message: 'eth9 not present; eth5 down (operstate down, carrier 0)' },
    ]);
    expect(verdict.watched.nic).toBe(2);
    expect(verdict.down.nic).toBe(2);
  });

  it('says a watched NIC that disappears is gone, naming its device, until it is back', () => {
    const t = tracker();
    t.update(T0, nics(nic('eth2', true), nic('eth3', true)));
    const gone = t.update(T0 + 5000, nics(nic('eth3', true)));
    expect(gone.problems).toEqual([{ reason: 'nic-link-down', message: 'eth2 gone (was 0000:3b:00.0)' }]);
    expect(gone.events).toEqual([expect.objectContaining({ id: 'eth2', what: 'gone' })]);
    // Still gone a round later: not forgotten.
    expect(t.update(T0 + 10_000, nics(nic('eth3', true))).problems).toHaveLength(1);
    const back = t.update(T0 + 15_000, nics(nic('eth2', true), nic('eth3', true)));
    expect(back.problems).toEqual([]);
    expect(back.events).toEqual([expect.objectContaining({ id: 'eth2', what: 'back' })]);
  });

  it('forgets an unwatched link that disappears (it raises nothing, then or later)', () => {
    const t = tracker();
    t.update(T0, nics(nic('veth1', true, { eligible: false })));
    expect(t.update(T0 + 5000, nics()).problems).toEqual([]);
  });

  it('keeps the last known state when a reading is unknown or a source is not read', () => {
    const t = tracker();
    t.update(T0, nics(nic('eth2', true)));
    t.update(T0 + 5000, nics(nic('eth2', false)));
    const unknown = t.update(T0 + 10_000, nics(nic('eth2', undefined)));
    expect(unknown.problems).toEqual([
      { reason: 'nic-link-down', message: 'eth2 down (operstate down, carrier 0)' },
    ]);
    const unread = t.update(T0 + 15_000, {});
    expect(unread.problems).toEqual(unknown.problems);
    // Unknown from the start is no problem: nothing is known of it.
    const fresh = tracker({ configured: { nic: ['eth7'], rdma: [], hccn: [] } });
    expect(fresh.update(T0, nics(nic('eth7', undefined))).problems).toEqual([]);
  });
});

describe('LinkTracker: flaps', () => {
  it('counts carrier_down_count increases, catching flaps between reads, until the window passes', () => {
    const t = tracker();
    t.update(T0, nics(nic('eth2', true, { downs: 10 })));
    const two = t.update(T0 + MIN, nics(nic('eth2', true, { downs: 12 })));
    expect(two.problems).toEqual([]);
    expect(two.flaps.nic).toBe(2);
    const three = t.update(T0 + 2 * MIN, nics(nic('eth2', true, { downs: 13 })));
    expect(three.problems).toEqual([
      { reason: 'nic-link-down', message: 'eth2 flapping: 3 losses in 10 min' },
    ]);
    expect(three.events).toEqual([expect.objectContaining({ id: 'eth2', what: 'flapping' })]);
    // The first two leave the window 10 min after they were counted.
    const later = t.update(T0 + 11 * MIN + 1, nics(nic('eth2', true, { downs: 13 })));
    expect(later.problems).toEqual([]);
    expect(later.events).toEqual([expect.objectContaining({ id: 'eth2', what: 'steady' })]);
  });

  it('reads carrier_changes as both directions: from up the first change is a loss, from down the second', () => {
    const t = tracker({ flapThreshold: 100 });
    t.update(T0, nics(nic('eth2', true, { transitions: 4 })));
    // up → down: one change, one loss.
    expect(t.update(T0 + 1000, nics(nic('eth2', false, { transitions: 5 }))).flaps.nic).toBe(1);
    // down → up: one change, no loss.
    expect(t.update(T0 + 2000, nics(nic('eth2', true, { transitions: 6 }))).flaps.nic).toBe(0);
    // up → down → up → down → up between reads: four changes, two losses.
    expect(t.update(T0 + 3000, nics(nic('eth2', true, { transitions: 10 }))).flaps.nic).toBe(2);
  });

  it('starts a new baseline when a counter goes back (a driver reload), counting no flap', () => {
    const t = tracker();
    t.update(T0, nics(nic('eth2', true, { downs: 50 })));
    const reset = t.update(T0 + 1000, nics(nic('eth2', true, { downs: 0 })));
    expect(reset.flaps.nic).toBe(0);
    expect(t.update(T0 + 2000, nics(nic('eth2', true, { downs: 1 }))).flaps.nic).toBe(1);
  });

  it('counts the transitions it sees where the kernel keeps no counter (or one that says less)', () => {
    const t = tracker();
    t.update(T0, nics(nic('eth2', true, { downs: 0 })));
    for (let i = 1; i <= 3; i++) {
      t.update(T0 + i * 2000 - 1000, nics(nic('eth2', false, { downs: 0 })));
      t.update(T0 + i * 2000, nics(nic('eth2', true, { downs: 0 })));
    }
    const verdict = t.update(T0 + 7000, nics(nic('eth2', true, { downs: 0 })));
    expect(verdict.problems).toEqual([
      { reason: 'nic-link-down', message: 'eth2 flapping: 3 losses in 10 min' },
    ]);
  });

  it('tells a down link how often it went down in the window', () => {
    const t = tracker();
    t.update(T0, nics(nic('eth2', true, { downs: 0 })));
    const verdict = t.update(T0 + 1000, nics(nic('eth2', false, { downs: 4 })));
    expect(verdict.problems).toEqual([
      { reason: 'nic-link-down', message: 'eth2 down (operstate down, carrier 0, 4 losses in 10 min)' },
    ]);
  });

  it('does not count flaps of unwatched links in the metric', () => {
    const t = tracker();
    t.update(T0, nics(nic('eth9', false, { downs: 0 })));
    expect(t.update(T0 + 1000, nics(nic('eth9', false, { downs: 5 }))).flaps.nic).toBe(0);
  });
});

describe('LinkTracker: RDMA ports and NPU RoCE ports', () => {
  it('raises rdma-port-down for a watched RDMA port, and counts link_downed', () => {
    const t = tracker();
    t.update(T0, { rdma: { readings: [rdma('mlx5_0/1', true, { downs: 0 })], absentIsGone: true } });
    const verdict = t.update(T0 + 1000, {
      rdma: { readings: [rdma('mlx5_0/1', false, { downs: 1 })], absentIsGone: true },
    });
    expect(verdict.problems).toEqual([
      { reason: 'rdma-port-down', message: 'mlx5_0/1 down (state 1: DOWN, phys_state 3: Disabled)' },
    ]);
    expect(verdict.flaps.rdma).toBe(1);
  });

  it('takes a configured RDMA device as all its ports, and one with no port as not present', () => {
    const t = tracker({ configured: { nic: [], rdma: ['mlx5_0', 'mlx5_9'], hccn: [] } });
    const verdict = t.update(T0, {
      rdma: {
        readings: [rdma('mlx5_0/1', false), rdma('mlx5_0/2', true), rdma('mlx5_1/1', false)],
        absentIsGone: true,
      },
    });
    expect(verdict.problems).toEqual([
      {
        reason: 'rdma-port-down',
        message: 'mlx5_9 not present; mlx5_0/1 down (state 1: DOWN, phys_state 3: Disabled)',
      },
    ]);
    expect(verdict.watched.rdma).toBe(3);
  });

  it('keeps an NPU the tool no longer lists in its last state, and a round without hccn_tool changes nothing', () => {
    const t = tracker();
    t.update(T0, { hccn: { readings: [hccn('npu0', true), hccn('npu1', true)], absentIsGone: false } });
    const down = t.update(T0 + 30_000, { hccn: { readings: [hccn('npu1', false)], absentIsGone: false } });
    const expected = [
      { reason: 'rdma-port-down', message: 'npu1 RoCE port down (hccn_tool: link status DOWN)' },
    ];
    expect(down.problems).toEqual(expected);
    expect(down.watched.hccn).toBe(2);
    expect(t.update(T0 + 35_000, nics()).problems).toEqual(expected);
  });

  it('keeps links of different kinds apart even when their names are the same', () => {
    const t = tracker();
    t.update(T0, {
      ...nics(nic('npu0', true)),
      hccn: { readings: [hccn('npu0', true)], absentIsGone: false },
    });
    const verdict = t.update(T0 + 1000, {
      ...nics(nic('npu0', true)),
      hccn: { readings: [hccn('npu0', false)], absentIsGone: false },
    });
    expect(verdict.problems.map((p) => p.reason)).toEqual(['rdma-port-down']);
  });
});

describe('LinkTracker: messages', () => {
  it('lists every link in one problem per reason, gone first, cut at 256 characters with a count', () => {
    const t = tracker();
    const many = Array.from({ length: 30 }, (_, i) => nic(`ens${i}f0`, true));
    t.update(T0, nics(...many));
    const verdict = t.update(
      T0 + 1000,
      nics(...many.slice(1).map((r) => ({ ...r, up: false, seen: 'operstate down' }))),
    );
    expect(verdict.problems).toHaveLength(1);
    const message = verdict.problems[0]?.message ?? '';
    expect(message.length).toBeLessThanOrEqual(256);
    expect(message).toMatch(
      /^ens0f0 gone \(was 0000:3b:00\.0\); ens1f0 down \(operstate down\); ens2f0 down/,
    );
    const kept = message.split('; ').length;
    expect(message).toMatch(new RegExp(`\\(\\+${30 - kept} more\\)$`));
  });

  it('writes windows in minutes or seconds', () => {
    expect(formatWindow(600_000)).toBe('10 min');
    expect(formatWindow(45_000)).toBe('45 s');
  });
});

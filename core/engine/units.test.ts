import { describe, expect, it } from '@jest/globals';
import { DEFAULT_RULES, rulesSchema } from '../../contracts/index.js';
import { admit, newBootTrack, RETIRED_BOOTS } from './dedup.js';
import { advance, initialFsm, type FsmState } from './fsm.js';
import {
  AGENT_UNREACHABLE,
  COLLECTOR_ERROR,
  NODE_NOT_READY,
  agentState,
  firstOverlay,
  overlayNames,
  publishedStatus,
} from './overlays.js';
import { compileReasons, firstReason, holdingMask, reasonNames, remapMask, signalMask } from './reasons.js';
import { inWindow, increased, nextBaseline, popcount, pushSample, windowMask } from './window.js';

const timing = { degradeMs: 60_000, failMs: 180_000, recoverSamples: 5 };
const table = compileReasons(DEFAULT_RULES);
const W = table.bit('high-temp');
const C = table.bit('pcie-link-down');

describe('fsm transition table', () => {
  const state = (s: Partial<FsmState>): FsmState => ({ ...initialFsm(0), ...s });
  it.each([
    { name: 'unknown, clean → healthy', from: state({}), active: 0, t: 1, to: 'healthy' },
    { name: 'unknown, critical → failed', from: state({}), active: C, t: 1, to: 'failed' },
    {
      name: 'unknown, warning < 60 s → unknown',
      from: state({ warnSince: 0 }),
      active: W,
      t: 59_999,
      to: 'unknown',
    },
    {
      name: 'unknown, warning 60 s → degraded',
      from: state({ warnSince: 0 }),
      active: W,
      t: 60_000,
      to: 'degraded',
    },
    {
      name: 'healthy, warning starts → healthy',
      from: state({ state: 'healthy' }),
      active: W,
      t: 100_000,
      to: 'healthy',
    },
    {
      name: 'healthy, warning 60 s → degraded',
      from: state({ state: 'healthy', warnSince: 40_000 }),
      active: W,
      t: 100_000,
      to: 'degraded',
    },
    {
      name: 'healthy, critical → failed',
      from: state({ state: 'healthy' }),
      active: C | W,
      t: 1,
      to: 'failed',
    },
    {
      name: 'degraded, 4th clean → degraded',
      from: state({ state: 'degraded', clean: 3 }),
      active: 0,
      t: 1,
      to: 'degraded',
    },
    {
      name: 'degraded, 5th clean → healthy',
      from: state({ state: 'degraded', clean: 4 }),
      active: 0,
      t: 1,
      to: 'healthy',
    },
    {
      name: 'degraded 180 s, reason active → failed',
      from: state({ state: 'degraded', since: 0, warnSince: 0 }),
      active: W,
      t: 180_000,
      to: 'failed',
    },
    {
      name: 'degraded 180 s, clean sample → degraded',
      from: state({ state: 'degraded', since: 0 }),
      active: 0,
      t: 180_000,
      to: 'degraded',
    },
    {
      name: 'degraded, critical → failed',
      from: state({ state: 'degraded', since: 0 }),
      active: C,
      t: 1,
      to: 'failed',
    },
    {
      name: 'failed, warning → failed',
      from: state({ state: 'failed', clean: 4 }),
      active: W,
      t: 1,
      to: 'failed',
    },
    {
      name: 'failed, 5th clean → healthy',
      from: state({ state: 'failed', clean: 4 }),
      active: 0,
      t: 1,
      to: 'healthy',
    },
  ])('$name', ({ from, active, t, to }) => {
    const fsm = { ...from };
    const changed = advance(fsm, active, table.critical, t, timing);
    expect(fsm.state).toBe(to);
    expect(changed).toBe(to !== from.state);
    if (changed) expect(fsm.since).toBe(t);
  });

  it('starts the warning run at the first warning sample and ends it at the first sample without one', () => {
    const fsm = initialFsm(0);
    advance(fsm, W, table.critical, 5, timing);
    advance(fsm, table.bit('health-warning'), table.critical, 6, timing);
    expect(fsm.warnSince).toBe(5);
    advance(fsm, C, table.critical, 7, timing);
    expect(fsm.warnSince).toBeNaN();
  });
});

describe('dedup', () => {
  it('admits the next seq, drops duplicates and older ones, takes a new boot, drops stragglers of retired boots', () => {
    const track = newBootTrack();
    expect([admit(track, 'a', 5), admit(track, 'a', 5), admit(track, 'a', 4), admit(track, 'a', 9)]).toEqual([
      'next',
      'duplicate',
      'out-of-order',
      'next',
    ]);
    expect([admit(track, 'b', 1), admit(track, 'a', 10), admit(track, 'b', 2)]).toEqual([
      'new-boot',
      'old-boot',
      'next',
    ]);
  });

  it('remembers a bounded number of retired boots', () => {
    const track = newBootTrack();
    for (let i = 0; i <= RETIRED_BOOTS + 2; i++) admit(track, `boot-${i}`, 1);
    expect(track.retired).toHaveLength(RETIRED_BOOTS);
    expect(admit(track, 'boot-0', 2)).toBe('new-boot');
  });
});

describe('window and counters', () => {
  it('keeps the last N flags and counts them', () => {
    const mask = windowMask(5);
    let bits = 0;
    for (const flag of [true, true, false, true, false, false]) bits = pushSample(bits, flag, mask);
    expect(bits.toString(2).padStart(5, '0')).toBe('10100');
    expect(popcount(bits)).toBe(2);
    expect(popcount(0xffffffff | 0)).toBe(32);
  });

  it.each([
    [null, 5, false, 5],
    [5, null, false, 5],
    [5, 5, false, 5],
    [5, 6, true, 6],
    [5, 0, false, 0],
  ])('counter %p → %p: increased %p, baseline %p', (base, value, inc, next) => {
    expect(increased(base, value)).toBe(inc);
    expect(nextBaseline(base, value)).toBe(next);
  });

  it('keeps an event in the window for exactly N samples', () => {
    expect([10, 11, 14, 15].map((n) => inWindow(n, 10, 5))).toEqual([true, true, true, false]);
  });
});

describe('reasons', () => {
  it('orders bits as CONTRACT §2.6 and names them', () => {
    const all = table.names.reduce((m, _n, i) => m | (1 << i), 0);
    expect(reasonNames(table, all)).toEqual([
      'npu-offline',
      'device-missing',
      'pcie-link-down',
      'ecc-uncorrectable',
      'health-critical',
      'xid-48',
      'xid-74',
      'xid-79',
      'xid-95',
      'xid-119',
      'xid-120',
      'fault-code',
      'ecc-thermal',
      'high-temp',
      'ecc-error',
      'health-warning',
      'xid-63',
      'xid-64',
      'xid-92',
      'xid-94',
      'inference-canary-failed',
    ]);
    expect(
      firstReason(table, table.bit('high-temp') | table.bit('ecc-error') | table.bit('fault-code:warning')),
    ).toBe('high-temp');
    expect(firstReason(table, 0)).toBeNull();
  });

  it('marks the contract critical and latched reasons', () => {
    expect(reasonNames(table, table.critical)).toEqual([
      'npu-offline',
      'device-missing',
      'pcie-link-down',
      'ecc-uncorrectable',
      'health-critical',
      'xid-48',
      'xid-74',
      'xid-79',
      'xid-95',
      'xid-119',
      'xid-120',
      'fault-code',
    ]);
    expect(reasonNames(table, table.latched)).toEqual([
      'ecc-uncorrectable',
      'xid-48',
      'xid-79',
      'xid-95',
      'xid-119',
      'xid-120',
    ]);
  });

  it('remaps masks by reason across rules with other XIDs, dropping unknown ones', () => {
    const other = compileReasons(rulesSchema.parse({ xids: { watched: [79, 13], critical: [79, 13] } }));
    const moved = remapMask(table.bit('high-temp') | table.bit('xid-79') | table.bit('xid-63'), table, other);
    expect(reasonNames(other, moved)).toEqual(['xid-79', 'high-temp']);
  });

  it('computes signals from status', () => {
    expect(signalMask(table, 'healthy', W)).toBe(W);
    expect(signalMask(table, 'degraded', W)).toBe(0);
    expect(signalMask(table, 'failed', W | C)).toBe(W);
    expect(signalMask(table, 'failed', W)).toBe(0); // failed through 180 s of degradation
    expect(signalMask(table, 'failed', W, true)).toBe(W); // failed by a critical reason, now quiet
  });

  it('holds unknown and degraded on any reason, failed only on a critical one, healthy on none', () => {
    expect(holdingMask(table, 'unknown', W)).toBe(W);
    expect(holdingMask(table, 'degraded', W)).toBe(W);
    expect(holdingMask(table, 'failed', W)).toBe(0);
    expect(holdingMask(table, 'failed', W | C)).toBe(C);
    expect(holdingMask(table, 'healthy', W | C)).toBe(0);
  });
});

describe('overlays', () => {
  it('publishes healthy/degraded/unknown as unknown under an overlay, failed as failed', () => {
    expect(
      (['healthy', 'degraded', 'unknown', 'failed'] as const).map((s) => publishedStatus(s, NODE_NOT_READY)),
    ).toEqual(['unknown', 'unknown', 'unknown', 'failed']);
    expect(publishedStatus('degraded', 0)).toBe('degraded');
    expect(overlayNames(COLLECTOR_ERROR | AGENT_UNREACHABLE)).toEqual([
      'agent-unreachable',
      'collector-error',
    ]);
    expect(firstOverlay(COLLECTOR_ERROR | NODE_NOT_READY)).toBe('node-not-ready');
    expect([
      agentState(0),
      agentState(COLLECTOR_ERROR),
      agentState(COLLECTOR_ERROR | AGENT_UNREACHABLE),
      agentState(NODE_NOT_READY),
    ]).toEqual(['ok', 'collector-error', 'stale', 'ok']);
  });
});

import { describe, expect, it } from '@jest/globals';
import type { PublishedDevice, PublishedNode } from '../../contracts/index.js';
import { createHeatTracker, heldHot, hotDevices, thermalWhy, trackHeat, type Heat } from './thermal.js';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');

function device(id: string, fields: Partial<PublishedDevice> = {}): PublishedDevice {
  return {
    id,
    key: `key-${id}`,
    resource_id: `Ascend910-${id}`,
    kind: 'npu',
    model: '910B',
    status: 'degraded',
    since: new Date(T0).toISOString(),
    reason: 'high-temp',
    reasons: ['high-temp'],
    signals: [],
    temperature_c: 90,
    power_w: 300,
    ecc_errors: 0,
    pcie_link_status: 'up',
    ...fields,
  };
}

function entry(node: string, npus: PublishedDevice[], agent: PublishedNode['agent'] = 'ok'): PublishedNode {
  return {
    node,
    observed_at: new Date(T0).toISOString(),
    agent,
    summary: { total: 8, healthy: 8 - npus.length, degraded: npus.length, failed: 0, unknown: 0 },
    npus,
  };
}

const starts = (heat: Heat): Record<string, Record<string, number>> =>
  Object.fromEntries(
    [...heat].map(([node, devices]) => [
      node,
      Object.fromEntries([...devices].map(([key, at]) => [key, (at - T0) / 1000])),
    ]),
  );

describe('the thermal preset clock', () => {
  it('takes as hot only high-temp among the active reasons of a reporting agent, status not unknown', () => {
    const hotNow = entry('n1', [
      device('a'),
      device('b', { status: 'healthy', reason: null, signals: ['high-temp'] }),
      device('c', { reasons: ['ecc-error'], reason: 'ecc-error' }),
      device('d', { status: 'unknown', reason: 'node-not-ready', reasons: ['high-temp', 'node-not-ready'] }),
      device('e', { status: 'failed', reason: 'pcie-link-down', reasons: ['pcie-link-down', 'high-temp'] }),
    ]);
    expect(hotDevices(hotNow).map((d) => d.id)).toEqual(['a', 'b', 'e']);
    expect(hotDevices({ ...hotNow, agent: 'stale' })).toEqual([]);
    expect(hotDevices({ ...hotNow, agent: 'collector-error' })).toEqual([]);
    expect(hotDevices(null)).toEqual([]);
    expect(hotDevices(undefined)).toEqual([]);
  });

  it('keeps the start of a run while it lasts, starts new runs now, and ends a run at any break', () => {
    const entries = new Map<string, PublishedNode | null>([
      ['n1', entry('n1', [device('a')])],
      ['n2', null],
    ]);
    const look = (node: string) => entries.get(node);
    let heat = trackHeat(new Map(), ['n1', 'n2'], look, T0);
    expect(starts(heat)).toEqual({ n1: { 'key-a': 0 } });

    entries.set('n1', entry('n1', [device('a'), device('b')]));
    entries.set('n2', entry('n2', [device('a')]));
    heat = trackHeat(heat, ['n1', 'n2'], look, T0 + 10_000);
    expect(starts(heat)).toEqual({ n1: { 'key-a': 0, 'key-b': 10 }, n2: { 'key-a': 10 } });

    // a cools; n2's agent goes stale: both runs end, and start again when seen hot again.
    entries.set('n1', entry('n1', [device('b')]));
    entries.set('n2', entry('n2', [device('a')], 'stale'));
    heat = trackHeat(heat, ['n1', 'n2'], look, T0 + 20_000);
    expect(starts(heat)).toEqual({ n1: { 'key-b': 10 } });
    entries.set('n1', entry('n1', [device('a'), device('b')]));
    entries.set('n2', entry('n2', [device('a')]));
    heat = trackHeat(heat, ['n1', 'n2'], look, T0 + 30_000);
    expect(starts(heat)).toEqual({ n1: { 'key-a': 30, 'key-b': 10 }, n2: { 'key-a': 30 } });
    // A node no longer among the nodes decided (deleted, not an accelerator node) is dropped.
    expect(starts(trackHeat(heat, ['n2'], look, T0 + 40_000))).toEqual({ n2: { 'key-a': 30 } });
  });

  it('holds a device from forSeconds on, and says why with the hold and temperature', () => {
    const node = entry('n1', [device('a', { temperature_c: 88.26 }), device('b', { temperature_c: null })]);
    const since = new Map([
      ['key-a', T0],
      ['key-b', T0 - 500_000],
    ]);
    expect(heldHot(node, since, 60, T0 + 59_999).map((h) => h.device.id)).toEqual(['b']);
    const held = heldHot(node, since, 60, T0 + 60_000);
    expect(held.map((h) => [h.device.id, h.seconds])).toEqual([
      ['a', 60],
      ['b', 560],
    ]);
    expect(held.map(thermalWhy)).toEqual(['high-temp for 60 s at 88.3 °C', 'high-temp for 560 s']);
    // No start known, or the device no longer hot: no hold.
    expect(heldHot(node, undefined, 0, T0)).toEqual([]);
    expect(heldHot(entry('n1', [device('a', { reasons: [] })]), since, 0, T0 + 60_000)).toEqual([]);
  });

  it('the tracker carries the heat between passes until told to forget it', () => {
    const tracker = createHeatTracker();
    const look = () => entry('n1', [device('a'), device('b')]);
    tracker.update(['n1'], look, T0);
    const later = tracker.update(['n1'], look, T0 + 5_000);
    expect(starts(later)).toEqual({ n1: { 'key-a': 0, 'key-b': 0 } });
    expect(tracker.devices()).toBe(2);
    expect(tracker.forget().size).toBe(0);
    expect(tracker.devices()).toBe(0);
    expect(starts(tracker.update(['n1'], look, T0 + 9_000))).toEqual({ n1: { 'key-a': 9, 'key-b': 9 } });
  });
});

import { describe, expect, it } from '@jest/globals';
import { createEngine, type NodeExplanation, type ReloadableEngine } from './index.js';
import { at, gpuSnapshot, isoAt, npuSnapshot } from './testing.js';

/** Feeds node-a's npu0 at `temps[i]` °C, one sample per 10 s from t = 0 (now = collected_at). */
function feedTemps(engine: ReloadableEngine, temps: number[]): void {
  temps.forEach((temp, i) => {
    engine.observe(npuSnapshot({ seq: i + 1, t: i * 10 }, [{ npu: 0, temp }, { npu: 1 }]), at(i * 10));
  });
}

function tracked(result: ReturnType<ReloadableEngine['explain']>): NodeExplanation {
  if (!result.tracked) throw new Error(`expected a tracked node: ${result.message}`);
  return result;
}

describe('explain', () => {
  it('shows a hot device’s window, its high-temp rule and the timer to degraded', () => {
    const engine = createEngine();
    feedTemps(engine, [50, 90, 91, 92]);
    const result = tracked(engine.explain('node-a', 'npu0', at(32)));
    expect(result).toMatchObject({ node: 'node-a', boot_id: 'boot-1', seq: 4, samples: 4, overlays: [] });
    expect(result.devices).toHaveLength(1);
    const device = result.devices[0]!;
    expect(device).toMatchObject({ id: 'npu0', status: 'healthy', state: 'healthy', temperature_c: 92 });
    expect(device.active).toEqual([
      {
        name: 'high-temp',
        severity: 'warning',
        latched: false,
        rule: 'at least 3 of the last 5 samples above 85 °C',
      },
    ]);
    expect(device.window.high_temp).toEqual({
      threshold_c: 85,
      min_samples: 3,
      hot: [false, true, true, true],
      count: 3,
    });
    // high-temp became active at t = 30 (3rd hot sample): degraded 60 s later, at t = 90.
    expect(device.timers).toEqual([
      expect.objectContaining({
        name: 'degraded',
        from: 'healthy',
        to: 'degraded',
        at: isoAt(90),
        in_ms: 60_000,
        clock: 'collected_at',
      }),
    ]);
    // The overlay deadline runs on the receiver clock: last seen at 30, unreachable at 35.
    expect(result.timers).toEqual([
      expect.objectContaining({ name: 'agent-unreachable', at: isoAt(35), in_ms: 3000, clock: 'receiver' }),
    ]);
    expect(device.latched).toEqual([]);
    expect(device.clear).toBeNull();
  });

  it('shows the timer to failed once degraded, and the rule that degraded it', () => {
    const engine = createEngine();
    feedTemps(engine, [90, 90, 90, 90, 90, 90, 90, 90, 90, 90]); // t = 0..90
    const device = tracked(engine.explain('node-a', 'npu0', at(90))).devices[0]!;
    expect(device.state).toBe('degraded');
    expect(device.decided_by).toContain('high-temp');
    expect(device.timers).toEqual([
      expect.objectContaining({ name: 'failed', from: 'degraded', to: 'failed', in_ms: 180_000 - 10_000 }),
    ]);
  });

  it('shows a latched XID, its rule and the clear command', () => {
    const engine = createEngine();
    engine.observe(
      gpuSnapshot({ seq: 1, t: 0 }, [{ index: 0, xids: [{ xid: 79, at: isoAt(0) }] }, { index: 1 }]),
      at(0),
    );
    const result = tracked(engine.explain('node-a', 'gpu0', at(1)));
    const device = result.devices[0]!;
    expect(device).toMatchObject({ status: 'failed', reason: 'xid-79', latched: ['xid-79'] });
    expect(device.active[0]).toEqual({
      name: 'xid-79',
      severity: 'critical',
      latched: true,
      rule: 'XID 79 (critical) within the last 5 samples',
    });
    expect(device.decided_by).toBe('critical reason xid-79 active: failed at once');
    expect(device.window.events).toEqual([{ name: 'xid-79', samples_ago: 0 }]);
    expect(device.clear).toBe('npu-fault clear node-a/gpu0');
    expect(device.timers).toEqual([]);

    engine.clear('node-a', 'gpu0', at(2));
    const cleared = tracked(engine.explain('node-a', 'gpu0', at(2))).devices[0]!;
    expect(cleared).toMatchObject({ status: 'healthy', latched: [], clear: null });
  });

  it('explains every device of a node, sorted by id, and finds a device by key', () => {
    const engine = createEngine();
    feedTemps(engine, [50]);
    expect(tracked(engine.explain('node-a', undefined, at(1))).devices.map((d) => d.id)).toEqual([
      'npu0',
      'npu1',
    ]);
    const key = tracked(engine.explain('node-a', 'npu1', at(1))).devices[0]!.key;
    expect(tracked(engine.explain('node-a', key, at(1))).devices[0]!.id).toBe('npu1');
  });

  it('shows an overlay that overrides the state machine', () => {
    const engine = createEngine();
    feedTemps(engine, [50]);
    engine.tick(at(6));
    const result = tracked(engine.explain('node-a', 'npu0', at(6)));
    expect(result.overlays).toEqual(['agent-unreachable']);
    expect(result.timers).toEqual([]);
    expect(result.devices[0]).toMatchObject({
      status: 'unknown',
      state: 'healthy',
      reason: 'agent-unreachable',
    });
    expect(result.devices[0]!.decided_by).toContain('overlay agent-unreachable');
  });

  it('says "not tracked" for an unknown node or device', () => {
    const engine = createEngine();
    expect(engine.explain('nope', undefined, at(0))).toEqual({
      tracked: false,
      node: 'nope',
      device: null,
      message: 'node "nope" is not tracked: the engine has no device state for it',
    });
    feedTemps(engine, [50]);
    expect(engine.explain('node-a', 'npu9', at(0))).toEqual({
      tracked: false,
      node: 'node-a',
      device: 'npu9',
      message: 'device "npu9" is not tracked on node "node-a"',
    });
  });

  it('is plain JSON and changes no state', () => {
    const engine = createEngine();
    feedTemps(engine, [90, 90, 90]);
    const before = JSON.stringify(engine.document(at(20), { identity: 'x', term: 1 }));
    const result = engine.explain('node-a', undefined, at(20));
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
    expect(JSON.stringify(engine.document(at(20), { identity: 'x', term: 1 }))).toBe(before);
  });
});

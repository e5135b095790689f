import { describe, expect, it } from '@jest/globals';
import type { Snapshot } from '../../contracts/index.js';
import { findDevice } from './fleet.js';
import { demoScenario, SCENARIO, scenarioTrace } from './scenario.js';

const scenario = demoScenario();
const trace = scenarioTrace(scenario);
const secondOf = (s: Snapshot): number => Math.floor((Date.parse(s.collected_at) - scenario.start) / 1000);
const byNode = (node: string): Snapshot[] => trace.snapshots.filter((s) => s.node === node);

describe('demo scenario', () => {
  it('labels every device of the fleet exactly once, and only devices that exist', () => {
    const keys = scenario.expected.map((l) => `${l.node}/${l.device}`);
    expect(keys).toHaveLength(136);
    expect(new Set(keys).size).toBe(136);
    for (const l of scenario.expected) expect(findDevice(scenario.fleet, l.node, l.device)).toBeDefined();
  });

  it('expects the faults the brief promises', () => {
    const label = (node: string, device: string) =>
      scenario.expected.find((l) => l.node === node && l.device === device);
    expect(label(SCENARIO.heat.node, SCENARIO.heat.device)).toMatchObject({
      final: 'failed',
      steps: [{ to: 'degraded', reason: 'high-temp' }, { to: 'failed' }],
    });
    expect(label(SCENARIO.ecc.node, SCENARIO.ecc.device)).toMatchObject({
      final: 'failed',
      finalReason: 'ecc-uncorrectable',
    });
    expect(label(SCENARIO.spike.node, SCENARIO.spike.device)).toMatchObject({
      final: 'healthy',
      never: expect.arrayContaining(['degraded', 'failed']),
    });
    for (const d of SCENARIO.linkDown.devices)
      expect(label(SCENARIO.linkDown.node, d)?.finalReason).toBe('pcie-link-down');
    for (const d of SCENARIO.vanish.devices)
      expect(label(SCENARIO.vanish.node, d)?.finalReason).toBe('device-missing');
    const silent = scenario.expected.filter((l) => l.node === SCENARIO.silent.node);
    expect(silent).toHaveLength(8);
    for (const l of silent) expect(l.steps.map((s) => s.reason)).toEqual(['agent-unreachable', null]);
    const failed = scenario.expected.filter((l) => l.final === 'failed');
    expect(failed).toHaveLength(6);
  });

  it('makes the heat sustained and the spike isolated in the snapshots themselves', () => {
    const temp = (node: string, id: string) =>
      byNode(node).map((s) =>
        s.payload.family === '910B'
          ? (s.payload.npus.find((n) => `npu${n.npu}` === id)?.temp_c ?? null)
          : null,
      );
    const hot = temp(SCENARIO.heat.node, SCENARIO.heat.device);
    expect(hot.slice(26).every((t) => t !== null && t > 85)).toBe(true);
    const spike = temp(SCENARIO.spike.node, SCENARIO.spike.device);
    expect(spike.flatMap((t, i) => (t !== null && t > 85 ? [i] : []))).toEqual([15, 16]);
  });

  it('silences gpu-node-005 for 20 s and restarts the A3 agent with a new boot', () => {
    expect(
      byNode(SCENARIO.silent.node)
        .map(secondOf)
        .filter((s) => s >= 158 && s <= 181),
    ).toEqual([158, 159, 180, 181]);
    const a3 = byNode(SCENARIO.restart.node);
    expect(new Set(a3.map((s) => s.boot_id)).size).toBe(2);
    expect(a3.find((s) => secondOf(s) === 212)?.seq).toBe(1);
  });

  it('lists narrative events in time order, inside the scenario', () => {
    const ats = scenario.events.map((e) => e.at);
    expect(ats).toEqual([...ats].sort((a, b) => a - b));
    expect(ats.every((a) => a >= 0 && a < scenario.seconds)).toBe(true);
  });

  it('is deterministic per seed', () => {
    expect(scenarioTrace(demoScenario()).snapshots).toEqual(trace.snapshots);
    expect(scenarioTrace(demoScenario({ seed: 8 })).snapshots[0]).not.toEqual(trace.snapshots[0]);
  });
});

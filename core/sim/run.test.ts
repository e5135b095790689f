import { describe, expect, it } from '@jest/globals';
import type { Snapshot } from '../../contracts/index.js';
import type { DetectionEngine, ObserveResult, Transition } from '../engine/index.js';
import { checkLabels, playScenario, publishedDevices } from './run.js';
import { demoScenario, scenarioTrace, type ExpectedLabel } from './scenario.js';

const scenario = demoScenario();
const iso = (second: number): string => new Date(scenario.start + second * 1000).toISOString();
const t = (
  l: { node: string; device: string },
  to: Transition['to'],
  reason: string | null,
  second: number,
  from: Transition['from'] = 'healthy',
): Transition => ({
  at: iso(second),
  node: l.node,
  npu: l.device,
  key: l.device,
  from,
  to,
  reason,
});

/** The transitions a perfect engine would report: up at +0.5 s, then each step at its earliest second. */
function perfect(labels: readonly ExpectedLabel[]): Transition[] {
  return labels.flatMap((l) => [
    t(l, 'healthy', null, 0.5, 'unknown'),
    ...l.steps.map((s) => t(l, s.to, s.reason, s.within[0])),
  ]);
}

function documentFor(labels: readonly ExpectedLabel[]): unknown {
  const nodes: Record<string, { npus: unknown[] }> = {};
  for (const l of labels.filter((x) => x.final !== 'healthy')) {
    (nodes[l.node] ??= { npus: [] }).npus.push({ id: l.device, status: l.final, reason: l.finalReason });
  }
  return { nodes };
}

describe('checkLabels', () => {
  it('passes the transitions and document of an engine that does exactly what the labels say', () => {
    expect(checkLabels(scenario, perfect(scenario.expected), documentFor(scenario.expected))).toEqual([]);
  });

  it('reports a device that degrades when it never should', () => {
    const spike = scenario.expected.find((l) => l.device === 'npu1' && l.node === 'atlas900-node-002')!;
    const problems = checkLabels(scenario, [
      ...perfect(scenario.expected),
      t(spike, 'degraded', 'high-temp', 80),
    ]);
    expect(problems.some((p) => p.startsWith('atlas900-node-002 npu1: moved to degraded'))).toBe(true);
    expect(problems.some((p) => p.includes('ends degraded, expected healthy'))).toBe(true);
  });

  it('reports a missing step, a step outside its window, and a wrong final reason', () => {
    const heat = scenario.expected.find((l) => l.node === 'atlas900-node-003' && l.device === 'npu5')!;
    const others = perfect(scenario.expected.filter((l) => l !== heat));
    const late = [t(heat, 'healthy', null, 0.5, 'unknown'), t(heat, 'degraded', 'high-temp', 120)];
    const problems = checkLabels(
      scenario,
      [...others, ...late],
      documentFor(scenario.expected.map((l) => (l === heat ? { ...l, finalReason: 'ecc-error' } : l))),
    );
    expect(problems).toEqual([
      'atlas900-node-003 npu5: -> degraded at +120s, expected within [80, 96)',
      'atlas900-node-003 npu5: expected -> failed (high-temp); it did not happen',
      'atlas900-node-003 npu5: ends degraded, expected failed',
      'atlas900-node-003 npu5: published failed (ecc-error), expected failed (high-temp)',
    ]);
  });

  it('reports devices that never came up and transitions for devices that do not exist', () => {
    const problems = checkLabels(scenario, [
      t({ node: 'gpu-node-009', device: 'gpu0' }, 'healthy', null, 1, 'unknown'),
    ]);
    expect(problems).toContain('gpu-node-001 gpu0: never came up healthy');
    expect(problems).toContain('gpu-node-009/gpu0: a transition for a device the fleet does not have');
  });
});

describe('publishedDevices', () => {
  it('reads nodes[*].npus[*] and ignores malformed entries', () => {
    const map = publishedDevices({
      nodes: { n1: { npus: [{ id: 'npu1', status: 'failed', reason: 'x' }, { status: 'failed' }] } },
    });
    expect([...map]).toEqual([['n1/npu1', { status: 'failed', reason: 'x' }]]);
    expect(publishedDevices(null).size).toBe(0);
  });
});

describe('playScenario', () => {
  it('delivers every snapshot once, after it was collected, and ticks once per second', () => {
    const observed: Array<{ snapshot: Snapshot; now: number }> = [];
    const ticks: number[] = [];
    const engine: DetectionEngine = {
      observe: (snapshot, now): ObserveResult => {
        observed.push({ snapshot, now });
        return { accepted: true, transitions: [] };
      },
      tick: (now) => {
        ticks.push(now);
        return [];
      },
      setNodeReady: () => [],
      setNodeConditions: () => [],
      setKnownNodes: () => undefined,
      clear: () => [],
      document: () => ({}),
      deviceCount: () => 0,
    };
    const steps = [...playScenario(engine, scenario)];
    const trace = scenarioTrace(scenario);
    expect(steps).toHaveLength(scenario.seconds + 1);
    expect(observed).toHaveLength(trace.snapshots.length);
    expect(steps.reduce((n, s) => n + s.accepted, 0)).toBe(trace.snapshots.length);
    expect(ticks).toEqual(steps.map((s) => s.now));
    expect(ticks.every((now, i) => now === scenario.start + (i + 1) * 1000)).toBe(true);
    let last = 0;
    for (const { snapshot, now } of observed) {
      const collected = Date.parse(snapshot.collected_at);
      expect(now).toBeGreaterThan(collected);
      expect(now - collected).toBeLessThan(1000);
      expect(now).toBeGreaterThanOrEqual(last);
      last = now;
    }
    expect(steps.flatMap((s) => s.events)).toEqual(scenario.events);
  });
});

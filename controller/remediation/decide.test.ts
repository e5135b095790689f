import { describe, expect, it } from '@jest/globals';
import {
  CLOSED_BREAKER,
  type BreakerState,
  type NodeRecord,
  type PublishedNode,
} from '../../contracts/index.js';
import { parseRemediationConfig, type RemediationConfigInput } from './config.js';
import { breakerLimit, decide, type Action, type DecisionInput, type NodeFacts } from './decide.js';
import type { Heat } from './thermal.js';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');
const iso = (seconds: number): string => new Date(T0 + seconds * 1000).toISOString();

function failed(
  node: string,
  devices: { id: string; status?: 'failed' | 'degraded'; reason?: string }[],
): PublishedNode {
  return {
    node,
    observed_at: iso(0),
    agent: 'ok',
    summary: { total: 8, healthy: 8 - devices.length, degraded: 0, failed: devices.length, unknown: 0 },
    npus: devices.map((d, i) => ({
      id: d.id,
      key: `${node}/${d.id}`,
      resource_id: `Ascend910-${i}`,
      kind: 'npu',
      model: '910B',
      status: d.status ?? 'failed',
      since: iso(0),
      reason: d.reason ?? 'pcie-link-down',
      reasons: [d.reason ?? 'pcie-link-down'],
      signals: [],
      temperature_c: null,
      power_w: null,
      ecc_errors: null,
      pcie_link_status: null,
    })),
  } as PublishedNode;
}

function fact(name: string, fields: Partial<NodeFacts> = {}): NodeFacts {
  return {
    name,
    accelerator: true,
    unschedulable: false,
    optedOut: false,
    maintenance: false,
    record: undefined,
    ...fields,
  };
}

function record(fields: Partial<NodeRecord> = {}): NodeRecord {
  return {
    phase: 'cordoned',
    by: 'replica-a',
    term: 1,
    since: iso(0),
    reason: 'npu0: pcie-link-down',
    devices: ['Ascend910-0'],
    tainted: true,
    drainStartedAt: null,
    drainFinishedAt: null,
    blocking: [],
    recoveredAt: null,
    releasedAt: null,
    ...fields,
  };
}

function run(options: {
  nodes: NodeFacts[];
  entries?: Record<string, PublishedNode | null>;
  config?: RemediationConfigInput;
  at?: number;
  breaker?: BreakerState;
  draining?: string[];
  heat?: Heat;
}) {
  const input: DecisionInput = {
    now: T0 + (options.at ?? 0) * 1000,
    config: parseRemediationConfig({ mode: 'cordon', ...options.config }),
    identity: 'replica-b',
    term: 2,
    nodes: options.nodes,
    entry: (node) => options.entries?.[node],
    breaker: options.breaker ?? CLOSED_BREAKER,
    draining: new Set(options.draining ?? []),
    heat: options.heat ?? new Map(),
  };
  return decide(input);
}

const kinds = (actions: Action[]): string[] =>
  actions.map(
    (a) =>
      `${a.kind}:${a.node}${a.kind === 'skip' ? `:${a.why}` : ''}${a.kind === 'record' ? `:${a.record.phase}` : ''}`,
  );

/** Ten accelerator nodes n0..n9. */
const tenNodes = (overrides: Record<string, Partial<NodeFacts>> = {}): NodeFacts[] =>
  Array.from({ length: 10 }, (_, i) => fact(`n${i}`, overrides[`n${i}`]));

describe('decide', () => {
  it('cordons a node with a failed device, recording who, why and which devices', () => {
    const decision = run({ nodes: tenNodes(), entries: { n3: failed('n3', [{ id: 'npu0' }]) } });
    expect(kinds(decision.actions)).toEqual(['cordon:n3']);
    const action = decision.actions[0] as Extract<Action, { kind: 'cordon' }>;
    expect(action.record).toMatchObject({
      phase: 'cordoned',
      by: 'replica-b',
      term: 2,
      since: iso(0),
      reason: 'npu0: pcie-link-down',
      devices: ['Ascend910-0'],
      tainted: true,
    });
    expect(decision.breaker).toBeUndefined();
  });

  it('triggers on the configured count, statuses and reasons only', () => {
    const entries = { n1: failed('n1', [{ id: 'npu0', status: 'degraded', reason: 'high-temp' }]) };
    expect(run({ nodes: tenNodes(), entries }).actions).toEqual([]);
    expect(
      kinds(
        run({ nodes: tenNodes(), entries, config: { trigger: { statuses: ['failed', 'degraded'] } } })
          .actions,
      ),
    ).toEqual(['cordon:n1']);
    expect(
      run({
        nodes: tenNodes(),
        entries: { n1: failed('n1', [{ id: 'npu0' }]) },
        config: { trigger: { minDevices: 2 } },
      }).actions,
    ).toEqual([]);
    const twoFailed = { n1: failed('n1', [{ id: 'npu0' }, { id: 'npu1', reason: 'ecc-uncorrectable' }]) };
    expect(
      kinds(run({ nodes: tenNodes(), entries: twoFailed, config: { trigger: { minDevices: 2 } } }).actions),
    ).toEqual(['cordon:n1']);
    expect(
      run({ nodes: tenNodes(), entries: twoFailed, config: { trigger: { reasons: ['xid-79'] } } }).actions,
    ).toEqual([]);
    expect(
      kinds(
        run({
          nodes: tenNodes(),
          entries: twoFailed,
          config: { trigger: { reasons: ['ecc-uncorrectable'] } },
        }).actions,
      ),
    ).toEqual(['cordon:n1']);
  });

  it('never touches a node someone else cordoned, an opted-out one, or one in maintenance', () => {
    const entries = { n1: failed('n1', [{ id: 'npu0' }]) };
    expect(kinds(run({ nodes: tenNodes({ n1: { unschedulable: true } }), entries }).actions)).toEqual([
      'skip:n1:not-ours',
    ]);
    expect(kinds(run({ nodes: tenNodes({ n1: { optedOut: true } }), entries }).actions)).toEqual([
      'skip:n1:opted-out',
    ]);
    expect(kinds(run({ nodes: tenNodes({ n1: { maintenance: true } }), entries }).actions)).toEqual([
      'skip:n1:maintenance',
    ]);
    // Maintenance also stops what we started: no drain, no uncordon.
    const held = { n1: { maintenance: true, unschedulable: true, record: record() } };
    expect(
      kinds(
        run({
          nodes: tenNodes(held),
          entries: {},
          config: { mode: 'drain', uncordon: { enabled: true, holdSeconds: 0 } },
        }).actions,
      ),
    ).toEqual(['skip:n1:maintenance']);
    expect(kinds(run({ nodes: tenNodes({ n1: { recordError: 'bad' } }), entries }).actions)).toEqual([
      'skip:n1:record-invalid',
    ]);
  });

  it('counts nodes with a device to taint toward the breaker, below trigger.minDevices too', () => {
    // A fleet-wide false positive, one device per node, with minDevices raised for taint-only use.
    const entries = Object.fromEntries(tenNodes().map((n) => [n.name, failed(n.name, [{ id: 'npu0' }])]));
    const taintOnly = { trigger: { minDevices: 3 }, deviceTaints: { enabled: true } };
    const decision = run({ nodes: tenNodes(), entries, config: taintOnly });
    expect(decision.breaker?.state).toBe('open');
    expect(decision.unhealthy).toHaveLength(10);
    expect(decision.actions.filter((a) => a.kind !== 'skip')).toEqual([]);
    // Device taints off: nothing acts below minDevices, and nothing counts.
    const off = run({ nodes: tenNodes(), entries, config: { trigger: { minDevices: 3 } } });
    expect(off.breaker).toBeUndefined();
    expect(off.unhealthy).toEqual([]);
  });

  it('opens the breaker when 3 of 10 nodes fail at once, and cordons none of them', () => {
    const entries = Object.fromEntries(['n2', 'n5', 'n7'].map((n) => [n, failed(n, [{ id: 'npu0' }])]));
    const decision = run({ nodes: tenNodes(), entries });
    expect(decision.limit).toBe(1);
    expect(decision.breaker).toMatchObject({
      state: 'open',
      openedAt: iso(0),
      unhealthy: ['n2', 'n5', 'n7'],
    });
    expect(decision.breaker?.reason).toBe('3 of 10 accelerator nodes unhealthy (limit 1): n2, n5, n7');
    expect(kinds(decision.actions)).toEqual([
      'skip:n2:breaker-open',
      'skip:n5:breaker-open',
      'skip:n7:breaker-open',
    ]);
  });

  it('counts held and recently released nodes, but not nodes in maintenance', () => {
    const nodes = tenNodes({
      n1: { unschedulable: true, record: record() },
      n2: { record: record({ phase: 'released', releasedAt: iso(-60) }) },
      n3: { maintenance: true },
    });
    const entries = { n3: failed('n3', [{ id: 'npu0' }]), n4: failed('n4', [{ id: 'npu0' }]) };
    const decision = run({ nodes, entries });
    expect(decision.unhealthy).toEqual(['n1', 'n2', 'n4']);
    expect(decision.breaker?.state).toBe('open');
    // Released longer ago than the window: no longer counted.
    const later = run({ nodes, entries, config: { breaker: { windowSeconds: 30 } } });
    expect(later.unhealthy).toEqual(['n1', 'n4']);
  });

  it('after a reset, acknowledged nodes proceed and only new ones count', () => {
    const entries = Object.fromEntries(['n2', 'n5'].map((n) => [n, failed(n, [{ id: 'npu0' }])]));
    const breaker: BreakerState = {
      ...CLOSED_BREAKER,
      acknowledged: ['n2', 'n5', 'n9'],
      closedAt: iso(-1),
      closedBy: 'alice',
    };
    const decision = run({ nodes: tenNodes(), entries, breaker });
    expect(kinds(decision.actions)).toEqual(['cordon:n2', 'cordon:n5']);
    // n9 recovered: no longer acknowledged (pruned), so a later failure of n9 counts again.
    expect(decision.breaker?.acknowledged).toEqual(['n2', 'n5']);
    const more = { ...entries, n6: failed('n6', [{ id: 'npu0' }]), n8: failed('n8', [{ id: 'npu0' }]) };
    expect(run({ nodes: tenNodes(), entries: more, breaker }).breaker?.state).toBe('open');
  });

  it('closes by itself only when configured, after the cooldown, with the count under the limit', () => {
    const open: BreakerState = {
      ...CLOSED_BREAKER,
      state: 'open',
      openedAt: iso(-100),
      reason: 'x',
      unhealthy: ['n1', 'n2'],
    };
    expect(run({ nodes: tenNodes(), entries: {}, breaker: open }).breaker?.state).toBe('open');
    expect(
      run({ nodes: tenNodes(), entries: {}, breaker: open, config: { breaker: { autoResetSeconds: 200 } } })
        .breaker?.state,
    ).toBe('open');
    const closed = run({
      nodes: tenNodes(),
      entries: {},
      breaker: open,
      config: { breaker: { autoResetSeconds: 60 } },
    });
    expect(closed.breaker).toMatchObject({ state: 'closed', closedBy: 'auto', closedAt: iso(0) });
    const stillBad = Object.fromEntries(['n2', 'n5'].map((n) => [n, failed(n, [{ id: 'npu0' }])]));
    expect(
      run({
        nodes: tenNodes(),
        entries: stillBad,
        breaker: open,
        config: { breaker: { autoResetSeconds: 60 } },
      }).breaker?.state,
    ).toBe('open');
  });

  it('the limit: the configured count, else the percentage, at least one', () => {
    expect(breakerLimit(parseRemediationConfig().breaker, 10)).toBe(1);
    expect(breakerLimit(parseRemediationConfig().breaker, 3)).toBe(1);
    expect(breakerLimit(parseRemediationConfig().breaker, 100)).toBe(10);
    expect(breakerLimit(parseRemediationConfig({ breaker: { maxUnhealthyNodes: 4 } }).breaker, 100)).toBe(4);
  });

  it('respects a manual uncordon until the node recovers and fails again after the cooldown', () => {
    const entries = { n1: failed('n1', [{ id: 'npu0' }]) };
    const uncordoned = run({ nodes: tenNodes({ n1: { unschedulable: false, record: record() } }), entries });
    expect(kinds(uncordoned.actions)).toEqual(['record:n1:overridden']);
    const overridden = record({ phase: 'overridden', releasedAt: iso(0) });
    expect(kinds(run({ nodes: tenNodes({ n1: { record: overridden } }), entries, at: 5 }).actions)).toEqual([
      'skip:n1:manual-uncordon',
    ]);
    // Never observed since this replica started: no evidence of recovery.
    expect(run({ nodes: tenNodes({ n1: { record: overridden } }), entries: {}, at: 5 }).actions).toEqual([]);
    expect(
      kinds(run({ nodes: tenNodes({ n1: { record: overridden } }), entries: { n1: null }, at: 5 }).actions),
    ).toEqual(['record:n1:released']);
    const released = record({ phase: 'released', releasedAt: iso(0) });
    expect(kinds(run({ nodes: tenNodes({ n1: { record: released } }), entries, at: 60 }).actions)).toEqual([
      'skip:n1:cooldown',
    ]);
    expect(kinds(run({ nodes: tenNodes({ n1: { record: released } }), entries, at: 601 }).actions)).toEqual([
      'cordon:n1',
    ]);
    expect(
      kinds(run({ nodes: tenNodes({ n1: { record: released } }), entries: {}, at: 601 }).actions),
    ).toEqual(['forget:n1']);
    // Configured not to respect it: cordoned again.
    expect(
      kinds(
        run({
          nodes: tenNodes({ n1: { record: record() } }),
          entries,
          config: { respectManualUncordon: false },
        }).actions,
      ),
    ).toEqual(['cordon:n1']);
  });

  it('drains after the delay, at most maxConcurrent at once, and resumes a drain nobody runs', () => {
    const entries = { n1: failed('n1', [{ id: 'npu0' }]), n2: failed('n2', [{ id: 'npu0' }]) };
    const nodes = tenNodes({
      n1: { unschedulable: true, record: record() },
      n2: { unschedulable: true, record: record() },
    });
    const breaker: BreakerState = { ...CLOSED_BREAKER, acknowledged: ['n1', 'n2'] };
    const config = { mode: 'drain' as const, drain: { delaySeconds: 30 } };
    expect(run({ nodes, entries, config, breaker, at: 10 }).actions).toEqual([]);
    expect(kinds(run({ nodes, entries, config, breaker, at: 30 }).actions)).toEqual([
      'drain:n1',
      'skip:n2:max-concurrent',
    ]);
    const draining = tenNodes({
      n1: { unschedulable: true, record: record({ phase: 'draining', drainStartedAt: iso(30) }) },
      n2: { unschedulable: true, record: record() },
    });
    const resumed = run({ nodes: draining, entries, config, breaker, at: 40 });
    expect(resumed.actions[0]).toMatchObject({ kind: 'drain', node: 'n1', resume: true });
    expect(kinds(resumed.actions)).toEqual(['drain:n1', 'skip:n2:max-concurrent']);
    expect(
      kinds(run({ nodes: draining, entries, config, breaker, at: 40, draining: ['n1'] }).actions),
    ).toEqual(['skip:n2:max-concurrent']);
  });

  it('retries a blocked drain after the drain timeout, and never drains in mode cordon', () => {
    const entries = { n1: failed('n1', [{ id: 'npu0' }]) };
    const blocked = tenNodes({
      n1: { unschedulable: true, record: record({ phase: 'blocked', drainFinishedAt: iso(0) }) },
    });
    const config = { mode: 'drain' as const, drain: { timeoutSeconds: 60 } };
    expect(run({ nodes: blocked, entries, config, at: 30 }).actions).toEqual([]);
    expect(kinds(run({ nodes: blocked, entries, config, at: 60 }).actions)).toEqual(['drain:n1']);
    expect(
      run({ nodes: tenNodes({ n1: { unschedulable: true, record: record() } }), entries, at: 600 }).actions,
    ).toEqual([]);
  });

  it('uncordons a node it cordoned after the hold, restarting the hold if it fails again', () => {
    const config = { uncordon: { enabled: true, holdSeconds: 120 } };
    const held = tenNodes({ n1: { unschedulable: true, record: record() } });
    const healthy = { n1: null };
    expect(run({ nodes: held, entries: healthy }).actions).toEqual([]);
    expect(kinds(run({ nodes: held, entries: healthy, config }).actions)).toEqual(['record:n1:cordoned']);
    const recovering = tenNodes({ n1: { unschedulable: true, record: record({ recoveredAt: iso(0) }) } });
    expect(run({ nodes: recovering, entries: healthy, config, at: 60 }).actions).toEqual([]);
    const uncordon = run({ nodes: recovering, entries: healthy, config, at: 120 }).actions[0];
    expect(uncordon).toMatchObject({
      kind: 'uncordon',
      node: 'n1',
      record: { phase: 'released', releasedAt: iso(120) },
    });
    const again = run({ nodes: recovering, entries: { n1: failed('n1', [{ id: 'npu0' }]) }, config, at: 60 })
      .actions[0];
    expect(again).toMatchObject({ kind: 'record', record: { recoveredAt: null } });
  });

  it('never uncordons on missing data: unobserved, a stale agent, unknown devices, or a failure below the trigger', () => {
    const config = { uncordon: { enabled: true, holdSeconds: 0 }, trigger: { minDevices: 2 } };
    const recovering = tenNodes({ n1: { unschedulable: true, record: record({ recoveredAt: iso(0) }) } });
    const unknown = failed('n1', [{ id: 'npu0' }]);
    unknown.npus[0]!.status = 'unknown';
    const stale = { ...unknown, agent: 'stale' as const };
    expect(run({ nodes: recovering, entries: {}, config, at: 600 }).actions).toEqual([]);
    expect(run({ nodes: recovering, entries: { n1: stale }, config, at: 600 }).actions).toEqual([]);
    expect(run({ nodes: recovering, entries: { n1: unknown }, config, at: 600 }).actions).toEqual([]);
    // One of two failed chips still failed (below minDevices 2): trouble restarts the hold.
    const partial = run({
      nodes: recovering,
      entries: { n1: failed('n1', [{ id: 'npu0' }]) },
      config,
      at: 600,
    });
    expect(partial.actions[0]).toMatchObject({ kind: 'record', record: { recoveredAt: null } });
  });

  it('takes a device that fails after the cordon into the record and drains again', () => {
    const nodes = tenNodes({
      n1: { unschedulable: true, record: record({ phase: 'drained', drainFinishedAt: iso(0) }) },
    });
    const entries = { n1: failed('n1', [{ id: 'npu0' }, { id: 'npu1' }]) };
    const [action] = run({ nodes, entries, config: { mode: 'drain' }, at: 10 }).actions;
    expect(action).toMatchObject({
      kind: 'record',
      record: { phase: 'cordoned', devices: ['Ascend910-0', 'Ascend910-1'], since: iso(10) },
    });
  });

  it('a manual uncordon takes our taint off with it', () => {
    const [action] = run({
      nodes: tenNodes({ n1: { record: record() } }),
      entries: { n1: failed('n1', [{ id: 'npu0' }]) },
    }).actions;
    expect(action).toMatchObject({
      kind: 'record',
      untaint: true,
      record: { phase: 'overridden', tainted: false },
    });
  });

  it('a node in maintenance holds no drain slot', () => {
    const entries = { n1: failed('n1', [{ id: 'npu0' }]), n2: failed('n2', [{ id: 'npu0' }]) };
    const nodes = tenNodes({
      n1: {
        unschedulable: true,
        maintenance: true,
        record: record({ phase: 'draining', drainStartedAt: iso(0) }),
      },
      n2: { unschedulable: true, record: record() },
    });
    const breaker: BreakerState = { ...CLOSED_BREAKER, acknowledged: ['n2'] };
    expect(kinds(run({ nodes, entries, breaker, config: { mode: 'drain' } }).actions)).toEqual([
      'skip:n1:maintenance',
      'drain:n2',
    ]);
    // Not drain mode: a leftover draining record is not resumed.
    const leftover = tenNodes({
      n1: { unschedulable: true, record: record({ phase: 'draining', drainStartedAt: iso(0) }) },
    });
    expect(
      run({
        nodes: leftover,
        entries: { n1: entries.n1 },
        config: { mode: 'cordon', breaker: { maxUnhealthyNodes: 5 } },
      }).actions,
    ).toEqual([]);
  });

  it('is deterministic: the same input gives the same actions in name order', () => {
    const entries = { n1: failed('n1', [{ id: 'npu0' }]) };
    const a = run({ nodes: tenNodes().reverse(), entries });
    const b = run({ nodes: tenNodes(), entries });
    expect(a).toEqual(b);
  });
});

/** A node entry whose devices run hot: `high-temp` active (a signal while healthy). */
function hot(
  node: string,
  devices: { id: string; status?: 'healthy' | 'degraded' | 'failed' | 'unknown'; temp?: number | null }[],
  agent: PublishedNode['agent'] = 'ok',
): PublishedNode {
  return {
    node,
    observed_at: iso(0),
    agent,
    summary: { total: 8, healthy: 8, degraded: 0, failed: 0, unknown: 0 },
    npus: devices.map((d) => {
      const status = d.status ?? 'degraded';
      return {
        id: d.id,
        key: `${node}/${d.id}`,
        resource_id: `Ascend910-${d.id.slice(3)}`,
        kind: 'npu',
        model: '910B',
        status,
        since: iso(0),
        reason: status === 'healthy' ? null : 'high-temp',
        reasons: ['high-temp'],
        signals: status === 'healthy' ? ['high-temp'] : [],
        temperature_c: d.temp === undefined ? 91.5 : d.temp,
        power_w: 300,
        ecc_errors: 0,
        pcie_link_status: 'up',
      };
    }),
  } as PublishedNode;
}

/** Heat: every listed device of each entry hot since `seconds` (relative to T0). */
function heatOf(entries: Record<string, PublishedNode | null>, seconds = 0): Heat {
  return new Map(
    Object.entries(entries).map(([node, entry]) => [
      node,
      new Map((entry?.npus ?? []).map((d) => [d.key, T0 + seconds * 1000])),
    ]),
  );
}

describe('decide: the thermal eviction preset', () => {
  const on = { thermalEviction: { enabled: true, forSeconds: 120 } };

  it('is off by default: a device hot for an hour (degraded, not failed) triggers nothing', () => {
    const entries = { n1: hot('n1', [{ id: 'npu2' }]) };
    const decision = run({ nodes: tenNodes(), entries, heat: heatOf(entries), at: 3600 });
    expect(decision.actions).toEqual([]);
    expect(decision.unhealthy).toEqual([]);
  });

  it('on: cordons once a device has been hot for forSeconds, not a millisecond before', () => {
    const entries = { n1: hot('n1', [{ id: 'npu2', status: 'healthy' }]) };
    const heat = heatOf(entries);
    expect(run({ nodes: tenNodes(), entries, heat, config: on, at: 119.999 }).actions).toEqual([]);
    const decision = run({ nodes: tenNodes(), entries, heat, config: on, at: 120 });
    expect(kinds(decision.actions)).toEqual(['cordon:n1']);
    expect(decision.actions[0]).toMatchObject({
      record: {
        phase: 'cordoned',
        reason: 'npu2: high-temp for 120 s at 91.5 °C',
        devices: ['Ascend910-2'],
        since: iso(120),
      },
    });
    expect(decision.unhealthy).toEqual(['n1']);
  });

  it('the hold is the heat it is given: a device with no start, or another device, does not count', () => {
    const entries = { n1: hot('n1', [{ id: 'npu2' }, { id: 'npu3', temp: null }]) };
    // Only npu3 has been hot long enough (npu2 just started); no temperature: none written.
    const heat: Heat = new Map([
      [
        'n1',
        new Map([
          ['n1/npu2', T0 + 600_000],
          ['n1/npu3', T0],
        ]),
      ],
    ]);
    const [cordon] = run({ nodes: tenNodes(), entries, heat, config: on, at: 600 }).actions;
    expect(cordon).toMatchObject({
      record: { reason: 'npu3: high-temp for 600 s', devices: ['Ascend910-3'] },
    });
    expect(run({ nodes: tenNodes(), entries, config: on, at: 600 }).actions).toEqual([]);
  });

  it('never counts missing data as heat: a stale agent, an unknown device', () => {
    const stale = { n1: hot('n1', [{ id: 'npu2' }], 'stale') };
    expect(
      run({ nodes: tenNodes(), entries: stale, heat: heatOf(stale), config: on, at: 600 }).actions,
    ).toEqual([]);
    const unknown = { n1: hot('n1', [{ id: 'npu2', status: 'unknown' }]) };
    expect(
      run({ nodes: tenNodes(), entries: unknown, heat: heatOf(unknown), config: on, at: 600 }).actions,
    ).toEqual([]);
  });

  it('adds to the trigger: a failed device keeps its reason, a hot one is added once', () => {
    const entry = failed('n1', [{ id: 'npu0' }]);
    const heatEntry = hot('n1', [{ id: 'npu0', status: 'failed' }, { id: 'npu5' }]);
    entry.npus.push(heatEntry.npus[1]!);
    // npu0 is failed and hot: listed once, with its failure.
    entry.npus[0]!.reasons.push('high-temp');
    const entries = { n1: entry };
    const [cordon] = run({ nodes: tenNodes(), entries, heat: heatOf(entries), config: on, at: 300 }).actions;
    expect(cordon).toMatchObject({
      kind: 'cordon',
      record: {
        reason: 'npu0: pcie-link-down, npu5: high-temp for 300 s at 91.5 °C',
        devices: ['Ascend910-0', 'Ascend910-5'],
      },
    });
    // A hot device is enough on its own, whatever minDevices the trigger asks.
    const alone = { n2: hot('n2', [{ id: 'npu1' }]) };
    const config = { ...on, trigger: { minDevices: 4 } };
    expect(
      kinds(run({ nodes: tenNodes(), entries: alone, heat: heatOf(alone), config, at: 120 }).actions),
    ).toEqual(['cordon:n2']);
  });

  it('is counted by the breaker: 3 of 10 hot at once open it, and none is cordoned', () => {
    const entries = Object.fromEntries(['n1', 'n4', 'n8'].map((n) => [n, hot(n, [{ id: 'npu0' }])]));
    const decision = run({ nodes: tenNodes(), entries, heat: heatOf(entries), config: on, at: 120 });
    expect(decision.breaker).toMatchObject({ state: 'open', unhealthy: ['n1', 'n4', 'n8'] });
    expect(kinds(decision.actions)).toEqual([
      'skip:n1:breaker-open',
      'skip:n4:breaker-open',
      'skip:n8:breaker-open',
    ]);
  });

  it('drains through the same path in mode drain, and takes a device that turns hot into the record', () => {
    const entries = { n1: hot('n1', [{ id: 'npu0' }]) };
    const held = tenNodes({
      n1: { unschedulable: true, record: record({ reason: 'npu0: high-temp for 120 s' }) },
    });
    const config = { ...on, mode: 'drain' as const };
    expect(kinds(run({ nodes: held, entries, heat: heatOf(entries), config, at: 130 }).actions)).toEqual([
      'drain:n1',
    ]);
    const more = { n1: hot('n1', [{ id: 'npu0' }, { id: 'npu6' }]) };
    const [grown] = run({ nodes: held, entries: more, heat: heatOf(more), config, at: 130 }).actions;
    expect(grown).toMatchObject({ kind: 'record', record: { devices: ['Ascend910-0', 'Ascend910-6'] } });
  });

  it('recovery: cooled, a node stays cordoned unless uncordon is on; still hot is no recovery', () => {
    const held = tenNodes({ n1: { unschedulable: true, record: record() } });
    // Cooled (absent from the document): left cordoned by default.
    expect(run({ nodes: held, entries: { n1: null }, config: on, at: 600 }).actions).toEqual([]);
    const config = { ...on, uncordon: { enabled: true, holdSeconds: 60 } };
    expect(kinds(run({ nodes: held, entries: { n1: null }, config, at: 600 }).actions)).toEqual([
      'record:n1:cordoned',
    ]);
    // Hot again but healthy (high-temp only a signal, its hold not over): not a recovery…
    const warm = { n1: hot('n1', [{ id: 'npu0', status: 'healthy' }]) };
    expect(run({ nodes: held, entries: warm, heat: heatOf(warm, 590), config, at: 600 }).actions).toEqual([]);
    // …and it restarts a recovery hold that had begun.
    const recovering = tenNodes({ n1: { unschedulable: true, record: record({ recoveredAt: iso(500) }) } });
    const [restart] = run({
      nodes: recovering,
      entries: warm,
      heat: heatOf(warm, 590),
      config,
      at: 600,
    }).actions;
    expect(restart).toMatchObject({ kind: 'record', record: { recoveredAt: null }, why: 'not healthy yet' });
    // Without the preset the same signal is no trouble (the default behaviour is kept).
    const plain = { uncordon: { enabled: true, holdSeconds: 60 } };
    expect(kinds(run({ nodes: recovering, entries: warm, config: plain, at: 600 }).actions)).toEqual([
      'uncordon:n1',
    ]);
  });
});

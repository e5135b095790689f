import { describe, expect, it } from '@jest/globals';
import { createEngine, type Transition } from '../core/engine/index.js';
import { npuSnapshot } from '../core/engine/testing.js';
import { FakeClock } from '../platform/index.js';
import { EngineHost, type TransitionCause } from './engine-host.js';
import { mergeView, snapshotOf, type MindClusterView } from './mindcluster/index.js';

const T0 = Date.parse('2026-11-29T08:00:00.000Z');

function setup() {
  const clock = new FakeClock(T0);
  const journal: string[] = [];
  const host = new EngineHost(createEngine(), clock, { append: (lines) => journal.push(...lines) });
  const seen: { transitions: readonly Transition[]; cause: TransitionCause }[] = [];
  host.onTransitions((transitions, cause) => seen.push({ transitions, cause }));
  return { clock, host, journal, seen };
}

describe('EngineHost', () => {
  it('observes at its clock, journals only what it accepted, and reports each result', () => {
    const { host, journal, seen } = setup();
    const first = npuSnapshot({ node: 'n1', seq: 1, t: 0 }, [{ npu: 0 }]);
    const results = host.accept([
      first,
      first,
      npuSnapshot({ node: 'n1', seq: 2, t: 1 }, [{ npu: 0, link: 'down', power: 90 }]),
    ]);
    expect(results).toEqual([
      { node: 'n1', accepted: true },
      { node: 'n1', accepted: false, dropped: 'duplicate' },
      { node: 'n1', accepted: true },
    ]);
    expect(journal.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([1, 2]);
    expect(seen.map((s) => [s.cause, s.transitions.map((t) => `${t.from}>${t.to}`)])).toEqual([
      ['observation', ['unknown>healthy', 'healthy>failed']],
    ]);
  });

  it('journals a batch in one write, and a batch with nothing accepted not at all', () => {
    const writes: (readonly string[])[] = [];
    const host = new EngineHost(createEngine(), new FakeClock(T0), { append: (lines) => writes.push(lines) });
    const first = npuSnapshot({ node: 'n1', seq: 1, t: 0 }, [{ npu: 0 }]);
    host.accept([first, npuSnapshot({ node: 'n2', seq: 1, t: 0 }, [{ npu: 0 }])]);
    host.accept([first]); // a duplicate: dropped
    expect(writes.map((lines) => lines.length)).toEqual([2]);
  });

  it('ticks overlays at its clock and reports them as such', async () => {
    const { host, clock, seen } = setup();
    host.accept([npuSnapshot({ node: 'n1', seq: 1, t: 0 }, [{ npu: 0 }])]);
    await clock.advance(5001);
    host.tick();
    expect(seen.at(-1)).toMatchObject({
      cause: 'tick',
      transitions: [{ from: 'healthy', to: 'unknown', reason: 'agent-unreachable' }],
    });
    expect(host.view('n1')).toMatchObject({ observed: true, entry: { agent: 'stale' } });
  });

  it('views a node: unobserved, healthy (no entry), failing (its entry and latches)', () => {
    const { host } = setup();
    expect(host.view('n1')).toEqual({ observed: false, entry: null, latched: [] });
    host.accept([npuSnapshot({ node: 'n1', seq: 1, t: 0 }, [{ npu: 0 }])]);
    expect(host.view('n1')).toEqual({ observed: true, entry: null, latched: [] });
    host.accept([npuSnapshot({ node: 'n1', seq: 2, t: 1 }, [{ npu: 0, sbe: 1, dbe: 1 }])]);
    const view = host.view('n1');
    expect(view.entry?.npus[0]?.reason).toBe('ecc-uncorrectable');
    expect(view.latched.map((l) => l.reasons)).toEqual([['ecc-uncorrectable']]);
    host.clear('n1', 'npu0');
    expect(host.view('n1').latched).toEqual([]);
  });

  it('forgets a removed node, which then reads as not observed', () => {
    const { host } = setup();
    host.accept([npuSnapshot({ node: 'n1', seq: 1, t: 0 }, [{ npu: 0 }])]);
    host.removeNode('n1');
    expect(host.view('n1').observed).toBe(false);
    expect(host.document({ identity: 'x', term: 1 }).node_count).toBe(0);
  });
});

describe('EngineHost with MindCluster (synthetic snapshots, the merge, the hand-over to an agent)', () => {
  const view: MindClusterView = {
    node: 'n1',
    resource: 'Ascend910',
    updateTime: 1,
    devices: [0, 1, 2, 3].map((index) => ({
      name: `Ascend910-${index}`,
      index,
      lists: index === 2 ? (['unhealthy'] as const).slice() : (['available'] as const).slice(),
      faults: index === 2 ? [{ type: 'CardUnhealthy', level: 'SeparateNPU', codes: ['80E18402'] }] : [],
    })),
  };
  const healthyView: MindClusterView = {
    ...view,
    devices: view.devices.map((d) => ({ ...d, lists: ['available'], faults: [] })),
  };
  const agent = (seq: number, t: number) =>
    npuSnapshot(
      { node: 'n1', boot: 'agent-1', seq, t },
      [0, 1, 2, 3].map((npu) => ({ npu, bus: `0000:0${npu}:00.0` })),
    );
  const statuses = (host: EngineHost) =>
    Object.fromEntries((host.entry('n1')?.npus ?? []).map((d) => [`${d.resource_id}@${d.key}`, d.status]));

  it('an agent taking over keeps the failure MindCluster reported, under the agent’s key, and no device goes missing', async () => {
    const { host, clock, seen } = setup();
    let current: MindClusterView = view;
    host.setMerge((snapshot) => mergeView(snapshot, current));
    for (let seq = 0; seq < 3; seq++) {
      host.accept([snapshotOf(view, { bootId: 'mindcluster:uid', seq, now: clock.now() })], 'mindcluster');
      await clock.advance(1000);
    }
    expect(statuses(host)).toEqual({ 'Ascend910-2@npu2': 'failed' });
    expect(host.isAgentNode('n1')).toBe(false);
    // What the Node says (node-problem-detector's condition) must outlive the hand-over too.
    host.setNodeConditions('n1', { KernelDeadlock: 'True' });
    expect(host.entry('n1')?.reasons).toEqual(['kernel-deadlock']);

    // The agent's first sample says every chip is fine; MindCluster still separates Ascend910-2.
    expect(host.accept([agent(1, 3)])).toEqual([{ node: 'n1', accepted: true }]);
    expect(host.isAgentNode('n1')).toBe(true);
    expect(host.entry('n1')?.reasons).toEqual(['kernel-deadlock']);
    host.setNodeConditions('n1', {});
    expect(statuses(host)).toEqual({ 'Ascend910-2@0000:02:00.0': 'failed' });
    // A synthetic snapshot still in flight no longer applies.
    expect(
      host.accept([snapshotOf(view, { bootId: 'mindcluster:uid', seq: 9, now: clock.now() })], 'mindcluster'),
    ).toEqual([{ node: 'n1', accepted: false }]);
    // No transition ever took a device from failed to anything else.
    const fromFailed = seen.flatMap((s) => s.transitions).filter((t) => t.from === 'failed');
    expect(fromFailed).toEqual([]);

    // MindCluster clears it: recover_after_samples (5) clean agent samples bring it back.
    current = healthyView;
    for (let seq = 2; seq < 6; seq++) host.accept([agent(seq, seq + 2)]);
    expect(statuses(host)).toEqual({ 'Ascend910-2@0000:02:00.0': 'failed' });
    host.accept([agent(6, 8)]);
    expect(statuses(host)).toEqual({});
  });

  it('takes the origin from the caller: a posted snapshot with a mindcluster-like boot is an agent’s', () => {
    const { host } = setup();
    host.setMerge((snapshot) => mergeView(snapshot, view));
    const posted = snapshotOf(healthyView, { bootId: 'mindcluster:forged', seq: 1, now: T0 });
    expect(host.accept([posted])).toEqual([{ node: 'n1', accepted: true }]);
    expect(host.isAgentNode('n1')).toBe(true);
    // Merged like any agent's: MindCluster's Ascend910-2 failure applies.
    expect(statuses(host)).toEqual({ 'Ascend910-2@npu2': 'failed' });
  });

  it('journals the merged snapshot, so a replay reproduces what the engine saw', () => {
    const clock = new FakeClock(T0);
    const journal: string[] = [];
    const host = new EngineHost(createEngine(), clock, { append: (lines) => journal.push(...lines) });
    host.setMerge((snapshot) => mergeView(snapshot, view));
    host.accept([agent(1, 0)]);
    const npus = (
      JSON.parse(journal[0] ?? '{}') as { payload: { npus: { health: string; error_codes: string[] }[] } }
    ).payload.npus;
    expect(npus[2]).toMatchObject({ health: 'Critical', error_codes: ['80E18402'] });
  });

  it('a restarted replica seeded from the leader’s document agrees on which nodes are agent nodes', async () => {
    // The leader: n1 had an agent (now gone: agent-unreachable), n2 only MindCluster.
    const leader = setup();
    leader.host.accept([agent(1, 0)]);
    leader.host.accept(
      [snapshotOf({ ...view, node: 'n2' }, { bootId: 'mindcluster:uid-n2', seq: 1, now: T0 })],
      'mindcluster',
    );
    await leader.clock.advance(10_000);
    leader.host.tick();
    const document = leader.host.document({ identity: 'leader', term: 1 });
    expect(document.nodes['n1']?.agent).toBe('stale');
    // The replica restarted alone: seeded from the published document, it has heard no agent.
    const replica = setup();
    replica.host.seed(Object.values(document.nodes).map((entry) => ({ node: entry.node, entry })));
    for (const node of ['n1', 'n2'])
      expect([node, replica.host.isAgentNode(node)]).toEqual([node, leader.host.isAgentNode(node)]);
    expect(replica.host.isAgentNode('n1')).toBe(true);
    expect(replica.host.isAgentNode('n2')).toBe(false);
    // So MindCluster does not take n1 back on the replica, as it does not on the leader.
    const synthetic = snapshotOf(view, { bootId: 'mindcluster:uid', seq: 1, now: replica.clock.now() });
    expect(replica.host.accept([synthetic], 'mindcluster')).toEqual(
      leader.host.accept([synthetic], 'mindcluster'),
    );
    expect(replica.host.accept([synthetic], 'mindcluster')).toEqual([{ node: 'n1', accepted: false }]);
  });
});

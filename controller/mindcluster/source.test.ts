import { describe, expect, it } from '@jest/globals';
import type { Snapshot } from '../../contracts/index.js';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import { FakeListWatchClient } from '../../platform/k8s/watch/testing.js';
import { createMindClusterSource } from './source.js';
import { ascend910List, deviceInfoCfg, nodeInfoText, type NodeDFault } from './testing.js';

const configMap = (node: string, cfg: string, uid = `uid-${node}`) => ({
  metadata: {
    name: `mindx-dl-deviceinfo-${node}`,
    namespace: 'kube-system',
    uid,
    labels: { 'mx-consumer-cim': 'true' },
  },
  data: { DeviceInfoCfg: cfg },
});
const failing = deviceInfoCfg(
  ascend910List(4, { 1: { level: 'SeparateNPU', codes: ['80E18402'], list: 'Unhealthy' } }),
);

const nodeInfoMap = (node: string, text: string) => ({
  metadata: { name: `mindx-dl-nodeinfo-${node}`, namespace: 'mindx-dl', uid: `info-${node}` },
  data: { NodeInfo: text },
});
const cpuFault: NodeDFault = {
  DeviceType: 'CPU',
  DeviceId: 1,
  FaultCode: ['00000011'],
  FaultLevel: 'SeparateFault',
};

function setup(
  agentNodes: string[] = [],
  options: { maxSilenceMs?: number; maxNodes?: number } = {},
  isNode: (node: string) => boolean = () => true,
  nodeInfoClient?: FakeListWatchClient,
) {
  const clock = new FakeClock(Date.parse('2026-12-03T10:00:00Z'));
  const client = new FakeListWatchClient();
  const registry = new Registry();
  const accepted: Snapshot[] = [];
  const source = createMindClusterSource(
    {
      client,
      clock,
      log: createLogger({ level: 'silent' }),
      registry,
      accept: (snapshots) => accepted.push(...snapshots),
      isAgentNode: (node) => agentNodes.includes(node),
      isNode: (node) => isNode(node),
      ...(nodeInfoClient ? { nodeInfoClient } : {}),
    },
    { periodMs: 1000, graceMs: 5000, ...options },
  );
  const stop = new AbortController();
  const running = source.start(stop.signal);
  return {
    clock,
    client,
    registry,
    accepted,
    source,
    async stop() {
      stop.abort();
      await running;
    },
  };
}
const gaugeValue = async (registry: Registry, name: string, labels: Record<string, string> = {}) => {
  const metric = await registry.getSingleMetric(name)?.get();
  return (
    metric?.values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value))?.value ??
    Number.NaN
  );
};
const refusedCount = async (registry: Registry, reason: string): Promise<number> => {
  const metric = await registry
    .getSingleMetric('npu_fault_controller_mindcluster_configmaps_refused_total')
    ?.get();
  return metric?.values.find((v) => v.labels.reason === reason)?.value ?? Number.NaN;
};

describe('the MindCluster source', () => {
  it('emits nothing within the start grace, then a snapshot per agentless node each period, at once on a change', async () => {
    const t = setup(['with-agent']);
    t.client.apply(configMap('n1', failing));
    t.client.apply(configMap('with-agent', failing));
    t.client.apply({ metadata: { name: 'mindx-dl-nodeinfo-n1', uid: 'x' }, data: {} }); // not a device-info ConfigMap
    await t.client.waitForWatch(1);
    await t.clock.advance(4999);
    expect(t.accepted).toEqual([]);
    await t.clock.advance(1);
    expect(t.accepted.map((s) => [s.node, s.boot_id, s.seq, s.collector])).toEqual([
      ['n1', 'mindcluster:uid-n1', 1, 'mindcluster'],
    ]);
    await t.clock.advance(1000);
    expect(t.accepted.map((s) => s.seq)).toEqual([1, 2]);
    // A write is applied at once, not at the next period.
    t.client.apply(configMap('n1', deviceInfoCfg(ascend910List(4))));
    expect(t.accepted).toHaveLength(3);
    const last = t.accepted.at(-1);
    expect(last?.payload.family === '910B' && last.payload.npus.map((n) => n.health)).toEqual([
      'OK',
      'OK',
      'OK',
      'OK',
    ]);
    expect(t.source.view('with-agent')?.devices).toHaveLength(4); // lent to the merge
    await t.stop();
  });

  it('refuses a bad CheckCode (counted once per write) and stops emitting, keeping the last valid view for the merge; a delete stops and drops it', async () => {
    const t = setup();
    t.client.apply(configMap('n1', failing));
    t.client.apply(configMap('n2', failing));
    await t.client.waitForWatch(1);
    await t.clock.advance(5000);
    expect(t.accepted.map((s) => s.node)).toEqual(['n1', 'n2']);
    t.client.apply(configMap('n1', deviceInfoCfg(ascend910List(4), { checkCode: '0'.repeat(64) })));
    expect(await refusedCount(t.registry, 'integrity')).toBe(1);
    // Still merged into an agent's snapshots: the refused write does not lift npu1's failure.
    expect(t.source.view('n1')?.devices[1]?.lists).toEqual(['unhealthy']);
    t.client.delete('kube-system/mindx-dl-deviceinfo-n2');
    expect(t.source.view('n2')).toBeUndefined();
    await t.clock.advance(3000);
    expect(t.accepted.map((s) => s.node)).toEqual(['n1', 'n2']);
    // Valid again: a new write brings it back, its seq going on from the last one emitted
    // (the same uid is the same boot: a restart at 1 would be dropped as out of order).
    await t.clock.advance(3000); // several periods with the view dropped
    t.client.apply(configMap('n1', failing));
    expect(t.accepted.map((s) => [s.node, s.boot_id, s.seq])).toEqual([
      ['n1', 'mindcluster:uid-n1', 1],
      ['n2', 'mindcluster:uid-n2', 1],
      ['n1', 'mindcluster:uid-n1', 2],
    ]);
    await t.clock.advance(1000);
    expect(t.accepted.at(-1)?.seq).toBe(3);
    // A delete ends the boot: the ConfigMap created again (a new uid) counts from 1.
    t.client.apply(configMap('n2', failing, 'uid-n2-new'));
    expect(t.accepted.at(-1)).toMatchObject({ node: 'n2', boot_id: 'mindcluster:uid-n2-new', seq: 1 });
    expect(await refusedCount(t.registry, 'json')).toBe(0);
    await t.stop();
  });

  it('stops reporting a node whose ConfigMap goes unwritten past maxSilenceMs (counted and logged once); a write brings it back', async () => {
    const t = setup([], { maxSilenceMs: 10_000 });
    t.client.apply(configMap('quiet', failing));
    t.client.apply(configMap('busy', failing));
    await t.client.waitForWatch(1);
    await t.clock.advance(5000);
    const nodesAt = (from: number) => t.accepted.slice(from).map((s) => s.node);
    expect(nodesAt(0).sort()).toEqual(['busy', 'quiet']);
    // busy's plugin rewrites it (a new UpdateTime each time); quiet's is dead.
    for (let i = 1; i <= 4; i++) {
      await t.clock.advance(3000);
      t.client.apply(configMap('busy', deviceInfoCfg(ascend910List(4), { updateTime: 1_764_000_000 + i })));
    }
    // 17 s after the first list: quiet was last emitted at 10 s after it (the limit), busy goes on.
    const mark = t.accepted.length;
    await t.clock.advance(3000);
    expect(nodesAt(mark)).toEqual(['busy', 'busy', 'busy']);
    expect(t.accepted.filter((s) => s.node === 'quiet').at(-1)?.collected_at).toBe(
      new Date(Date.parse('2026-12-03T10:00:10Z')).toISOString(),
    );
    expect(await gaugeValue(t.registry, 'npu_fault_controller_mindcluster_nodes_silenced_total')).toBe(1);
    expect(await gaugeValue(t.registry, 'npu_fault_controller_mindcluster_nodes', { role: 'silent' })).toBe(
      1,
    );
    expect(
      await gaugeValue(t.registry, 'npu_fault_controller_mindcluster_nodes', { role: 'synthetic' }),
    ).toBe(1);
    // The plugin back: its write is applied at once and the node is reported again, same boot, seq on.
    const lastQuiet = t.accepted.filter((s) => s.node === 'quiet').at(-1)?.seq ?? 0;
    t.client.apply(configMap('quiet', deviceInfoCfg(ascend910List(4), { updateTime: 1_764_000_900 })));
    expect(t.accepted.at(-1)).toMatchObject({ node: 'quiet', seq: lastQuiet + 1 });
    await t.clock.advance(1000);
    expect(nodesAt(t.accepted.length - 2).sort()).toEqual(['busy', 'quiet']);
    expect(await gaugeValue(t.registry, 'npu_fault_controller_mindcluster_nodes_silenced_total')).toBe(1);
    await t.stop();
  });

  it('holds but neither emits nor merges a ConfigMap for a name that is no Node, until the Node exists; refuses views beyond maxNodes', async () => {
    const nodes = new Set(['n1', 'n2', 'n3']);
    const t = setup([], { maxNodes: 3 }, (node) => nodes.has(node));
    t.client.apply(configMap('n1', failing));
    t.client.apply(configMap('phantom', failing));
    await t.client.waitForWatch(1);
    await t.clock.advance(5000);
    expect(t.accepted.map((s) => s.node)).toEqual(['n1']);
    expect(t.source.view('phantom')).toBeUndefined(); // not merged either
    expect(
      await gaugeValue(t.registry, 'npu_fault_controller_mindcluster_nodes', { role: 'not-a-node' }),
    ).toBe(1);
    // Two more views reach maxNodes (3: n1, phantom, n2); the fourth is refused as `limit`.
    t.client.apply(configMap('n2', failing));
    t.client.apply(configMap('n3', failing));
    expect(await refusedCount(t.registry, 'limit')).toBe(1);
    expect(t.source.view('n3')).toBeUndefined();
    // A held view's ConfigMap rewritten is no new view: not refused.
    t.client.apply(configMap('n1', deviceInfoCfg(ascend910List(4), { updateTime: 1_764_000_001 })));
    expect(await refusedCount(t.registry, 'limit')).toBe(1);
    // The Node appears: its held view is reported from the next period.
    nodes.add('phantom');
    const mark = t.accepted.length;
    await t.clock.advance(1000);
    expect(
      t.accepted
        .slice(mark)
        .map((s) => s.node)
        .sort(),
    ).toEqual(['n1', 'n2', 'phantom']);
    expect(t.source.view('phantom')?.devices).toHaveLength(4);
    await t.stop();
  });

  describe("with NodeD's node-info ConfigMaps", () => {
    const problemsOf = (s: Snapshot | undefined) => s?.payload.node_problems;

    it('adds the host hardware fault to the synthetic snapshots at once, and a delete (NodeD: healthy) lifts it at once', async () => {
      const info = new FakeListWatchClient();
      const t = setup([], {}, () => true, info);
      t.client.apply(configMap('n1', failing));
      await t.client.waitForWatch(1);
      await info.waitForWatch(1);
      await t.clock.advance(5000);
      expect(problemsOf(t.accepted.at(-1))).toBeUndefined();
      info.apply(nodeInfoMap('n1', nodeInfoText([cpuFault], 'UnHealthy')));
      expect(t.accepted).toHaveLength(2); // at once, not at the next period
      expect(problemsOf(t.accepted.at(-1))).toEqual([
        { reason: 'host-hardware-fault', message: 'NodeD: node UnHealthy; CPU 1 00000011 (SeparateFault)' },
      ]);
      await t.clock.advance(1000);
      expect(problemsOf(t.accepted.at(-1))?.map((p) => p.reason)).toEqual(['host-hardware-fault']);
      expect(t.source.nodeProblems('n1').map((p) => p.reason)).toEqual(['host-hardware-fault']);
      expect(
        await gaugeValue(t.registry, 'npu_fault_controller_mindcluster_node_problems', {
          reason: 'host-hardware-fault',
        }),
      ).toBe(1);
      info.delete('mindx-dl/mindx-dl-nodeinfo-n1');
      expect(t.accepted).toHaveLength(4);
      expect(problemsOf(t.accepted.at(-1))).toBeUndefined();
      expect(t.source.nodeProblems('n1')).toEqual([]);
      await t.stop();
    });

    it('keeps the last valid report through a refused write (counted, reason named), and reads the next valid one', async () => {
      const info = new FakeListWatchClient();
      const t = setup([], {}, () => true, info);
      info.apply(nodeInfoMap('n1', nodeInfoText([cpuFault], 'UnHealthy')));
      await info.waitForWatch(1);
      info.apply(nodeInfoMap('n1', nodeInfoText([], 'Healthy', { checkCode: '0'.repeat(64) })));
      const refused = await t.registry
        .getSingleMetric('npu_fault_controller_mindcluster_node_info_refused_total')
        ?.get();
      expect(refused?.values.find((v) => v.labels.reason === 'integrity')?.value).toBe(1);
      expect(t.source.nodeProblems('n1').map((p) => p.reason)).toEqual(['host-hardware-fault']);
      info.apply(
        nodeInfoMap('n1', nodeInfoText([{ ...cpuFault, FaultLevel: 'PreSeparateFault' }], 'PreSeparate')),
      );
      expect(t.source.nodeProblems('n1').map((p) => p.reason)).toEqual(['host-hardware-warning']);
      info.apply(nodeInfoMap('n1', nodeInfoText([{ ...cpuFault, FaultLevel: 'NotHandleFault' }], 'Healthy')));
      expect(t.source.nodeProblems('n1')).toEqual([]);
      await t.stop();
    });

    it('counts a held problem whose ConfigMap NodeD stopped rewriting (3 × 30 minutes) as silent, and keeps the problem', async () => {
      const info = new FakeListWatchClient();
      const t = setup([], {}, () => true, info);
      info.apply(nodeInfoMap('n1', nodeInfoText([cpuFault], 'UnHealthy')));
      info.apply(nodeInfoMap('n2', nodeInfoText([cpuFault], 'UnHealthy')));
      await info.waitForWatch(1);
      const silent = () => gaugeValue(t.registry, 'npu_fault_controller_mindcluster_node_info_silent');
      await t.clock.advance(5_400_000);
      expect(await silent()).toBe(0);
      info.apply(nodeInfoMap('n2', nodeInfoText([cpuFault], 'UnHealthy'))); // n2's NodeD rewrites it
      await t.clock.advance(1);
      expect(await silent()).toBe(1);
      expect(t.source.nodeProblems('n1').map((p) => p.reason)).toEqual(['host-hardware-fault']);
      await t.stop();
    });

    it('lends an agent node its problem for the merge (no snapshot of its own), and nothing for a name that is no Node', async () => {
      const info = new FakeListWatchClient();
      const t = setup(['with-agent'], {}, (node) => node !== 'phantom', info);
      info.apply(nodeInfoMap('with-agent', nodeInfoText([cpuFault], 'UnHealthy')));
      info.apply(nodeInfoMap('phantom', nodeInfoText([cpuFault], 'UnHealthy')));
      await info.waitForWatch(1);
      await t.clock.advance(6000);
      expect(t.accepted).toEqual([]); // a node-info alone makes no snapshot: no device view
      expect(t.source.nodeProblems('with-agent').map((p) => p.reason)).toEqual(['host-hardware-fault']);
      expect(t.source.nodeProblems('phantom')).toEqual([]);
      await t.stop();
    });
  });
});

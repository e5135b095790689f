/**
 * MindCluster in (issue 33, part 1), on the real control plane: a controller replica as a real
 * process under its ServiceAccount, with the shipped RBAC plus exactly the opt-in
 * k8s/controller/mindcluster/rbac.yaml (its namespace rewritten to the test's), reads
 * MindCluster's device-info ConfigMaps for a node that has no npu-fault agent and publishes its
 * faults; an update back to healthy clears them. Also: with the source off (and no grant)
 * nothing is read, a ConfigMap whose CheckCode does not match is refused and counted, and one
 * named for a name that is no Node is held unpublished until that Node exists.
 *
 * NodeD's node-info ConfigMaps are read from a second namespace under exactly
 * k8s/controller/mindcluster-node-info/rbac.yaml: a host hardware fault is published as the
 * node reason host-hardware-fault on an agentless node and on an agent node, and NodeD's delete
 * (its "healthy") lifts it.
 *
 * The latency from each ConfigMap write to the status ConfigMap showing it is printed
 * (source period 1 s + the leader's early write on a failure).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { manifestRbacObjects } from '../stack/index.js';
import { ascend910List, deviceInfoCfg, nodeInfoText } from '../controller/mindcluster/testing.js';
import { controllerAccess, functionCallerToken, type ControllerAccess } from './setup/controller-rbac.js';
import { startTestReplica, type ControllerProcess } from './setup/controller-process.js';
import { createTestNamespace, type TestNamespace } from './setup/cluster.js';
import { Fleet, Poster, StatusFollower } from './setup/fleet.js';
import { HAVE_REAL_FIXTURES, SKIPPED_WITHOUT_SHARED, readRealFixture } from './fixtures.js';

const RESOURCE = 'mindcluster.test/npu';
/** Source period (1 s) + the early write on a failure + the watch events: well within 8 s. */
const WITHIN_MS = 8_000;
/**
 * A warning (npu0's PreSeparateNPU) is smoothed as an agent's is: listed at once with its
 * reasons, status `unknown` until it has held degrade_after_s (60 s), then `degraded`.
 */
const warned = (status: string | undefined): boolean => status === 'unknown' || status === 'degraded';
/** Recovery takes recover_after_samples (5) clean samples at 1 Hz, then a write. */
const RECOVER_WITHIN_MS = 15_000;

async function metric(replica: ControllerProcess, line: string): Promise<string | undefined> {
  const response = await fetch(`http://127.0.0.1:${await replica.port('metrics')}/metrics`);
  return (await response.text()).split('\n').find((l) => l.startsWith(line));
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

describe("MindCluster's device-info ConfigMaps as observations on the real control plane", () => {
  let ns: TestNamespace;
  /** Where NodeD's node-info ConfigMaps are written (MindCluster's mindx-dl). */
  let nodeDNs: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  let follower: StatusFollower;
  let replica: ControllerProcess | undefined;
  const posters: Poster[] = [];
  const nodes: string[] = [];

  const configMapName = (node: string): string => `mindx-dl-deviceinfo-${node}`;
  /** Creates or replaces the node's device-info ConfigMap, as the device plugin does. */
  const writeDeviceInfo = async (node: string, cfg: string): Promise<void> => {
    const body: k8s.V1ConfigMap = {
      metadata: { name: configMapName(node), namespace: ns.name, labels: { 'mx-consumer-cim': 'true' } },
      data: { DeviceInfoCfg: cfg },
    };
    try {
      await core.replaceNamespacedConfigMap({ name: configMapName(node), namespace: ns.name, body });
    } catch (error) {
      if ((error as { code?: number }).code !== 404) throw error;
      await core.createNamespacedConfigMap({ namespace: ns.name, body });
    }
  };
  const createNode = async (name: string): Promise<void> => {
    nodes.push(name);
    await core.createNode({
      body: {
        metadata: { name },
        status: {
          capacity: { [RESOURCE]: '8' },
          conditions: [
            { type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: new Date() },
          ],
        },
      },
    });
  };
  const statusOf = (
    doc: { nodes: Record<string, { npus: { id: string; status: string; reasons: string[] }[] }> },
    node: string,
  ) => Object.fromEntries((doc.nodes[node]?.npus ?? []).map((d) => [d.id, d.status]));

  beforeAll(async () => {
    ns = await createTestNamespace('mindcluster');
    nodeDNs = await createTestNamespace('mindcluster-noded');
    access = await controllerAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    follower = new StatusFollower(ns.admin, ns.name);
    follower.start();
  });

  afterAll(async () => {
    for (const poster of posters) poster.stop();
    follower?.stop();
    await replica?.stop('SIGKILL');
    for (const name of nodes) await core?.deleteNode({ name }).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
    await nodeDNs?.dispose();
  });

  it('with the source off (and no grant) nothing is read', async () => {
    const node = `${ns.name}-off`;
    await createNode(node);
    await writeDeviceInfo(
      node,
      deviceInfoCfg(
        ascend910List(8, { 4: { level: 'SeparateNPU', codes: ['80E18402'], list: 'Unhealthy' } }),
      ),
    );
    const off = await startTestReplica({
      identity: 'replica-off',
      namespace: ns.name,
      access,
      args: [`--nodes-resource-names=${RESOURCE}`],
    });
    try {
      await off.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading');
      // Three written documents after the start: time enough for a source that ran to show.
      const since = Date.now();
      for (let i = 0; i < 3; i++)
        await follower.waitFor(
          (d) => Date.parse(d.timestamp) > since + i * 1000,
          10_000,
          `document ${i}`,
          since,
        );
      const last = follower.seen.at(-1)?.document;
      expect(last?.nodes[node]).toBeUndefined();
      expect(last?.unobserved).toContain(node);
      expect(await metric(off, 'npu_fault_controller_mindcluster_configmaps_refused_total')).toBeUndefined();
    } finally {
      await off.stop('SIGTERM');
    }
  }, 60_000);

  describe('source on, under k8s/controller/mindcluster/rbac.yaml', () => {
    const agentless = (): string => `${ns.name}-n0`;

    beforeAll(async () => {
      const objects = k8s.KubernetesObjectApi.makeApiClient(ns.admin);
      for (const object of manifestRbacObjects(['controller/mindcluster/rbac.yaml'], ns.name))
        await objects.create(object);
      // The node-info grant in NodeD's namespace, for the controller's ServiceAccount in ns.
      for (const object of manifestRbacObjects(['controller/mindcluster-node-info/rbac.yaml'], ns.name))
        await objects.create({ ...object, metadata: { ...object.metadata, namespace: nodeDNs.name } });
      await createNode(agentless());
      replica = await startTestReplica({
        identity: 'replica-1',
        namespace: ns.name,
        access,
        args: [
          `--nodes-resource-names=${RESOURCE}`,
          '--mindcluster-enabled',
          `--mindcluster-namespace=${ns.name}`,
          '--mindcluster-node-info-enabled',
          `--mindcluster-node-info-namespace=${nodeDNs.name}`,
        ],
      });
      await replica.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading');
    }, 60_000);

    it('publishes an agentless node’s faults from its ConfigMap, clears them on healthy; latency measured', async () => {
      const node = agentless();
      const latencies: number[] = [];
      // The in-repo sample, then one more failed device per write.
      let faulty: Parameters<typeof ascend910List>[1] = {
        4: { level: 'SeparateNPU', codes: ['80E18402', 'A8028801'], list: 'Unhealthy' },
        0: { level: 'PreSeparateNPU', codes: ['81078603'], list: 'NetworkUnhealthy' },
      };
      const writeAt = Date.now();
      await writeDeviceInfo(node, deviceInfoCfg(ascend910List(8, faulty)));
      const first = await follower.waitFor(
        (d) => statusOf(d, node).npu4 === 'failed' && warned(statusOf(d, node).npu0),
        WITHIN_MS + 5_000, // the first one waits for the source's start grace (5 s) too
        'npu4 failed and npu0 warned',
        writeAt,
      );
      const npus = first.document.nodes[node]?.npus ?? [];
      expect(npus.find((d) => d.id === 'npu4')).toMatchObject({
        resource_id: 'Ascend910-4',
        reasons: expect.arrayContaining(['health-critical', 'fault-code']),
      });
      expect(npus.find((d) => d.id === 'npu0')).toMatchObject({
        resource_id: 'Ascend910-0',
        reasons: expect.arrayContaining(['health-warning', 'fault-code']),
      });
      expect(first.document.nodes[node]?.summary).toMatchObject({
        total: 8,
        failed: 1,
        healthy: 6,
      });

      for (const index of [1, 2, 3, 5, 6]) {
        faulty = { ...faulty, [index]: { level: 'SeparateNPU', codes: ['80E01801'], list: 'Unhealthy' } };
        const at = Date.now();
        await writeDeviceInfo(
          node,
          deviceInfoCfg(ascend910List(8, faulty), { updateTime: 1_764_000_000 + index }),
        );
        const seen = await follower.waitFor(
          (d) => statusOf(d, node)[`npu${index}`] === 'failed',
          WITHIN_MS,
          `npu${index} failed`,
          at,
        );
        latencies.push(seen.at - at);
      }
      console.log(
        `MindCluster ConfigMap write → published failure: p50 ${percentile(latencies, 50)} ms, max ${Math.max(...latencies)} ms over ${latencies.length} writes (${latencies.join(', ')} ms)`,
      );
      expect(Math.max(...latencies)).toBeLessThan(WITHIN_MS);

      const healthyAt = Date.now();
      await writeDeviceInfo(node, deviceInfoCfg(ascend910List(8), { updateTime: 1_764_000_100 }));
      const healthy = await follower.waitFor(
        (d) =>
          d.nodes[node] === undefined || (d.nodes[node]?.npus ?? []).every((x) => x.status === 'healthy'),
        RECOVER_WITHIN_MS,
        'every device healthy again',
        healthyAt,
      );
      console.log(
        `MindCluster ConfigMap healthy again → published healthy: ${healthy.at - healthyAt} ms (recover_after_samples: 5)`,
      );
      expect(healthy.document.unobserved).not.toContain(node);
    }, 90_000);

    it('refuses a ConfigMap whose CheckCode does not match, counts it, and publishes nothing from it', async () => {
      const node = `${ns.name}-bad`;
      await createNode(node);
      const list = ascend910List(8, { 2: { level: 'SeparateNPU', codes: ['80E18402'], list: 'Unhealthy' } });
      await writeDeviceInfo(node, deviceInfoCfg(list, { checkCode: 'ab'.repeat(32) }));
      await replica?.waitForLog(
        (l) => l.node === node && String(l.message ?? '').includes('CheckCode'),
        10_000,
        'the refusal logged',
      );
      expect(
        await metric(
          replica as ControllerProcess,
          'npu_fault_controller_mindcluster_configmaps_refused_total{reason="integrity"}',
        ),
      ).toMatch(/ 1$/);
      const since = Date.now();
      await follower.waitFor(
        (d) => Date.parse(d.timestamp) > since + 2000,
        10_000,
        'two more documents',
        since,
      );
      expect(follower.seen.at(-1)?.document.nodes[node]).toBeUndefined();
    }, 30_000);

    it('holds a ConfigMap named for no Node without publishing it, and publishes it once the Node exists', async () => {
      const ghost = `${ns.name}-ghost`;
      const control = `${ns.name}-control`;
      await createNode(control);
      const failingList = ascend910List(8, {
        6: { level: 'SeparateNPU', codes: ['80E18402'], list: 'Unhealthy' },
      });
      // The ghost's ConfigMap first, then the control's, on the same watch: once the control's
      // failure is published, the ghost's ConfigMap has been read (and would be published too).
      const at = Date.now();
      await writeDeviceInfo(ghost, deviceInfoCfg(failingList));
      await writeDeviceInfo(control, deviceInfoCfg(failingList));
      const controlSeen = await follower.waitFor(
        (d) => statusOf(d, control).npu6 === 'failed',
        WITHIN_MS,
        'the control node’s npu6 failed',
        at,
      );
      expect(controlSeen.document.nodes[ghost]).toBeUndefined();
      const more = await follower.waitFor(
        (d) => Date.parse(d.timestamp) > controlSeen.at + 2000,
        10_000,
        'two more documents',
        controlSeen.at,
      );
      expect(more.document.nodes[ghost]).toBeUndefined();
      expect(
        await metric(
          replica as ControllerProcess,
          'npu_fault_controller_mindcluster_nodes{role="not-a-node"}',
        ),
      ).toMatch(/ 1$/);
      // The Node created: the held view is reported from the source's next period.
      const createdAt = Date.now();
      await createNode(ghost);
      await follower.waitFor(
        (d) => statusOf(d, ghost).npu6 === 'failed',
        WITHIN_MS,
        'the ghost node’s npu6 failed once it is a Node',
        createdAt,
      );
    }, 40_000);

    it('merges MindCluster into a node with an agent: its SeparateNPU fails a chip the agent calls OK, the agent’s own fault stays', async () => {
      const node = `${ns.name}-agent`;
      await createNode(node);
      const fleet = new Fleet([node], 'agent-boot-1');
      fleet.faults.set(`${node}/npu5`, { link: 'down' }); // the agent's own fault
      const url = `http://127.0.0.1:${await (replica as ControllerProcess).port('observations')}`;
      const poster = new Poster(fleet, await functionCallerToken(ns), () => [{ identity: 'replica-1', url }]);
      posters.push(poster);
      poster.start();
      await follower.waitFor(
        (d) => statusOf(d, node).npu5 === 'failed',
        WITHIN_MS,
        'the agent’s npu5 failed',
      );
      const at = Date.now();
      await writeDeviceInfo(
        node,
        deviceInfoCfg(
          ascend910List(8, { 2: { level: 'SeparateNPU', codes: ['80E18402'], list: 'Unhealthy' } }),
        ),
      );
      const merged = await follower.waitFor(
        (d) => statusOf(d, node).npu2 === 'failed',
        WITHIN_MS,
        'npu2 failed',
        at,
      );
      console.log(
        `MindCluster ConfigMap write → merged into an agent node's next snapshot, published: ${merged.at - at} ms`,
      );
      const entry = merged.document.nodes[node];
      expect(entry?.npus.find((d) => d.id === 'npu2')?.reasons).toEqual(
        expect.arrayContaining(['health-critical', 'fault-code']),
      );
      expect(statusOf(merged.document, node).npu5).toBe('failed');
      // The agent's devices keep their keys (PCI addresses): nothing went missing, nothing doubled.
      expect(entry?.summary).toMatchObject({ total: 8, failed: 2, healthy: 6 });
      expect(entry?.npus.every((d) => d.key !== d.id)).toBe(true);
    }, 30_000);

    it('an agentless node that gets its agent keeps MindCluster’s failure under the agent’s key; no device goes missing', async () => {
      const node = `${ns.name}-handover`;
      await createNode(node);
      await writeDeviceInfo(
        node,
        deviceInfoCfg(
          ascend910List(8, { 3: { level: 'SeparateNPU', codes: ['80E18402'], list: 'Unhealthy' } }),
        ),
      );
      const before = await follower.waitFor(
        (d) => statusOf(d, node).npu3 === 'failed',
        WITHIN_MS,
        'npu3 failed',
      );
      expect(before.document.nodes[node]?.npus.find((d) => d.id === 'npu3')?.key).toBe('npu3');
      const url = `http://127.0.0.1:${await (replica as ControllerProcess).port('observations')}`;
      const poster = new Poster(new Fleet([node], 'agent-boot-2'), await functionCallerToken(ns), () => [
        { identity: 'replica-1', url },
      ]);
      posters.push(poster);
      const at = Date.now();
      poster.start();
      const handedOver = await follower.waitFor(
        (d) => (d.nodes[node]?.npus.find((x) => x.id === 'npu3')?.key ?? 'npu3') !== 'npu3',
        WITHIN_MS,
        'npu3 under the agent’s key',
        at,
      );
      expect(statusOf(handedOver.document, node).npu3).toBe('failed');
      // Three more documents: the agent's samples go on, and no synthetic device reads as missing.
      const since = Date.now();
      const later = await follower.waitFor(
        (d) => Date.parse(d.timestamp) > since + 2000,
        10_000,
        'later',
        since,
      );
      expect(later.document.nodes[node]?.summary).toMatchObject({ total: 8, failed: 1, healthy: 7 });
      expect(later.document.nodes[node]?.npus.flatMap((d) => d.reasons)).not.toContain('device-missing');
    }, 40_000);

    it("publishes NodeD's host hardware fault as a node reason, on an agentless node and on an agent node; NodeD's delete lifts it", async () => {
      const agentless = `${ns.name}-noded`;
      const withAgent = `${ns.name}-noded-agent`;
      await createNode(agentless);
      await createNode(withAgent);
      // One failed device on each, so both are listed (a node all healthy may be left out).
      await writeDeviceInfo(
        agentless,
        deviceInfoCfg(
          ascend910List(8, { 7: { level: 'SeparateNPU', codes: ['80E18402'], list: 'Unhealthy' } }),
        ),
      );
      const fleet = new Fleet([withAgent], 'agent-boot-3');
      fleet.faults.set(`${withAgent}/npu7`, { link: 'down' });
      const url = `http://127.0.0.1:${await (replica as ControllerProcess).port('observations')}`;
      const poster = new Poster(fleet, await functionCallerToken(ns), () => [{ identity: 'replica-1', url }]);
      posters.push(poster);
      poster.start();
      await follower.waitFor(
        (d) => statusOf(d, agentless).npu7 === 'failed' && statusOf(d, withAgent).npu7 === 'failed',
        WITHIN_MS + 5_000,
        'both nodes observed, npu7 failed on each',
      );
      const nodeInfoName = (node: string): string => `mindx-dl-nodeinfo-${node}`;
      const writeNodeInfo = async (node: string, text: string): Promise<void> => {
        await core.createNamespacedConfigMap({
          namespace: nodeDNs.name,
          body: {
            metadata: { name: nodeInfoName(node), labels: { 'mx-consumer-cim': 'true' } },
            data: { NodeInfo: text },
          },
        });
      };
      const cpu = { DeviceType: 'CPU', DeviceId: 1, FaultCode: ['00000011'], FaultLevel: 'SeparateFault' };
      const reasonsOf = (d: { nodes: Record<string, { reasons?: string[] }> }, node: string) =>
        d.nodes[node]?.reasons ?? [];

      const at = Date.now();
      await writeNodeInfo(agentless, nodeInfoText([cpu], 'UnHealthy'));
      await writeNodeInfo(withAgent, nodeInfoText([cpu], 'UnHealthy'));
      const faulted = await follower.waitFor(
        (d) =>
          reasonsOf(d, agentless).includes('host-hardware-fault') &&
          reasonsOf(d, withAgent).includes('host-hardware-fault'),
        WITHIN_MS,
        'host-hardware-fault on both nodes',
        at,
      );
      console.log(
        `NodeD node-info write → host-hardware-fault published on both nodes: ${faulted.at - at} ms`,
      );
      // A critical node reason: the devices not failed are published unknown with it as their reason.
      for (const node of [agentless, withAgent]) {
        const statuses = statusOf(faulted.document, node);
        expect(statuses.npu7).toBe('failed');
        expect(
          Object.entries(statuses)
            .filter(([id]) => id !== 'npu7')
            .every(([, s]) => s === 'unknown'),
        ).toBe(true);
        expect(faulted.document.nodes[node]?.npus.find((d) => d.id === 'npu0')?.reason).toBe(
          'host-hardware-fault',
        );
      }

      const deletedAt = Date.now();
      for (const node of [agentless, withAgent])
        await core.deleteNamespacedConfigMap({ name: nodeInfoName(node), namespace: nodeDNs.name });
      const lifted = await follower.waitFor(
        (d) =>
          !reasonsOf(d, agentless).includes('host-hardware-fault') &&
          !reasonsOf(d, withAgent).includes('host-hardware-fault'),
        WITHIN_MS,
        'host-hardware-fault lifted on both nodes',
        deletedAt,
      );
      console.log(
        `NodeD node-info delete → host-hardware-fault lifted on both nodes: ${lifted.at - deletedAt} ms`,
      );
      for (const node of [agentless, withAgent])
        expect(lifted.document.nodes[node]?.summary).toMatchObject({ total: 8, failed: 1, healthy: 7 });
    }, 40_000);

    (HAVE_REAL_FIXTURES ? it : it.skip)(
      `mindx-deviceinfo-1.json (real) publishes Ascend910-4 failed and Ascend910-0 warned${HAVE_REAL_FIXTURES ? '' : ` ${SKIPPED_WITHOUT_SHARED}`}`,
      async () => {
        const node = `${ns.name}-real`;
        await createNode(node);
        const at = Date.now();
        await writeDeviceInfo(node, readRealFixture('mindx-deviceinfo-1.json'));
        const seen = await follower.waitFor(
          (d) => statusOf(d, node).npu4 === 'failed' && warned(statusOf(d, node).npu0),
          WITHIN_MS,
          'the real sample published',
          at,
        );
        expect(seen.document.nodes[node]?.summary).toMatchObject({ total: 8, failed: 1, healthy: 6 });
        expect(seen.document.nodes[node]?.npus.find((d) => d.id === 'npu0')?.reasons).toEqual(
          expect.arrayContaining(['health-warning', 'fault-code']),
        );
        console.log(`real sample: ConfigMap write → published ${seen.at - at} ms`);
      },
      30_000,
    );
  });
});

/**
 * The published status stays true under an ingest outage and a flooding agent (issue 26), on
 * the real control plane: one controller replica as a real process under its shipped RBAC,
 * fed over HTTP with the ingest function's ServiceAccount token, as the function feeds it.
 *
 * - Outage: ten nodes post once a second; node 3's npu2 loses its PCIe link; then nodes 0-3
 *   (40 %) go silent. The ConfigMap reports `ingest_degraded` and still lists node 3 with
 *   npu2 failed; every reader takes the silent nodes as unknown, never healthy.
 * - Flood: one agent posts a snapshot of 512 GPUs (dropped, `too-many-devices`) and then a
 *   hundred snapshots of 32 GPUs with fresh uuids. The controller holds at most 32 devices
 *   for that node, and another node's XID 79 stays listed failed.
 *
 * The nodes carry a resource name of their own (`--nodes-resource-names`), so Nodes of tests
 * running beside this one do not count in this controller's document.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { nodeHealth, type PublishedDocument } from '../contracts/index.js';
import { gpuSnapshot } from '../contracts/testing.js';
import { controllerAccess, type ControllerAccess, functionCallerToken } from './setup/controller-rbac.js';
import { startTestReplica, type ControllerProcess } from './setup/controller-process.js';
import { createTestNamespace, type TestNamespace } from './setup/cluster.js';
import { Fleet, Poster, StatusFollower } from './setup/fleet.js';

const RESOURCE = 'status-true.test/npu';

describe('the status stays true on the real control plane (outage, flood)', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let core: k8s.CoreV1Api;
  let functionToken: string;
  let follower: StatusFollower;
  let replica: ControllerProcess;
  let url: string;
  let poster: Poster | undefined;
  const created: string[] = [];

  async function createNode(name: string): Promise<void> {
    const ready = [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test node' }];
    await core.createNode({
      body: { metadata: { name }, status: { capacity: { [RESOURCE]: '8' }, conditions: ready } },
    });
    created.push(name);
  }

  async function post(snapshots: unknown[]): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${url}/v1/observations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${functionToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ observations: snapshots.map((snapshot) => ({ snapshot })) }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: response.status, body: await response.json() };
  }

  async function metric(name: string): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${await replica.port('metrics')}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return Number(line?.split(' ')[1] ?? Number.NaN);
  }

  beforeAll(async () => {
    ns = await createTestNamespace('status-true');
    access = await controllerAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    functionToken = await functionCallerToken(ns);
    follower = new StatusFollower(ns.admin, ns.name);
    follower.start();
    replica = await startTestReplica({
      identity: 'replica-1',
      namespace: ns.name,
      access,
      args: [`--nodes-resource-names=${RESOURCE}`],
    });
    url = `http://127.0.0.1:${await replica.port('observations')}`;
    await replica.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading');
  });

  afterAll(async () => {
    poster?.stop();
    follower?.stop();
    await replica?.stop('SIGKILL');
    for (const name of created) await core?.deleteNode({ name }).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
  });

  it('an ingest outage of 4 nodes in 10 keeps the failed device listed, and no reader calls a silent node healthy', async () => {
    const names = Array.from({ length: 10 }, (_, i) => `${ns.name}-n${i}`);
    for (const name of names) await createNode(name);
    const fleet = new Fleet([...names], 'boot-1');
    const failing = names[3] as string;
    fleet.faults.set(`${failing}/npu2`, { link: 'down', power: 100 });
    poster = new Poster(fleet, functionToken, () => [{ identity: 'replica-1', url }]);
    poster.start();
    await follower.waitFor(
      (d) => d.nodes[failing]?.npus.some((x) => x.id === 'npu2' && x.status === 'failed') === true,
      30_000,
      'npu2 of node 3 failed',
    );
    // Nodes 0-3 go silent; the rest keep posting.
    fleet.nodes.splice(0, 4);
    const { document } = await follower.waitFor(
      (d) => d.ingest_degraded?.stale_nodes === 4,
      30_000,
      'an ingest outage of 4 nodes',
    );
    expect(Object.keys(document.nodes)).toEqual([failing]);
    expect(document.nodes[failing]?.agent).toBe('stale');
    expect(document.nodes[failing]?.npus.map((d) => `${d.id}:${d.status}`)).toEqual([
      'npu0:unknown',
      'npu1:unknown',
      'npu2:failed',
      'npu3:unknown',
      'npu4:unknown',
      'npu5:unknown',
      'npu6:unknown',
      'npu7:unknown',
    ]);
    const health = (node: string): string => nodeHealth(document, node);
    expect(names.map(health)).toEqual([
      'unknown',
      'unknown',
      'unknown',
      'failed',
      ...Array.from({ length: 6 }, () => 'unknown'),
    ]);
    poster.stop();
  });

  it('a flooding agent is bounded per node and cannot push another node’s failure out', async () => {
    const gpu = `${ns.name}-gpu`;
    const flood = `${ns.name}-flood`;
    await createNode(gpu);
    await createNode(flood);
    expect((await post([gpuSnapshot({ node: gpu, seq: 1, xids: [79] })])).status).toBe(200);
    const withGpus = (seq: number, count: number, prefix: string): unknown => {
      const snapshot = gpuSnapshot({ node: flood, seq, collectedAt: new Date().toISOString() });
      const [first] = (snapshot.payload as { gpus: object[] }).gpus;
      const gpus = Array.from({ length: count }, (_, index) => ({
        ...first,
        index,
        uuid: `GPU-${prefix}-${index}`,
      }));
      return { ...snapshot, payload: { family: 'nvidia', gpus } };
    };
    const over = await post([withGpus(1, 512, 'over')]);
    expect(over).toMatchObject({
      status: 200,
      body: { results: [{ node: flood, accepted: false, dropped: 'too-many-devices' }] },
    });
    for (let batch = 0; batch < 10; batch++) {
      const snapshots = Array.from({ length: 10 }, (_, i) => {
        const seq = 1 + batch * 10 + i;
        return withGpus(seq, 32, `s${seq}`);
      });
      const answer = await post(snapshots);
      expect(answer.status).toBe(200);
      expect((answer.body as { results: { accepted: boolean }[] }).results.every((r) => r.accepted)).toBe(
        true,
      );
    }
    expect(await metric('npu_fault_controller_devices_retired_total')).toBe(99 * 32);
    const seen = await follower.waitFor(
      (d: PublishedDocument) => d.nodes[gpu]?.npus[0]?.status === 'failed',
      30_000,
      "the other node's XID 79",
    );
    expect(seen.document.nodes[gpu]?.npus.map((d) => `${d.id}:${d.status}:${d.reason}`)).toEqual([
      'gpu0:failed:xid-79',
    ]);
    expect(seen.document.nodes[flood]).toBeUndefined(); // its 32 devices are healthy: nothing to list
    expect(seen.document.cluster_summary.total).toBeLessThanOrEqual(10 * 8 + 2 + 32);
  });
});

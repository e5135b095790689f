/**
 * The node-loss baseline on a real node-lifecycle controller: the kubelet stand-in keeps a
 * Node Ready past the grace period, and once it stops, the controller marks the Node Unknown
 * no sooner than a grace period after the last heartbeat, then taints it unreachable.
 *
 * A second stand-in keeps heartbeating throughout: with every Node of the cluster NotReady the
 * controller assumes the fault is its own ("master disruption mode") and taints nothing.
 *
 * The shared test plane runs without the node-lifecycle controller (its Nodes have no
 * kubelet), so this file starts a plane of its own with an 8 s grace period instead of the
 * default 50 s. Its state directory has the shared plane's prefix, so a run killed before
 * afterAll leaves an orphan that the next global setup removes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  notReadyWindowMs,
  readyOf,
  startKubeletStandIn,
  waitForNodeNotReady,
} from '../bench/pipeline/node-loss.js';
import { startControlPlane, stopControlPlane } from '../hack/control-plane.js';
import { watchUntil } from './setup/cluster.js';

const GRACE_SECONDS = 8;
/** A kubelet's proportions (renew every quarter of the Lease), scaled to the short grace. */
const HEARTBEAT = { leaseDurationSeconds: 8, renewIntervalSeconds: 2 };
/** Informer and watch delays on a loaded two-core machine. */
const SLACK_MS = 3_000;

let stateDir: string;
let kc: k8s.KubeConfig;

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'npu-fault-test-plane-'));
  const state = await startControlPlane({
    stateDir,
    nodeLifecycle: { gracePeriodSeconds: GRACE_SECONDS },
    log: () => undefined,
  });
  kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
}, 180_000);

afterAll(async () => {
  if (stateDir) await stopControlPlane(stateDir);
});

describe('node loss under the node-lifecycle controller', () => {
  it('stays Ready while the stand-in heartbeats, and goes Unknown a grace period after its last heartbeat', async () => {
    const node = 'node-loss-dies';
    const survivor = await startKubeletStandIn(kc, 'node-loss-lives', HEARTBEAT);
    const standIn = await startKubeletStandIn(kc, node, HEARTBEAT);
    const window = notReadyWindowMs({ gracePeriodSeconds: GRACE_SECONDS, ...HEARTBEAT });
    try {
      const firstBeat = standIn.lastHeartbeatAt();
      // Past the latest moment the controller would give up on a node that stopped at once.
      await expect(waitForNodeNotReady(kc, node, window.fromStop.max + SLACK_MS)).rejects.toThrow(
        /still Ready/,
      );
      expect(standIn.lastHeartbeatAt()).toBeGreaterThan(firstBeat);

      const lastBeat = standIn.lastHeartbeatAt();
      const waiting = waitForNodeNotReady(kc, node, window.fromStop.max + 2 * SLACK_MS);
      const stoppedAt = standIn.stop();
      const notReady = await waiting;

      expect(notReady).toMatchObject({ status: 'Unknown', reason: 'NodeStatusUnknown' });
      expect(notReady.at - lastBeat).toBeGreaterThanOrEqual(window.fromLastHeartbeat.min);
      expect(notReady.at - stoppedAt).toBeGreaterThanOrEqual(window.fromStop.min);
      expect(notReady.at - stoppedAt).toBeLessThanOrEqual(window.fromStop.max + SLACK_MS);

      const lease = await kc
        .makeApiClient(k8s.CoordinationV1Api)
        .readNamespacedLease({ name: node, namespace: 'kube-node-lease' });
      expect(lease.spec?.holderIdentity).toBe(node);
      expect(new Date(lease.spec?.renewTime ?? 0).getTime()).toBe(lastBeat); // nothing renewed it after the stop

      // What the controller does next: the NoExecute taint that evicts pods after their toleration.
      const tainted = await watchUntil<k8s.V1Node>(
        kc,
        '/api/v1/nodes',
        (n) =>
          (n.spec?.taints ?? []).some(
            (t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute',
          ),
        { fieldSelector: `metadata.name=${node}`, timeoutMs: 30_000, what: `${node} tainted unreachable` },
      );
      expect(tainted.metadata?.name).toBe(node);
      const lives = await kc.makeApiClient(k8s.CoreV1Api).readNode({ name: 'node-loss-lives' });
      expect(readyOf(lives).status).toBe('True');
    } finally {
      standIn.stop();
      survivor.stop();
    }
  }, 90_000);
});

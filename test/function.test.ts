/**
 * The ingest function end to end on the real control plane: an agent-shaped client posts a
 * snapshot under a real pod-bound token (ServiceAccount npu-fault-agent, audience npu-fault)
 * to `npu-fault function` (a real process, under the function's shipped RBAC), which checks
 * the token with TokenReview, validates, and sends the observation to two `npu-fault
 * controller` replicas (real processes, under theirs) found through a static list; the
 * leader's answer comes back to the client, and both replicas hold the observation. Then the
 * leader is killed: the function answers 503 with Retry-After (never a false 200) until the
 * standby leads, then 200 from it. (The EndpointSlice path: test/function-forwarder.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ingestResponseSchema, type Snapshot } from '../contracts/index.js';
import { npuSnapshot, type NpuSpec } from '../core/engine/testing.js';
import {
  controllerAccess,
  functionAccess,
  type ControllerAccess,
  functionTokenFile,
} from './setup/controller-rbac.js';
import {
  startControllerProcess,
  writeKubeConfig,
  type ControllerProcess,
} from './setup/controller-process.js';
import { createAgentIdentity } from './setup/agent-identity.js';
import { createTestNamespace, type TestNamespace } from './setup/cluster.js';
import { shippedNode } from '../hack/shipped-node.js';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const LEASE = [
  '--lease-duration-seconds=4',
  '--lease-renew-deadline-seconds=3',
  '--lease-retry-period-seconds=0.5',
];

describe('the ingest function between an agent and two controllers, on the real control plane', () => {
  let ns: TestNamespace;
  let controllers: ControllerAccess;
  let fn: ControllerAccess;
  let core: k8s.CoreV1Api;
  let node: string;
  let agentToken: string;
  let functionUrl: string;
  const dir = mkdtempSync(join(tmpdir(), 'npu-fault-function-'));
  const processes: ControllerProcess[] = [];
  const replicas: { process: ControllerProcess; url: string }[] = [];
  let seq = 0;

  const snapshot = (npus: Partial<NpuSpec>[] = []): Snapshot =>
    npuSnapshot(
      { node, boot: 'boot-1', seq: ++seq, t: 0, collectedAt: new Date().toISOString() },
      Array.from({ length: 8 }, (_, npu) => ({ npu, ...npus[npu] })),
    );

  const post = (body: unknown): Promise<Response> =>
    fetch(`${functionUrl}/v1/snapshots`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });

  beforeAll(async () => {
    ns = await createTestNamespace('function');
    controllers = await controllerAccess(ns);
    fn = await functionAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    node = `${ns.name}-n1`;
    agentToken = await (await createAgentIdentity(core, ns.name, node)).mintToken();

    for (const identity of ['replica-1', 'replica-2']) {
      const process = startControllerProcess({
        identity,
        kubeconfig: writeKubeConfig(await controllers.another()),
        args: [
          `--namespace=${ns.name}`,
          ...LEASE,
          `--auth-allowed-users=system:serviceaccount:${ns.name}:npu-fault-function`,
          `--record-observations=${join(dir, `${identity}.jsonl`)}`,
        ],
      });
      processes.push(process);
      replicas.push({ process, url: `http://127.0.0.1:${await process.port('observations')}` });
    }
    const function_ = startControllerProcess({
      identity: 'function',
      command: 'function',
      // Under the node flags its Deployment gives it (V8's heap settings).
      nodeArgs: shippedNode(join(repoRoot, 'k8s/functions/base/deployment.yaml')).nodeArgs,
      kubeconfig: writeKubeConfig(fn.kubeConfig),
      args: [
        `--namespace=${ns.name}`,
        `--token-file=${await functionTokenFile(ns, dir)}`,
        `--controllers=${replicas.map((r) => `${r.process.identity}=${r.url}`).join(',')}`,
        // The snapshots below are the simulator's (collector "sim"), refused by default.
        '--allow-simulated-collectors',
      ],
    });
    processes.push(function_);
    functionUrl = `http://127.0.0.1:${await function_.port('http')}`;
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await core?.deleteNode({ name: node }).catch(() => undefined);
    await controllers?.dispose();
    await fn?.dispose();
    await ns?.dispose();
  });

  it('answers the agent with the leader’s entry, after both replicas have the observation', async () => {
    const leader = await Promise.any(
      replicas.map((r) =>
        r.process.waitForLog((l) => l.msg === 'started leading', 30_000, 'leading').then(() => r),
      ),
    );
    // The function is ready once it knows the replicas and the leader.
    let response = await post(snapshot());
    for (let i = 0; response.status === 503 && i < 50; i++) {
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      await new Promise((resolve) => setTimeout(resolve, 200)); // the agent's retry, as told
      response = await post(snapshot());
    }
    expect(response.status).toBe(200);
    const failing = snapshot([{}, {}, { link: 'down', power: 120 }]);
    response = await post(failing);
    expect(response.status).toBe(200);
    const body = ingestResponseSchema.parse(await response.json());
    expect(body.leader).toBe(leader.process.identity);
    expect(body.results).toHaveLength(1);
    expect(body.results[0]).toMatchObject({ node, accepted: true });
    expect(body.results[0]?.entry?.npus.map((d) => [d.id, d.status, d.reason])).toEqual([
      ['npu2', 'failed', 'pcie-link-down'],
    ]);
    // Hot standby: the follower has it too (an ack comes only after the leader has it; the
    // follower's copy may land a moment later).
    for (const r of replicas) {
      await until(() => readJournal(r.process.identity).includes(failing.seq), 10_000);
      expect(readJournal(r.process.identity)).toContain(failing.seq);
    }
  });

  it('answers 503 with Retry-After, never a false 200, while no leader can accept; then 200 from the new leader', async () => {
    const leaderIdentity = ingestResponseSchema.parse(await (await post(snapshot())).json()).leader;
    const leader = replicas.find((r) => r.process.identity === leaderIdentity)!;
    const standby = replicas.find((r) => r !== leader)!;
    await leader.process.stop('SIGKILL');
    const statuses: number[] = [];
    let answeredBy: string | undefined;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const response = await post(snapshot());
      statuses.push(response.status);
      if (response.status === 200) {
        answeredBy = ingestResponseSchema.parse(await response.json()).leader;
        break;
      }
      expect(response.status).toBe(503);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      await new Promise((resolve) => setTimeout(resolve, 250)); // the agent's retry
    }
    expect(answeredBy).toBe(standby.process.identity);
    expect(statuses.filter((s) => s !== 503 && s !== 200)).toEqual([]);
  });

  /** Polls an observable state (a file the replica writes) until it holds, or the deadline. */
  async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  }

  function readJournal(identity: string): number[] {
    let text = '';
    try {
      text = readFileSync(join(dir, `${identity}.jsonl`), 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { seq: number }).seq);
  }
});

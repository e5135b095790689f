/**
 * The node agent end to end on the real control plane: `npu-fault agent --collector sim` (a
 * real process) pushes under a real pod-bound token (ServiceAccount npu-fault-agent,
 * audience npu-fault, bound to a pod on the agent's node) through `npu-fault function` into
 * two `npu-fault controller` replicas (real processes under their shipped RBAC). A fault
 * injected through the agent's fault API shows up in the published ConfigMap and on the
 * agent's node-local SSE stream; an injected XID takes the kernel-event path; the token file
 * is rotated under the running agent; SIGTERM stops it cleanly.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  FAULT_DATA_KEY,
  STATUS_CONFIGMAP_NAME,
  publishedDocumentSchema,
  type PublishedDocument,
} from '../contracts/index.js';
import { controllerAccess, functionAccess, type ControllerAccess } from './setup/controller-rbac.js';
import {
  startControllerProcess,
  writeKubeConfig,
  type ControllerProcess,
  startTestFunction,
} from './setup/controller-process.js';
import { createAgentIdentity } from './setup/agent-identity.js';
import { createTestNamespace, watchUntil, type TestNamespace } from './setup/cluster.js';
import { createSseParser } from '../consumer/index.js';

const LEASE = [
  '--lease-duration-seconds=4',
  '--lease-renew-deadline-seconds=3',
  '--lease-retry-period-seconds=0.5',
];

/** A Server-Sent Events reader: every `fault` event's data, in order. */
function followStream(url: string): {
  events: unknown[];
  next: (p: (e: unknown) => boolean, ms: number) => Promise<unknown>;
  close: () => void;
} {
  const abort = new AbortController();
  const events: unknown[] = [];
  const waiters: { predicate: (e: unknown) => boolean; resolve: (e: unknown) => void }[] = [];
  void (async () => {
    const response = await fetch(url, { headers: { accept: 'text/event-stream' }, signal: abort.signal });
    const decoder = new TextDecoder();
    const parse = createSseParser(({ data }) => {
      if (data === undefined || data === '') return;
      const event = JSON.parse(data) as unknown;
      events.push(event);
      for (const w of [...waiters]) {
        if (w.predicate(event)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(event);
        }
      }
    });
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      parse(decoder.decode(chunk, { stream: true }));
    }
  })().catch(() => undefined);
  return {
    events,
    next: (predicate, ms) =>
      new Promise((resolve, reject) => {
        const seen = events.find(predicate);
        if (seen !== undefined) return resolve(seen);
        const timer = setTimeout(
          () =>
            reject(
              new Error(`no matching SSE event within ${ms} ms; got ${JSON.stringify(events).slice(-600)}`),
            ),
          ms,
        );
        waiters.push({ predicate, resolve: (e) => (clearTimeout(timer), resolve(e)) });
      }),
    close: () => abort.abort(),
  };
}

interface EntryLike {
  npus?: Array<{ id: string; status: string; reason: string | null }>;
}
const deviceStatus = (entry: unknown, id: string): string | undefined =>
  (entry as EntryLike | null)?.npus?.find((d) => d.id === id)?.status;

describe('the node agent pushing through a real function into real controllers', () => {
  let ns: TestNamespace;
  let controllers: ControllerAccess;
  let fn: ControllerAccess;
  let core: k8s.CoreV1Api;
  let node: string;
  let agentUrl: string;
  let agent: ControllerProcess;
  const dir = mkdtempSync(join(tmpdir(), 'npu-fault-agent-'));
  const tokenFile = join(dir, 'token');
  // The fault API's own token, asked for even on loopback here so the test drives it with one.
  const faultToken = randomBytes(24).toString('hex');
  const faultTokenFile = join(dir, 'fault-token');
  const processes: ControllerProcess[] = [];

  let mintToken: () => Promise<string>;

  const inject = async (fault: Record<string, unknown>): Promise<Response> =>
    fetch(`${agentUrl}/v1/sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${faultToken}` },
      body: JSON.stringify(fault),
    });

  const documentOf = (cm: k8s.V1ConfigMap): PublishedDocument =>
    publishedDocumentSchema.parse(JSON.parse(cm.data?.[FAULT_DATA_KEY] ?? 'null'));
  const documentWhere = async (predicate: (doc: PublishedDocument) => boolean, what: string) =>
    documentOf(
      await watchUntil<k8s.V1ConfigMap>(
        ns.admin,
        `/api/v1/namespaces/${ns.name}/configmaps`,
        (cm) => {
          const text = cm.data?.[FAULT_DATA_KEY];
          if (text === undefined) return false;
          return predicate(publishedDocumentSchema.parse(JSON.parse(text)));
        },
        { fieldSelector: `metadata.name=${STATUS_CONFIGMAP_NAME}`, timeoutMs: 30_000, what },
      ),
    );
  const published = (doc: PublishedDocument, id: string): string | undefined =>
    doc.nodes[node]?.npus.find((d) => d.id === id)?.status;

  beforeAll(async () => {
    ns = await createTestNamespace('agent');
    controllers = await controllerAccess(ns);
    fn = await functionAccess(ns);
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
    node = `${ns.name}-n1`;
    const identity = await createAgentIdentity(core, ns.name, node);
    mintToken = () => identity.mintToken();
    writeFileSync(tokenFile, await mintToken(), { mode: 0o600 });
    writeFileSync(faultTokenFile, faultToken, { mode: 0o600 });

    const replicas: string[] = [];
    for (const identity of ['replica-1', 'replica-2']) {
      const process = startControllerProcess({
        identity,
        kubeconfig: writeKubeConfig(await controllers.another()),
        args: [
          `--namespace=${ns.name}`,
          ...LEASE,
          `--auth-allowed-users=system:serviceaccount:${ns.name}:npu-fault-function`,
        ],
      });
      processes.push(process);
      replicas.push(`${identity}=http://127.0.0.1:${await process.port('observations')}`);
    }
    const function_ = await startTestFunction({
      ns,
      access: fn,
      dir,
      controllers: replicas.join(','),
      // The agent below is simulated: its snapshots are refused without this.
      args: ['--allow-simulated-collectors'],
    });
    processes.push(function_);
    const functionUrl = `http://127.0.0.1:${await function_.port('http')}`;
    agent = startControllerProcess({
      identity: 'agent',
      command: 'agent',
      args: [
        '--collector=sim',
        '--sim-enabled',
        '--sim-kind=910B',
        `--sim-fault-token-file=${faultTokenFile}`,
        `--node=${node}`,
        `--function-url=${functionUrl}`,
        `--token-file=${tokenFile}`,
        '--probe-warmup-seconds=0',
        '--log-level=debug',
      ],
    });
    processes.push(agent);
    agentUrl = `http://127.0.0.1:${await agent.port('http')}`;
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await core?.deleteNode({ name: node }).catch(() => undefined);
    await controllers?.dispose();
    await fn?.dispose();
    await ns?.dispose();
  });

  it('a fault injected on the simulated node reaches the ConfigMap and the node-local SSE stream', async () => {
    const stream = followStream(`${agentUrl}/v1/fault/stream`);
    try {
      // The agent is live: its snapshots are accepted, the node healthy (absent from nodes).
      await stream.next((e) => (e as { leader?: unknown }).leader != null, 30_000);
      const response = await inject({ kind: 'offline', device: 'npu3' });
      expect(response.status).toBe(201);
      const doc = await documentWhere(
        (d) => published(d, 'npu3') === 'failed',
        'npu3 failed in the ConfigMap',
      );
      expect(doc.nodes[node]?.npus.filter((d) => d.status === 'failed').map((d) => d.id)).toEqual(['npu3']);
      const event = await stream.next(
        (e) => deviceStatus((e as { entry: unknown }).entry, 'npu3') === 'failed',
        15_000,
      );
      expect(event).toMatchObject({ node });
      // The plain endpoint says the same.
      const fault = (await (await fetch(`${agentUrl}/v1/fault`)).json()) as { entry: unknown };
      expect(deviceStatus(fault.entry, 'npu3')).toBe('failed');
    } finally {
      stream.close();
    }
  });

  it('the pods the (simulated) kubelet names on a failed device reach its entry, and leave with the fault', async () => {
    // npu3 is failed (the test above). A holder on it and one on a healthy device.
    const held = await inject({ kind: 'holder', device: 'npu3', pod: 'team-a/train-0' });
    expect(held.status).toBe(201);
    const other = await inject({ kind: 'holder', device: 'npu1', pod: 'team-b/infer-0' });
    expect(other.status).toBe(201);
    const doc = await documentWhere(
      (d) => d.nodes[node]?.npus.find((x) => x.id === 'npu3')?.pods !== undefined,
      'npu3 with its pods',
    );
    expect(doc.nodes[node]?.npus.find((x) => x.id === 'npu3')?.pods).toEqual(['team-a/train-0']);
    // Healthy devices are not listed, so who holds them is not published.
    expect(doc.nodes[node]?.npus.some((x) => x.id === 'npu1')).toBe(false);
    for (const { id } of [(await held.json()) as { id: number }, (await other.json()) as { id: number }]) {
      const ended = await fetch(`${agentUrl}/v1/sim/faults/${id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${faultToken}` },
      });
      expect(ended.status).toBeLessThan(300);
    }
    // No holder fault in effect: the simulated agent no longer knows, and says nothing.
    await documentWhere(
      (d) => d.nodes[node]?.npus.find((x) => x.id === 'npu3')?.pods === undefined,
      'npu3 without pods',
    );
  });

  it('a node problem the agent finds reaches the ConfigMap as a node reason, and its end clears it', async () => {
    const response = await inject({ kind: 'node-problem', reason: 'nic-link-down' });
    expect(response.status).toBe(201);
    const { id } = (await response.json()) as { id: number };
    const started = performance.now();
    const doc = await documentWhere(
      (d) => d.nodes[node]?.reasons?.includes('nic-link-down') === true,
      'nic-link-down on the node entry',
    );
    const seconds = (performance.now() - started) / 1000;
    // Critical by default: every device not failed is published unknown with it as its reason.
    const entry = doc.nodes[node];
    expect(entry?.npus.filter((d) => d.status !== 'failed').every((d) => d.reason === 'nic-link-down')).toBe(
      true,
    );
    expect(entry?.summary.unknown).toBeGreaterThan(0);
    // The node-local endpoint serves the same entry to the node's pods.
    const fault = (await (await fetch(`${agentUrl}/v1/fault`)).json()) as { entry: { reasons?: string[] } };
    expect(fault.entry.reasons).toContain('nic-link-down');
    const ended = await fetch(`${agentUrl}/v1/sim/faults/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${faultToken}` },
    });
    expect(ended.status).toBeLessThan(300);
    await documentWhere(
      (d) => !(d.nodes[node]?.reasons ?? []).includes('nic-link-down'),
      'nic-link-down lifted',
    );
    console.log(`node problem: injected → in the ConfigMap's node entry in ${seconds.toFixed(2)} s`);
  });

  it('refuses a fault without the fault token (401), injecting nothing', async () => {
    const response = await fetch(`${agentUrl}/v1/sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'offline', device: 'npu0' }),
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('missing_token');
  });

  it('refuses a fault for a device the node lacks, naming the field', async () => {
    const response = await inject({ kind: 'hot', device: 'gpu9' });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/^device: /);
  });

  it('keeps pushing after the kubelet rotates the token file', async () => {
    writeFileSync(tokenFile, await mintToken(), { mode: 0o600 });
    const response = await inject({ kind: 'link-down', device: 'npu6' });
    expect(response.status).toBe(201);
    await documentWhere((d) => published(d, 'npu6') === 'failed', 'npu6 failed after the token rotated');
  });

  it('answers /v1/health with the last snapshot, and stops cleanly on SIGTERM', async () => {
    const health = (await (await fetch(`${agentUrl}/v1/health`)).json()) as {
      status: string;
      last_sample: { node: string; seq: number } | null;
    };
    expect(health.status).toBe('ok');
    expect(health.last_sample?.node).toBe(node);
    expect(await agent.stop('SIGTERM')).toBe(0);
  });
});

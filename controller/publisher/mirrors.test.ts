import { describe, expect, it } from '@jest/globals';
import { FAULT_DATA_KEY, publishedDocumentSchema } from '../../contracts/index.js';
import { FakeClock, K8sApiError, Registry } from '../../platform/index.js';
import type { Leadership } from '../leader-election/index.js';
import { FakeConfigMapClient } from './fake-configmap-client.js';
import {
  createStatusMirrors,
  MIRROR_CLUSTER_ROLE,
  type MirrorNamespaces,
  type MirrorSource,
} from './mirrors.js';
import { STATUS_LABELS, serializeDocument } from './status-data.js';
import { memoryLog, sampleDocument } from './testing.js';

const NAME = 'npu-fault-status-v3';
const key = (namespace: string) => ({ namespace, name: NAME });
const TERM = 2;

/** The namespace watch, as a set the test edits. */
class FakeNamespaces implements MirrorNamespaces {
  readonly #set = new Set<string>();
  readonly #listeners = new Set<() => void>();
  namespaces(): ReadonlySet<string> {
    return this.#set;
  }
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  get listeners(): number {
    return this.#listeners.size;
  }
  label(...names: string[]): void {
    for (const n of names) this.#set.add(n);
    for (const l of this.#listeners) l();
  }
  unlabel(...names: string[]): void {
    for (const n of names) this.#set.delete(n);
    for (const l of this.#listeners) l();
  }
}

/** A status write's data: `marker` changes the content, `second` only the timestamp. */
function source(marker: number, second = 0): MirrorSource {
  const timestamp = new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString();
  return serializeDocument(sampleDocument('replica-a', TERM, marker, timestamp));
}

/** A status write naming the pods on a failed device (CONTRACT §1.9), as the main ConfigMap has it. */
function heldSource(): MirrorSource {
  const document = sampleDocument('replica-a', TERM, 1);
  const device = {
    id: 'npu1',
    key: '0000:c1:00.0',
    resource_id: 'Ascend910-1',
    kind: 'npu' as const,
    model: '910B',
    status: 'failed' as const,
    since: document.timestamp,
    reason: 'link_down',
    reasons: ['link_down'],
    signals: ['link_down'],
    temperature_c: null,
    power_w: null,
    ecc_errors: null,
    pcie_link_status: 'down' as const,
  };
  const node = {
    node: 'n1',
    observed_at: document.timestamp,
    agent: 'ok' as const,
    summary: { total: 8, healthy: 7, degraded: 0, failed: 1, unknown: 0 },
    npus: [{ ...device, pods: ['team-b/train-0', 'team-c/infer-1'] }],
  };
  return serializeDocument({ ...document, nodes: { n1: node } });
}

function harness(options: { intervalMs?: number; heartbeatMs?: number } = {}) {
  const clock = new FakeClock();
  const client = new FakeConfigMapClient(clock);
  const namespaces = new FakeNamespaces();
  const registry = new Registry();
  const { log, messages } = memoryLog();
  let lead: Leadership = { leading: true, term: TERM };
  const mirrors = createStatusMirrors(
    { client, namespaces, leadership: () => lead, clock, log, registry },
    { term: TERM, statusNamespace: 'ai-infra', config: options },
  );
  const controller = new AbortController();
  const running = mirrors.start(controller.signal);
  return {
    clock,
    client,
    namespaces,
    mirrors,
    messages,
    running,
    setLeadership: (l: Leadership) => (lead = l),
    /** Successful writes as `op namespace @time`. */
    writes: () =>
      client.calls
        .filter((c) => c.op !== 'get' && c.result === 'ok')
        .map((c) => `${c.op} ${c.key.split('/')[0]} @${c.storedAt}`),
    async metric(name: string): Promise<Record<string, number>> {
      const values = (await registry.getSingleMetric(`npu_fault_controller_${name}`)?.get())?.values ?? [];
      return Object.fromEntries(values.map((v) => [JSON.stringify(v.labels), v.value]));
    },
    async stop() {
      controller.abort(new Error('shutdown'));
      await running;
    },
  };
}

describe('status mirrors', () => {
  it('copies the document without the pods on its devices (other tenants’ pod names)', async () => {
    const h = harness();
    h.namespaces.label('team-a');
    const held = heldSource();
    expect(held.data[FAULT_DATA_KEY]).toContain('team-b/train-0');
    h.mirrors.publish(held);
    await h.clock.advance(0);
    const copied = h.client.peek(key('team-a'))?.data;
    expect(copied?.[FAULT_DATA_KEY]).not.toContain('team-b/train-0');
    const mirrored = publishedDocumentSchema.parse(JSON.parse(copied?.[FAULT_DATA_KEY] ?? ''));
    // Everything else is the written document.
    expect(mirrored.nodes.n1?.npus[0]).not.toHaveProperty('pods');
    expect(mirrored.nodes.n1?.npus[0]?.status).toBe('failed');
    const { pods: _pods, ...device } = held.document.nodes.n1?.npus[0] ?? {};
    expect(mirrored.nodes.n1?.npus[0]).toEqual(device);
    await h.stop();
  });

  it('copies the last status write into every labelled namespace but the status one, once there is one', async () => {
    const h = harness();
    h.namespaces.label('team-a', 'team-b', 'ai-infra');
    await h.clock.advance(1000);
    expect(h.client.calls).toEqual([]);
    h.mirrors.publish(source(1));
    await h.clock.advance(0);
    expect(h.writes()).toEqual(['create team-a @1000', 'create team-b @1000']);
    for (const namespace of ['team-a', 'team-b'])
      expect(h.client.peek(key(namespace))).toMatchObject({ labels: STATUS_LABELS, data: source(1).data });
    expect(h.client.peek(key('ai-infra'))).toBeUndefined();
    await h.stop();
    expect(h.namespaces.listeners).toBe(0);
  });

  it('rewrites a changed document at most every intervalMs per namespace', async () => {
    const h = harness();
    h.namespaces.label('team-a');
    for (let second = 0; second < 25; second++) {
      h.mirrors.publish(source(second, second));
      await h.clock.advance(1000);
    }
    expect(h.writes()).toEqual(['create team-a @0', 'replace team-a @10000', 'replace team-a @20000']);
    expect(h.client.peek(key('team-a'))?.data).toEqual(source(19, 19).data); // the newest at 20 s
    await h.stop();
  });

  it('rewrites a document whose timestamp alone moved only every heartbeatMs', async () => {
    const h = harness();
    h.namespaces.label('team-a');
    for (let second = 0; second < 125; second++) {
      h.mirrors.publish(source(0, second % 60));
      await h.clock.advance(1000);
    }
    expect(h.writes()).toEqual(['create team-a @0', 'replace team-a @60000', 'replace team-a @120000']);
    await h.stop();
  });

  it('copies into a namespace at once when it is labelled, and deletes the copy at once when the label goes', async () => {
    const h = harness();
    h.mirrors.publish(source(1));
    h.namespaces.label('team-a');
    await h.clock.advance(500);
    h.namespaces.label('team-b');
    await h.clock.advance(500);
    const copy = h.client.peek(key('team-a'));
    h.namespaces.unlabel('team-a');
    await h.clock.advance(0);
    expect(h.writes()).toEqual(['create team-a @0', 'create team-b @500', 'delete team-a @1000']);
    expect(h.client.calls.at(-1)).toMatchObject({ op: 'delete', resourceVersion: copy?.resourceVersion });
    expect(h.client.peek(key('team-a'))).toBeUndefined();
    await h.stop();
  });

  it('never touches a ConfigMap of that name it does not own: logged once, counted, left when the label goes', async () => {
    const h = harness();
    const foreign = h.client.put(key('team-x'), { labels: { owner: 'someone' }, data: { mine: 'yes' } });
    h.mirrors.publish(source(1));
    h.namespaces.label('team-x');
    await h.clock.advance(35_000);
    expect(h.client.calls.every((c) => c.op === 'get')).toBe(true);
    expect(h.client.peek(key('team-x'))).toEqual(foreign);
    expect(
      h.messages().filter((m) => m.msg === 'a ConfigMap of the mirror name is not ours: leaving it alone'),
    ).toEqual([expect.objectContaining({ namespace: 'team-x', level: 'warn' })]);
    expect(await h.metric('mirror_foreign_configmaps')).toEqual({ '{}': 1 });
    h.namespaces.unlabel('team-x');
    await h.clock.advance(20_000);
    expect(h.client.peek(key('team-x'))).toEqual(foreign);
    expect(h.writes()).toEqual([]);
    expect(await h.metric('mirror_foreign_configmaps')).toEqual({ '{}': 0 });
    await h.stop();
  });

  it('copies once the foreign ConfigMap is gone (looked at again every intervalMs)', async () => {
    const h = harness();
    h.client.put(key('team-x'), { labels: {}, data: { mine: 'yes' } });
    h.mirrors.publish(source(1));
    h.namespaces.label('team-x');
    await h.clock.advance(5000);
    h.client.remove(key('team-x'));
    await h.clock.advance(5000);
    expect(h.writes()).toEqual(['create team-x @10000']);
    await h.stop();
  });

  it('after a 409 reads again next round: rewrites its own copy, leaves one someone took over', async () => {
    const h = harness();
    h.namespaces.label('team-a', 'team-b');
    h.mirrors.publish(source(1));
    await h.clock.advance(0);
    // team-a: an admin edits our copy; team-b: someone takes the name over (our label removed).
    h.client.put(key('team-a'), { labels: { ...STATUS_LABELS, edited: 'yes' }, data: source(1).data });
    h.client.put(key('team-b'), { labels: { owner: 'them' }, data: { theirs: 'yes' } });
    h.mirrors.publish(source(2));
    await h.clock.advance(10_000);
    expect(h.client.calls.filter((c) => c.op === 'replace').map((c) => c.result)).toEqual([409, 409]);
    await h.clock.advance(10_000);
    expect(h.client.peek(key('team-a'))?.data).toEqual(source(2).data);
    expect(h.client.peek(key('team-b'))?.data).toEqual({ theirs: 'yes' });
    await h.stop();
  });

  it('deletes with preconditions: a copy changed since is read again and deleted next round if still ours', async () => {
    const h = harness();
    h.namespaces.label('team-a');
    h.mirrors.publish(source(1));
    await h.clock.advance(0);
    h.client.put(key('team-a'), { labels: { ...STATUS_LABELS, edited: 'yes' }, data: source(1).data });
    h.namespaces.unlabel('team-a');
    await h.clock.advance(0);
    expect(h.client.calls.at(-1)).toMatchObject({ op: 'delete', result: 409 });
    expect(h.client.peek(key('team-a'))).toBeDefined();
    await h.clock.advance(10_000);
    expect(h.client.calls.at(-1)).toMatchObject({ op: 'delete', result: 'ok' });
    expect(h.client.peek(key('team-a'))).toBeUndefined();
    await h.stop();
  });

  it('retries a namespace whose create failed (namespace gone) after intervalMs, and forgets it once unlabelled', async () => {
    const h = harness();
    h.client.setNamespaces(['ai-infra']);
    h.namespaces.label('vanished');
    h.mirrors.publish(source(1));
    await h.clock.advance(10_000);
    expect(h.client.calls.map((c) => `${c.op}:${String(c.result)}@${c.at}`)).toEqual([
      'get:ok@0',
      'create:404@0',
      'get:ok@10000',
      'create:404@10000',
    ]);
    h.namespaces.unlabel('vanished');
    await h.clock.advance(30_000);
    expect(h.client.calls.map((c) => c.op).slice(4)).toEqual(['get']);
    await h.stop();
  });

  it('asks a labelled namespace that refuses it (403, not opted in) once a heartbeat: logged once, counted, copied once bound', async () => {
    const h = harness();
    let bound = false;
    // RBAC as the apiserver applies it: team-closed refuses every request until the RoleBinding exists.
    h.client.beforeNext(
      'any',
      (call) => {
        if (!bound && call.key.startsWith('team-closed/'))
          throw new K8sApiError(403, 'Forbidden', 'configmaps "npu-fault-status-v3" is forbidden');
      },
      Infinity,
    );
    h.namespaces.label('team-a', 'team-closed');
    for (let second = 0; second < 130; second++) {
      h.mirrors.publish(source(second));
      await h.clock.advance(1000);
    }
    const closed = h.client.calls.filter((c) => c.key.startsWith('team-closed/'));
    expect(closed.map((c) => `${c.op}:${String(c.result)}@${c.at}`)).toEqual([
      'get:403@0',
      'get:403@60000',
      'get:403@120000',
    ]);
    // team-a is not held back by its neighbour: a changed document every 10 s.
    expect(h.writes().filter((w) => w.startsWith('replace team-a')).length).toBeGreaterThanOrEqual(12);
    const warnings = h.messages().filter((m) => m.namespace === 'team-closed' && m.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0]?.msg)).toContain(`bind the ClusterRole ${MIRROR_CLUSTER_ROLE}`);
    expect(await h.metric('mirror_forbidden_namespaces')).toEqual({ '{}': 1 });

    bound = true;
    await h.clock.advance(60_000);
    expect(h.client.peek(key('team-closed'))).toMatchObject({ labels: STATUS_LABELS });
    expect(await h.metric('mirror_forbidden_namespaces')).toEqual({ '{}': 0 });
    expect(
      h.messages().some((m) => m.namespace === 'team-closed' && String(m.msg).includes('opted in')),
    ).toBe(true);
    await h.stop();
  });

  it('forgets a refusing namespace once unlabelled, without asking it again', async () => {
    const h = harness();
    h.client.failAlways('any', new K8sApiError(403, 'Forbidden', 'forbidden'));
    h.namespaces.label('team-closed');
    h.mirrors.publish(source(1));
    await h.clock.advance(1000);
    h.namespaces.unlabel('team-closed');
    await h.clock.advance(300_000);
    expect(h.client.calls.map((c) => `${c.op}:${String(c.result)}@${c.at}`)).toEqual(['get:403@0']);
    expect(await h.metric('mirror_forbidden_namespaces')).toEqual({ '{}': 0 });
    await h.stop();
  });

  it('stops without a request once the fence is down', async () => {
    const h = harness();
    h.namespaces.label('team-a');
    h.setLeadership({ leading: false });
    h.mirrors.publish(source(1));
    await h.clock.advance(0);
    await h.running;
    expect(h.client.calls).toEqual([]);
  });
});

import { describe, expect, it } from '@jest/globals';
import { FakeClock, K8sApiError, Registry } from '../../platform/index.js';
import type { Leadership } from '../leader-election/index.js';
import { FakeConfigMapClient } from './fake-configmap-client.js';
import { publisherMetrics } from './metrics.js';
import { STATUS_LABELS, serializeDocument } from './status-data.js';
import { ConflictRetriesExhausted, StatusWriter } from './status-writer.js';
import { memoryLog, sampleDocument } from './testing.js';

const KEY = { namespace: 'ai-infra', name: 'npu-fault-status-v3' };

function setup(options: { term?: number; identity?: string; maxConflictRetries?: number } = {}) {
  const clock = new FakeClock();
  const client = new FakeConfigMapClient(clock);
  const registry = new Registry();
  const metrics = publisherMetrics(registry);
  const { log, messages } = memoryLog();
  const term = options.term ?? 3;
  const identity = options.identity ?? 'replica-a';
  let lead: Leadership = { leading: true, term };
  const writer = new StatusWriter(
    { client, leadership: () => lead, clock, log, metrics },
    { key: KEY, identity, term, maxConflictRetries: options.maxConflictRetries ?? 5, requestTimeoutMs: 1000 },
  );
  const ours = (marker = 0) => serializeDocument(sampleDocument(identity, term, marker));
  const metric = async (name: string): Promise<Record<string, number>> => {
    const values = (await registry.getSingleMetric(`npu_fault_controller_${name}`)?.get())?.values ?? [];
    return Object.fromEntries(values.map((v) => [JSON.stringify(v.labels), v.value]));
  };
  return {
    clock,
    client,
    writer,
    ours,
    messages,
    metric,
    setLeadership: (l: Leadership) => (lead = l),
    signal: new AbortController().signal,
  };
}

const ops = (client: FakeConfigMapClient): string[] => client.calls.map((c) => `${c.op}:${String(c.result)}`);

describe('StatusWriter', () => {
  it('creates the ConfigMap on the first write when it is missing, then updates at the resourceVersion it saw', async () => {
    const { client, writer, ours, signal, metric } = setup();
    const first = ours(1);
    expect(await writer.write(first, signal)).toMatchObject({ kind: 'written' });
    expect(client.peek(KEY)).toMatchObject({ labels: STATUS_LABELS, data: first.data });
    const created = client.peek(KEY);
    expect(await writer.write(ours(2), signal)).toMatchObject({ kind: 'written' });
    expect(ops(client)).toEqual(['get:ok', 'create:ok', 'replace:ok']);
    expect(client.calls[2]?.resourceVersion).toBe(created?.resourceVersion);
    expect(await metric('writes_total')).toEqual({ '{"target":"status","result":"ok"}': 2 });
    expect(await metric('write_bytes_total')).toEqual({ '{"target":"status"}': first.bytes + ours(2).bytes });
  });

  it('reads an existing ConfigMap on the first write and updates it (a previous term overwritten)', async () => {
    const { client, writer, ours, signal } = setup({ term: 3 });
    client.put(KEY, { data: serializeDocument(sampleDocument('replica-b', 2)).data });
    expect(await writer.write(ours(), signal)).toMatchObject({ kind: 'written' });
    expect(ops(client)).toEqual(['get:ok', 'replace:ok']);
    expect(client.peek(KEY)?.data).toEqual(ours().data);
  });

  it('overwrites a higher term found by its first read: the term rule is for a 409 only', async () => {
    // A recreated Lease restarts terms at 0; nobody wrote between our read and our write.
    const { client, writer, ours, signal } = setup({ term: 0 });
    client.put(KEY, { data: serializeDocument(sampleDocument('replica-b', 7)).data });
    expect(await writer.write(ours(), signal)).toMatchObject({ kind: 'written' });
    expect(client.peek(KEY)?.data).toEqual(ours().data);
  });

  it("reads and goes on when another writer created it between its read and its create (create's 409)", async () => {
    const { client, writer, ours, signal } = setup();
    client.beforeNext('create', () => client.put(KEY, { data: ours(9).data }));
    expect(await writer.write(ours(1), signal)).toMatchObject({ kind: 'written' });
    expect(ops(client)).toEqual(['get:ok', 'create:409', 'get:ok', 'replace:ok']);
    expect(client.peek(KEY)?.data).toEqual(ours(1).data);
  });

  it('retries a 409 caused by a writer of the same identity at the new resourceVersion', async () => {
    const { client, writer, ours, signal, metric } = setup();
    await writer.write(ours(1), signal);
    client.beforeNext('replace', () =>
      client.put(KEY, { labels: { touched: 'by-admin' }, data: ours(1).data }),
    );
    expect(await writer.write(ours(2), signal)).toMatchObject({ kind: 'written' });
    expect(ops(client).slice(2)).toEqual(['replace:409', 'get:ok', 'replace:ok']);
    expect(client.peek(KEY)?.data).toEqual(ours(2).data);
    expect(await metric('publish_conflicts_total')).toEqual({ '{"outcome":"retried"}': 1 });
    expect(await metric('writes_total')).toMatchObject({ '{"target":"status","result":"conflict"}': 1 });
  });

  it('retries a 409 when the stored document is another identity of a lower term', async () => {
    const { client, writer, ours, signal } = setup({ term: 5 });
    await writer.write(ours(1), signal);
    client.beforeNext('replace', () =>
      client.put(KEY, { data: serializeDocument(sampleDocument('old-leader', 4)).data }),
    );
    expect(await writer.write(ours(2), signal)).toMatchObject({ kind: 'written' });
    expect(client.peek(KEY)?.data).toEqual(ours(2).data);
  });

  it.each([
    ['the same term', 5],
    ['a higher term', 6],
  ])(
    'steps down on a 409 when another identity wrote with %s, and never writes again',
    async (_name, theirTerm) => {
      const { client, writer, ours, signal, metric, messages } = setup({ term: 5 });
      await writer.write(ours(1), signal);
      const theirs = serializeDocument(sampleDocument('new-leader', theirTerm)).data;
      client.beforeNext('replace', () => client.put(KEY, { data: theirs }));
      const outcome = await writer.write(ours(2), signal);
      expect(outcome).toEqual({
        kind: 'stepped-down',
        reason: `status ConfigMap written by new-leader in term ${theirTerm} (ours: 5)`,
      });
      expect(writer.steppedDown).toBe(outcome.kind === 'stepped-down' ? outcome.reason : '');
      const calls = client.calls.length;
      expect(await writer.write(ours(3), signal)).toMatchObject({ kind: 'stepped-down' });
      expect(client.calls).toHaveLength(calls);
      expect(client.peek(KEY)?.data).toEqual(theirs);
      expect(await metric('publish_conflicts_total')).toEqual({ '{"outcome":"stepped_down"}': 1 });
      expect(messages().some((m) => m.msg === 'a newer leader wrote the status: stepping down')).toBe(true);
    },
  );

  it.each([
    ['garbage JSON', { 'fault.json': '{not json' }],
    ['no fault.json', { version: '3.0' }],
    ['a document of another shape', { 'fault.json': '{"publisher":{"identity":"x","term":99}}' }],
  ])('overwrites %s found on a 409, logged and counted', async (_name, garbage) => {
    const { client, writer, ours, signal, metric, messages } = setup();
    await writer.write(ours(1), signal);
    client.beforeNext('replace', () => client.put(KEY, { data: garbage }));
    expect(await writer.write(ours(2), signal)).toMatchObject({ kind: 'written' });
    expect(client.peek(KEY)?.data).toEqual(ours(2).data);
    expect(await metric('publish_invalid_overwritten_total')).toEqual({ '{}': 1 });
    expect(messages().find((m) => m.level === 'warn')).toMatchObject({ when: 'conflict' });
  });

  it('overwrites garbage found by its first read, logged and counted', async () => {
    const { client, writer, ours, signal, metric } = setup();
    client.put(KEY, { data: { 'fault.json': 'garbage' } });
    expect(await writer.write(ours(), signal)).toMatchObject({ kind: 'written' });
    expect(await metric('publish_invalid_overwritten_total')).toEqual({ '{}': 1 });
  });

  it('gives up a write after maxConflictRetries 409s (none of its requests landed)', async () => {
    const { client, writer, ours, signal } = setup({ maxConflictRetries: 2 });
    await writer.write(ours(1), signal);
    let n = 0;
    client.beforeNext(
      'replace',
      () => client.put(KEY, { labels: { n: String(++n) }, data: ours(1).data }),
      3,
    );
    await expect(writer.write(ours(2), signal)).rejects.toBeInstanceOf(ConflictRetriesExhausted);
    expect(ops(client).filter((o) => o === 'replace:409')).toHaveLength(3);
    // The next write goes through (the writer is not stuck).
    expect(await writer.write(ours(3), signal)).toMatchObject({ kind: 'written' });
  });

  it('creates it again when it was deleted under it (404 on update)', async () => {
    const { client, writer, ours, signal } = setup();
    await writer.write(ours(1), signal);
    client.remove(KEY);
    expect(await writer.write(ours(2), signal)).toMatchObject({ kind: 'written' });
    expect(ops(client).slice(2)).toEqual(['replace:404', 'get:ok', 'create:ok']);
  });

  it.each<[string, Leadership]>([
    ['not leading', { leading: false }],
    ['leading in another term', { leading: true, term: 4 }],
  ])('sends nothing when the fence says %s', async (_name, lead) => {
    const { client, writer, ours, signal, setLeadership } = setup({ term: 3 });
    setLeadership(lead);
    expect(await writer.write(ours(), signal)).toMatchObject({ kind: 'not-leading' });
    expect(client.calls).toHaveLength(0);
  });

  it('checks the fence immediately before each request (lost between the read and the write)', async () => {
    const { client, writer, ours, signal, setLeadership } = setup();
    client.put(KEY, { data: ours(0).data });
    client.beforeNext('get', () => setLeadership({ leading: false }));
    expect(await writer.write(ours(1), signal)).toEqual({ kind: 'not-leading', reason: 'leadership lost' });
    expect(ops(client)).toEqual(['get:ok']);
  });

  it('cancels the request in flight when the signal aborts (leadership ended)', async () => {
    const { clock, client, writer, ours } = setup();
    client.delay('get', 500);
    const controller = new AbortController();
    const pending = writer.write(ours(), controller.signal);
    await clock.advance(100);
    controller.abort(new Error('lost the lease'));
    await expect(pending).rejects.toThrow('lost the lease');
    expect(client.peek(KEY)).toBeUndefined();
  });

  it('abandons a request after requestTimeoutMs', async () => {
    const { clock, client, writer, ours, signal, metric } = setup();
    client.delay('create', 5000);
    const pending = writer.write(ours(), signal);
    const settled = pending.catch((error: unknown) => error);
    await clock.advance(1000);
    expect(await settled).toMatchObject({ code: 'request_timeout' });
    expect(await metric('writes_total')).toEqual({ '{"target":"status","result":"error"}': 1 });
  });

  it('throws an API error that is not a conflict', async () => {
    const { client, writer, ours, signal } = setup();
    client.failNext('get', new K8sApiError(403, 'Forbidden'));
    await expect(writer.write(ours(), signal)).rejects.toMatchObject({ apiStatus: 403 });
  });
});

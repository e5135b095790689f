import { describe, expect, it } from '@jest/globals';
import { createFollower, type Transport, type TransportSink } from './follower.js';
import { ManualClock, device, document, nodeEntry } from './testing.js';
import { FollowError, type FailedDevice, type StatusUpdate } from './types.js';

function manualTransport(): Transport & { sink: TransportSink; stopped: boolean } {
  const transport = {
    kind: 'watch' as const,
    sink: undefined as unknown as TransportSink,
    stopped: false,
    start(sink: TransportSink) {
      transport.sink = sink;
    },
    stop() {
      transport.stopped = true;
      return Promise.resolve();
    },
    stats: () => ({}),
  };
  return transport;
}

function setup(node: string | null = 'n1', staleAfterMs = 10_000) {
  const clock = new ManualClock();
  const transport = manualTransport();
  const follower = createFollower(transport, { node, staleAfterMs, clock });
  const changes: StatusUpdate[] = [];
  const failed: FailedDevice[] = [];
  const stale: boolean[] = [];
  const errors: FollowError[] = [];
  follower.onChange((u) => changes.push(u));
  follower.onDeviceFailed((f) => failed.push(f));
  follower.onStale((s) => stale.push(s));
  follower.onError((e) => errors.push(e));
  const at = (ms: number): Date => new Date(clock.now() + ms);
  return { clock, transport, follower, changes, failed, stale, errors, at };
}

describe('follower', () => {
  it('treats a node absent from nodes as healthy, and unobserved as unobserved', () => {
    const s = setup('n1');
    s.transport.sink.document(document(s.at(0), [nodeEntry('n2', [device('npu1', 'failed')])]));
    expect(s.follower.current()).toMatchObject({ node: 'n1', health: 'healthy', entry: null, failed: [] });
    expect(s.failed).toEqual([]);
    s.transport.sink.document(document(s.at(0), [], { unobserved: ['n1'] }));
    expect(s.follower.current()?.health).toBe('unobserved');
  });

  it('fires onDeviceFailed once per device becoming failed, again after it recovered', () => {
    const s = setup('n1');
    const doc = (devices: ReturnType<typeof device>[], ms: number) =>
      document(s.at(ms), devices.length ? [nodeEntry('n1', devices)] : []);
    s.transport.sink.document(doc([device('npu1', 'degraded')], 0));
    s.transport.sink.document(doc([device('npu1', 'failed')], 1));
    s.transport.sink.document(doc([device('npu1', 'failed'), device('npu2', 'failed')], 2));
    s.transport.sink.document(
      doc([device('npu1', 'failed', { temperature_c: 99 }), device('npu2', 'failed')], 3),
    );
    expect(s.failed.map((f) => f.device.id)).toEqual(['npu1', 'npu2']);
    s.transport.sink.document(doc([], 4));
    expect(s.follower.current()?.health).toBe('healthy');
    s.transport.sink.document(doc([device('npu1', 'failed')], 5));
    expect(s.failed.map((f) => f.device.id)).toEqual(['npu1', 'npu2', 'npu1']);
    // readings and the heartbeat timestamp alone are not changes
    expect(s.changes.map((c) => c.health)).toEqual(['degraded', 'failed', 'failed', 'healthy', 'failed']);
  });

  it('reads a node left out of a partial document as unknown, never healthy', () => {
    const s = setup('n1');
    s.transport.sink.document(document(s.at(0), [], { ingest_degraded: { stale_nodes: 3 } }));
    expect(s.follower.current()?.health).toBe('unknown');
    s.transport.sink.document(document(s.at(1), [], { omitted_nodes: 1 }));
    expect(s.follower.current()?.health).toBe('unknown');
    s.transport.sink.document(document(s.at(2), []));
    expect(s.follower.current()?.health).toBe('healthy');
  });

  it('keeps a failed device failed while the document cannot show it, and fires onDeviceFailed once', () => {
    const s = setup('n1');
    const failedNpu1 = nodeEntry('n1', [device('npu1', 'failed')]);
    s.transport.sink.document(document(s.at(0), [failedNpu1]));
    // Cut for the byte budget: the node is not listed, so the document cannot say.
    s.transport.sink.document(document(s.at(1), [], { omitted_nodes: 1 }));
    expect(s.follower.current()).toMatchObject({ health: 'failed' });
    expect(s.follower.current()?.failed.map((f) => f.device.id)).toEqual(['npu1']);
    // Listed, but the budget left out some devices, npu1 among them.
    const listed = nodeEntry('n1', [device('npu2', 'failed')]);
    const trimmed = { ...listed, summary: { ...listed.summary, healthy: 5, failed: 2 }, omitted_devices: 1 };
    s.transport.sink.document(document(s.at(2), [trimmed]));
    expect(
      s.follower
        .current()
        ?.failed.map((f) => f.device.id)
        .sort(),
    ).toEqual(['npu1', 'npu2']);
    expect(s.failed.map((f) => f.device.id)).toEqual(['npu1', 'npu2']);
    // A whole document without npu1 failed: it recovered; failing again fires again.
    s.transport.sink.document(document(s.at(3), [nodeEntry('n1', [device('npu2', 'failed')])]));
    expect(s.follower.current()?.failed.map((f) => f.device.id)).toEqual(['npu2']);
    s.transport.sink.document(document(s.at(4), [failedNpu1]));
    expect(s.failed.map((f) => f.device.id)).toEqual(['npu1', 'npu2', 'npu1']);
  });

  it('does not carry a failure through an ingest outage, which never leaves out a node holding one', () => {
    const s = setup('n1');
    s.transport.sink.document(document(s.at(0), [nodeEntry('n1', [device('npu1', 'failed')])]));
    // n1 is not listed in a document that only summarised stale nodes: it holds no failure.
    s.transport.sink.document(document(s.at(1), [], { ingest_degraded: { stale_nodes: 3 } }));
    expect(s.follower.current()).toMatchObject({ health: 'unknown', failed: [] });
  });

  it("keeps a failure while the agent's answer is stale, and reads an old healthy answer as unknown", () => {
    const s = setup('n1');
    const entry = nodeEntry('n1', [device('npu1', 'failed')]);
    const answer = { node: 'n1', leader: 'c-0', term: 1, updatedAt: null };
    s.transport.sink.entry({ ...answer, entry });
    s.transport.sink.entry({ ...answer, entry: null, stale: true });
    expect(s.follower.current()).toMatchObject({ health: 'failed', stale: true });
    expect(s.follower.current()?.failed.map((f) => f.device.id)).toEqual(['npu1']);
    s.transport.sink.entry({ ...answer, entry: null });
    expect(s.follower.current()).toMatchObject({ health: 'healthy', failed: [] });
    s.transport.sink.entry({ ...answer, entry: null, stale: true });
    expect(s.follower.current()?.health).toBe('unknown');
    expect(s.failed).toHaveLength(1);
  });

  it('follows the whole cluster when node is null', () => {
    const s = setup(null);
    s.transport.sink.document(
      document(s.at(0), [
        nodeEntry('a', [device('npu1', 'degraded')]),
        nodeEntry('b', [device('npu2', 'failed')]),
      ]),
    );
    expect(s.follower.current()).toMatchObject({ node: null, health: 'failed' });
    expect(s.failed.map((f) => `${f.node}/${f.device.id}`)).toEqual(['b/npu2']);
  });

  it('goes stale when the timestamp stops moving and back when it moves', () => {
    const s = setup('n1', 10_000);
    s.transport.sink.document(document(s.at(0)));
    s.clock.advance(9_000);
    expect(s.stale).toEqual([]);
    s.clock.advance(2_000);
    expect(s.stale).toEqual([true]);
    expect(s.follower.stale).toBe(true);
    // the same document again (a re-read) does not revive it
    s.transport.sink.document(document(s.at(-11_000)));
    expect(s.stale).toEqual([true]);
    s.transport.sink.document(document(s.at(0)));
    expect(s.stale).toEqual([true, false]);
    expect(s.changes).toHaveLength(1);
  });

  it('is stale when nothing arrives at all', () => {
    const s = setup('n1', 5_000);
    s.clock.advance(6_000);
    expect(s.stale).toEqual([true]);
  });

  it('counts an SSE heartbeat as life', () => {
    const s = setup('n1', 5_000);
    s.transport.sink.entry({ node: 'n1', entry: null, leader: 'c', term: 1, updatedAt: null });
    s.clock.advance(4_000);
    s.transport.sink.alive();
    s.clock.advance(4_000);
    expect(s.stale).toEqual([]);
    s.clock.advance(2_000);
    expect(s.stale).toEqual([true]);
    s.transport.sink.alive();
    expect(s.stale).toEqual([true, false]);
  });

  it('refuses an entry for another node, and reports a throwing listener without stopping', () => {
    const s = setup('n1');
    s.transport.sink.entry({ node: 'n2', entry: null, leader: 'c', term: 1, updatedAt: null });
    expect(s.errors[0]?.message).toMatch(/serves node n2, not n1/);
    s.follower.onChange(() => {
      throw new Error('boom');
    });
    s.transport.sink.document(document(s.at(0)));
    expect(s.errors[1]?.message).toMatch(/listener threw: Error: boom/);
    expect(s.changes).toHaveLength(1);
  });

  it('iterates changes and ends on close', async () => {
    const s = setup('n1');
    s.transport.sink.document(document(s.at(0)));
    const seen: string[] = [];
    const done = (async () => {
      for await (const update of s.follower) seen.push(update.health);
    })();
    s.transport.sink.document(document(s.at(1), [nodeEntry('n1', [device('npu1', 'degraded')])]));
    await Promise.resolve();
    await s.follower.close();
    await done;
    expect(seen).toEqual(['healthy', 'degraded']);
    expect(s.transport.stopped).toBe(true);
  });
});

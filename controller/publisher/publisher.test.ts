import { describe, expect, it } from '@jest/globals';
import type { PublishedDocument } from '../../contracts/index.js';
import { FakeClock, K8sApiError, Registry } from '../../platform/index.js';
import type { Leadership } from '../leader-election/index.js';
import type { PublisherConfigInput } from './config.js';
import { FakeConfigMapClient } from './fake-configmap-client.js';
import { createStatusPublisher, type StatusPublisher, type WrittenStatus } from './publisher.js';
import { documentOf as storedDocument, serializeDocument } from './status-data.js';
import { memoryLog, sampleDocument } from './testing.js';

const KEY = { namespace: 'ai-infra', name: 'npu-fault-status-v3' };
const TERM = 7;

interface Harness {
  clock: FakeClock;
  client: FakeConfigMapClient;
  publisher: StatusPublisher;
  registry: Registry;
  written: WrittenStatus[];
  stepDowns: string[];
  messages: () => Record<string, unknown>[];
  renders: () => number;
  /** Content marker of the next render: change it to change the document. */
  setMarker(marker: number): void;
  setLeadership(lead: Leadership): void;
  /** Monotonic times at which a write (create/replace) reached the store. */
  writeTimes(): number[];
  stop(): Promise<void>;
  running: Promise<void>;
  metric(name: string): Promise<Record<string, number>>;
}

function harness(
  options: {
    config?: PublisherConfigInput;
    random?: () => number;
    render?: (now: number, marker: number) => PublishedDocument;
  } = {},
): Harness {
  const clock = new FakeClock();
  const client = new FakeConfigMapClient(clock);
  const registry = new Registry();
  const { log, messages } = memoryLog();
  const written: WrittenStatus[] = [];
  const stepDowns: string[] = [];
  let marker = 0;
  let renders = 0;
  let lead: Leadership = { leading: true, term: TERM };
  const publisher = createStatusPublisher(
    {
      client,
      clock,
      log,
      registry,
      random: options.random ?? (() => 0.5),
      leadership: () => lead,
      render: (now, publisher) => {
        renders++;
        return (
          options.render?.(now, marker) ??
          sampleDocument(publisher.identity, publisher.term, marker, new Date(now).toISOString())
        );
      },
      onWritten: (w) => written.push(w),
      onStepDown: (reason) => stepDowns.push(reason),
    },
    { identity: 'replica-a', term: TERM, namespace: KEY.namespace, config: options.config },
  );
  const controller = new AbortController();
  const running = publisher.start(controller.signal);
  return {
    clock,
    client,
    publisher,
    registry,
    written,
    stepDowns,
    messages,
    running,
    renders: () => renders,
    setMarker: (m) => (marker = m),
    setLeadership: (l) => (lead = l),
    writeTimes: () =>
      client.calls.filter((c) => c.op !== 'get' && c.result === 'ok').map((c) => c.storedAt ?? NaN),
    async stop() {
      controller.abort(new Error('shutdown'));
      await running;
    },
    async metric(name) {
      const values = (await registry.getSingleMetric(`npu_fault_controller_${name}`)?.get())?.values ?? [];
      return Object.fromEntries(values.map((v) => [JSON.stringify(v.labels), v.value]));
    },
  };
}

const gaps = (times: number[]): number[] => times.slice(1).map((t, i) => t - (times[i] ?? 0));

describe('status publisher', () => {
  it('writes at once on start, then every tick (uniform in 1.0–1.2 s after each acknowledgement)', async () => {
    const draws = [0, 1 - 1e-9, 0.25, 0.75];
    let i = 0;
    const h = harness({ random: () => draws[i++ % draws.length] ?? 0 });
    await h.clock.advance(0);
    expect(h.writeTimes()).toEqual([0]);
    await h.clock.advance(5000);
    expect(gaps(h.writeTimes())).toEqual([1000, expect.closeTo(1200, 3), 1050, 1150]);
    await h.stop();
  });

  it('measures each tick from when the previous write began, so slow writes do not stretch the cadence', async () => {
    const h = harness({ random: () => 0 });
    h.client.delay('replace', 80);
    h.client.delay('create', 80);
    await h.clock.advance(3500);
    // Sent at 0, 1000, 2000, …: stored 80 ms later each.
    expect(h.writeTimes()).toEqual([80, 1080, 2080, 3080]);
    await h.stop();
  });

  it('pulls a write forward when asked (a device failed), ≥ earlyMinGapMs after the last one', async () => {
    const h = harness();
    await h.clock.advance(100);
    h.setMarker(1);
    h.publisher.requestEarlyWrite();
    await h.clock.advance(400);
    expect(h.writeTimes()).toEqual([0, 150]);
    // A request long after the last write is written at once.
    await h.clock.advance(400); // t = 900, next tick at 150 + 1100
    h.setMarker(2);
    h.publisher.requestEarlyWrite();
    await h.clock.advance(0);
    expect(h.writeTimes()).toEqual([0, 150, 900]);
    await h.stop();
  });

  it('writes again after a write in flight when a device failed during it (that write may predate the failure)', async () => {
    const h = harness();
    h.client.delay('replace', 100);
    await h.clock.advance(0); // the first write (create) is stored at 0
    await h.clock.advance(1100); // the tick at 1100 sends an update, in flight until 1200
    h.setMarker(1);
    h.publisher.requestEarlyWrite();
    await h.clock.advance(1000);
    // The early write is due 150 ms after the previous one began (1100), which is after it was stored.
    expect(h.writeTimes()).toEqual([0, 1200, 1350]);
    // Never two requests in flight: each write is sent after the previous one was stored.
    const sends = h.client.calls.filter((c) => c.op === 'replace').map((c) => c.at);
    expect(sends).toEqual([1100, 1250]);
    expect(h.written[2]?.document.node_count).toBe(1);
    await h.stop();
  });

  it('renders fresh after a slow write instead of sending what was due while it was in flight', async () => {
    const h = harness({ random: () => 0 });
    h.client.delay('replace', 1500);
    await h.clock.advance(0);
    await h.clock.advance(1000); // the update sent at 1000 is stored at 2500
    h.setMarker(5);
    await h.clock.advance(1600);
    expect(h.writeTimes()).toEqual([0, 2500]);
    await h.clock.advance(2500);
    // The next tick (1000 + 1000) passed while the write was in flight: it goes 150 ms after that write was stored.
    expect(h.writeTimes()).toEqual([0, 2500, 4150]);
    expect(h.written.map((w) => w.document.node_count)).toEqual([0, 0, 5]);
    await h.stop();
  });

  it('skips an unchanged document until the heartbeat is due, and writes a changed one at once', async () => {
    const h = harness({ config: { heartbeatMs: 5000 }, random: () => 0 });
    await h.clock.advance(4500);
    expect(h.writeTimes()).toEqual([0]);
    await h.clock.advance(1000); // tick at 5000: the heartbeat moves the timestamp
    expect(h.writeTimes()).toEqual([0, 5000]);
    h.setMarker(1);
    await h.clock.advance(1000);
    expect(h.writeTimes()).toEqual([0, 5000, 6000]);
    expect(h.written.map((w) => w.document.timestamp)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:05.000Z',
      '2026-01-01T00:00:06.000Z',
    ]);
    await h.stop();
  });

  it('holds writes to maxWritesPerSecond however hard early writes are asked for', async () => {
    const h = harness({ config: { maxWritesPerSecond: 2, earlyMinGapMs: 0 } });
    for (let t = 0; t < 3000; t += 10) {
      h.setMarker(t);
      h.publisher.requestEarlyWrite();
      await h.clock.advance(10);
    }
    const times = h.writeTimes();
    for (const first of times)
      expect(times.filter((t) => t >= first && t < first + 1000).length).toBeLessThanOrEqual(2);
    expect(times.length).toBeGreaterThanOrEqual(5);
    expect((await h.metric('publish_deferred_total'))['{"budget":"writes"}']).toBeGreaterThan(0);
    await h.stop();
  });

  it('defers a write the byte budget cannot take, then renders it fresh', async () => {
    const size = serializeDocument(sampleDocument('replica-a', TERM)).bytes;
    // Room for two documents per 5 s window.
    const h = harness({
      config: { maxBytesPerSecond: Math.ceil((2.5 * size) / 5), bytesWindowSeconds: 5 },
      random: () => 0,
    });
    await h.clock.advance(1000);
    expect(h.writeTimes()).toEqual([0, 1000]);
    await h.clock.advance(2000);
    expect(h.writeTimes()).toEqual([0, 1000]); // the tick at 2000 waits for the first write to leave
    h.setMarker(3);
    await h.clock.advance(2000);
    expect(h.writeTimes()).toEqual([0, 1000, 5000]);
    expect(h.written[2]?.document.node_count).toBe(3);
    expect(h.written[2]?.renderedAt).toBe(Date.UTC(2026, 0, 1) + 5000);
    expect(await h.metric('publish_deferred_total')).toEqual({ '{"budget":"bytes"}': 1 });
    await h.stop();
  });

  it('retries a failed write at the next tick', async () => {
    const h = harness({ random: () => 0 });
    h.client.failNext('get', new K8sApiError(503, 'ServiceUnavailable'));
    await h.clock.advance(0);
    expect(h.writeTimes()).toEqual([]);
    await h.clock.advance(1000);
    expect(h.writeTimes()).toEqual([1000]);
    expect(h.messages().some((m) => m.msg === 'status write failed; retrying at the next tick')).toBe(true);
    await h.stop();
  });

  it('reports each acknowledged write with its times, size and the term it stamped', async () => {
    // A render that names someone else: the publisher stamps its own identity and term.
    const h = harness({ render: (now) => sampleDocument('someone', 1, 0, new Date(now).toISOString()) });
    h.client.delay('create', 40);
    await h.clock.advance(40);
    const [write] = h.written;
    expect(write?.renderedAt).toBe(Date.UTC(2026, 0, 1));
    expect(write?.acknowledgedAt).toBe(Date.UTC(2026, 0, 1) + 40);
    expect(write?.document.publisher).toEqual({ identity: 'replica-a', term: TERM });
    expect(storedDocument(h.client.peek(KEY)?.data)?.publisher).toEqual({
      identity: 'replica-a',
      term: TERM,
    });
    expect(write?.bytes).toBe(serializeDocument(write?.document as PublishedDocument).bytes);
    expect(await h.metric('document_bytes')).toEqual({ '{}': write?.bytes });
    expect(await h.metric('last_publish_timestamp_seconds')).toEqual({
      '{}': (Date.UTC(2026, 0, 1) + 40) / 1000,
    });
    await h.stop();
  });

  it('sets document_omitted_nodes from the document', async () => {
    const h = harness({ render: () => ({ ...sampleDocument('replica-a', TERM), omitted_nodes: 12 }) });
    await h.clock.advance(0);
    expect(await h.metric('document_omitted_nodes')).toEqual({ '{}': 12 });
    await h.stop();
  });

  it('steps down for good when a newer leader wrote: onStepDown once, start() resolves, no more requests', async () => {
    const h = harness();
    await h.clock.advance(0);
    h.client.put(KEY, { data: serializeDocument(sampleDocument('replica-b', TERM + 1)).data });
    await h.clock.advance(1100);
    await h.running;
    expect(h.stepDowns).toEqual([
      `status ConfigMap written by replica-b in term ${TERM + 1} (ours: ${TERM})`,
    ]);
    const calls = h.client.calls.length;
    h.publisher.requestEarlyWrite();
    await h.clock.advance(5000);
    expect(h.client.calls).toHaveLength(calls);
    expect(storedDocument(h.client.peek(KEY)?.data)?.publisher.identity).toBe('replica-b');
  });

  it('stops when the fence is down, without a request', async () => {
    const h = harness();
    await h.clock.advance(0);
    h.setLeadership({ leading: false });
    await h.clock.advance(1100);
    await h.running;
    expect(h.writeTimes()).toEqual([0]);
    expect(h.stepDowns).toEqual([]);
  });

  it('stops on shutdown without a last write, cancelling the write in flight', async () => {
    const h = harness();
    await h.clock.advance(0);
    h.client.delay('replace', 500);
    await h.clock.advance(1200); // an update is in flight since 1100
    await h.stop();
    await h.clock.advance(5000);
    expect(h.writeTimes()).toEqual([0]);
    expect(h.client.calls.at(-1)).toMatchObject({ op: 'replace', result: 'error' });
  });

  it('logs a render that throws and tries again at the next tick', async () => {
    let fail = true;
    const h = harness({
      render: (now) => {
        if (fail) throw new Error('engine broke');
        return sampleDocument('replica-a', TERM, 0, new Date(now).toISOString());
      },
      random: () => 0,
    });
    await h.clock.advance(0);
    fail = false;
    await h.clock.advance(1000);
    expect(h.writeTimes()).toEqual([1000]);
    expect(h.messages().find((m) => m.level === 'error')).toMatchObject({
      msg: 'rendering the status document failed; retrying at the next tick',
    });
    await h.stop();
  });

  it('may be started once', async () => {
    const h = harness();
    await expect(h.publisher.start(new AbortController().signal)).rejects.toThrow(/once/);
    await h.stop();
  });
});

/**
 * The status publisher and its mirrors against the real apiserver, acting as the
 * controller's ServiceAccount under exactly the RBAC k8s/controller ships
 * (test/setup/controller-rbac.ts). Writes are observed through a watch of the ConfigMap (as
 * admin: the controller may not watch ConfigMaps) and through the publisher's own
 * acknowledgements; every wait is on a watch event, an acknowledgement or a log line, with a
 * deadline. The measured figures (writes/s, bytes/s, sizes, gaps) are printed at the end.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import {
  FAULT_DATA_KEY,
  STATUS_CONFIGMAP_NAME,
  publishedDocumentSchema,
  type PublishedDocument,
} from '../contracts/index.js';
import {
  createKubeConfigMapClient,
  createStatusMirrors,
  createStatusPublisher,
  type ConfigMapClient,
  type MirrorNamespaces,
  type PublisherConfigInput,
  type StatusPublisher,
  type StatusPublisherDeps,
  type WrittenStatus,
} from '../controller/publisher/index.js';
import { createEngine } from '../core/engine/index.js';
import { generateTrace, roundRobinFleet, type Fault } from '../core/sim/index.js';
import { Registry, createLogger, systemClock, type Logger } from '../platform/index.js';
import { allowMirrorsIn, controllerAccess, type ControllerAccess } from './setup/controller-rbac.js';
import { createTestNamespace, watchUntil, type TestNamespace } from './setup/cluster.js';

const MIRROR_LABEL = 'npu-fault.io/status-mirror';
const MAX_DOCUMENT_BYTES = 900 * 1024;
/** Room for request latency and watch delivery on a loaded test machine. */
const SLACK_MS = 250;

const measured: Record<string, unknown> = {};

/** A write the watch saw: when it arrived (performance.now()) and what it held. */
interface Seen {
  type: string;
  at: number;
  resourceVersion: string;
  document: PublishedDocument | undefined;
  bytes: number;
}

/** Waits until `condition()` holds, re-checked whenever `subscribe` reports a change. */
function until(
  subscribe: (listener: () => void) => () => void,
  condition: () => boolean,
  timeoutMs: number,
  what: () => string,
): Promise<void> {
  if (condition()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what()}`));
    }, timeoutMs);
    const unsubscribe = subscribe(() => {
      if (!condition()) return;
      clearTimeout(timer);
      unsubscribe();
      resolve();
    });
  });
}

/** Listeners of a test's event source. */
class Signal {
  readonly #listeners = new Set<() => void>();
  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };
  emit(): void {
    for (const l of [...this.#listeners]) l();
  }
}

/** Records every event of one ConfigMap through a watch (as admin). */
async function watchConfigMap(
  kc: k8s.KubeConfig,
  namespace: string,
  name = STATUS_CONFIGMAP_NAME,
): Promise<{
  events: Seen[];
  waitFor(condition: (events: Seen[]) => boolean, timeoutMs: number, what: string): Promise<void>;
  stop(): void;
}> {
  const events: Seen[] = [];
  const changed = new Signal();
  const request = await new k8s.Watch(kc).watch(
    `/api/v1/namespaces/${namespace}/configmaps`,
    { fieldSelector: `metadata.name=${name}` },
    (type: string, object: k8s.V1ConfigMap) => {
      const json = object.data?.[FAULT_DATA_KEY];
      const parsed = json === undefined ? undefined : publishedDocumentSchema.safeParse(JSON.parse(json));
      events.push({
        type,
        at: performance.now(),
        resourceVersion: object.metadata?.resourceVersion ?? '',
        document: parsed?.success ? parsed.data : undefined,
        bytes: Buffer.byteLength(json ?? ''),
      });
      changed.emit();
    },
    () => undefined,
  );
  return {
    events,
    waitFor: (condition, timeoutMs, what) =>
      until(
        changed.subscribe,
        () => condition(events),
        timeoutMs,
        () => `${what}; saw ${events.length} events`,
      ),
    stop: () => request.abort(),
  };
}

/** A logger whose lines a test can wait for. */
function recordingLog(): { log: Logger; lines: Record<string, unknown>[]; changed: Signal } {
  const lines: Record<string, unknown>[] = [];
  const changed = new Signal();
  const log = createLogger({
    level: 'debug',
    destination: {
      write: (line: string) => {
        lines.push(JSON.parse(line) as Record<string, unknown>);
        changed.emit();
      },
    },
  });
  return { log, lines, changed };
}

/** A running publisher with what it reported. */
interface Running {
  publisher: StatusPublisher;
  registry: Registry;
  /** Acknowledged writes, with performance.now() at the acknowledgement. */
  written: (WrittenStatus & { at: number })[];
  stepDowns: string[];
  lines: Record<string, unknown>[];
  done: Promise<void>;
  waitWritten(count: number, timeoutMs: number): Promise<void>;
  waitStepDown(timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
  metric(name: string): Promise<Record<string, number>>;
  /** Mean of a histogram (sum / count), over all label values. */
  meanOf(name: string): Promise<number>;
}

function gapsOf(times: number[]): number[] {
  return times.slice(1).map((t, i) => Math.round(t - (times[i] ?? 0)));
}

/** Most events in any window [t, t + windowMs) starting at an event. */
function maxInWindow(times: number[], windowMs: number): number {
  return Math.max(0, ...times.map((t) => times.filter((u) => u >= t && u < t + windowMs).length));
}

/** A small valid document whose content changes at every render (so every due write is worth writing). */
function changingDocument(): StatusPublisherDeps['render'] {
  let renders = 0;
  return (now, publisher) => ({
    version: '3.0',
    timestamp: new Date(now).toISOString(),
    publisher,
    node_count: 1,
    cluster_summary: { total: 8, healthy: 8, degraded: 0, failed: 0, unknown: 0 },
    unobserved: [`render-${String(++renders).padStart(6, '0')}`],
    nodes: {},
  });
}

describe('status publisher on the real control plane, under the shipped RBAC', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let client: ConfigMapClient;
  let core: k8s.CoreV1Api;
  const running: Running[] = [];
  const extraNamespaces: TestNamespace[] = [];

  beforeAll(async () => {
    ns = await createTestNamespace('publisher');
    access = await controllerAccess(ns);
    client = createKubeConfigMapClient(access.kubeConfig.makeApiClient(k8s.CoreV1Api));
    core = ns.admin.makeApiClient(k8s.CoreV1Api);
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await core
      .deleteNamespacedConfigMap({ name: STATUS_CONFIGMAP_NAME, namespace: ns.name })
      .catch(() => undefined);
  });

  afterAll(async () => {
    console.info(`status publisher, measured:\n${JSON.stringify(measured, null, 2)}`);
    for (const extra of extraNamespaces) await extra.dispose();
    await access?.dispose();
    await ns?.dispose();
  });

  function startPublisher(options: {
    identity: string;
    term: number;
    render: StatusPublisherDeps['render'];
    config?: PublisherConfigInput;
    client?: ConfigMapClient;
    onWritten?: (written: WrittenStatus) => void;
  }): Running {
    const registry = new Registry();
    const { log, lines } = recordingLog();
    const written: Running['written'] = [];
    const stepDowns: string[] = [];
    const changed = new Signal();
    const publisher = createStatusPublisher(
      {
        client: options.client ?? client,
        clock: systemClock,
        log,
        registry,
        render: options.render,
        // A replica that believes it leads in its term (a deposed one does, until its 409).
        leadership: () => ({ leading: true, term: options.term }),
        onWritten: (w) => {
          written.push({ ...w, at: performance.now() });
          options.onWritten?.(w);
          changed.emit();
        },
        onStepDown: (reason) => {
          stepDowns.push(reason);
          changed.emit();
        },
      },
      { identity: options.identity, term: options.term, namespace: ns.name, config: options.config },
    );
    const controller = new AbortController();
    const done = publisher.start(controller.signal);
    const result: Running = {
      publisher,
      registry,
      written,
      stepDowns,
      lines,
      done,
      waitWritten: (count, timeoutMs) =>
        until(
          changed.subscribe,
          () => written.length >= count,
          timeoutMs,
          () => `${options.identity}: ${count} acknowledged writes (have ${written.length})`,
        ),
      waitStepDown: (timeoutMs) =>
        until(
          changed.subscribe,
          () => stepDowns.length > 0,
          timeoutMs,
          () => `${options.identity} stepping down`,
        ),
      async stop() {
        controller.abort(new Error('test stop'));
        await done;
      },
      async metric(name) {
        const values = (await registry.getSingleMetric(`npu_fault_controller_${name}`)?.get())?.values ?? [];
        return Object.fromEntries(values.map((v) => [JSON.stringify(v.labels), v.value]));
      },
      async meanOf(name) {
        const values = (await registry.getSingleMetric(`npu_fault_controller_${name}`)?.get())?.values ?? [];
        const total = (suffix: string): number =>
          values
            .filter((v) => (v as { metricName?: string }).metricName?.endsWith(suffix))
            .reduce((sum, v) => sum + v.value, 0);
        return Number((total('_sum') / total('_count')).toFixed(4));
      },
    };
    running.push(result);
    return result;
  }

  it('keeps its budget: ticks 1.0–1.2 s apart, early writes ≥ 150 ms apart, never more than 4 in a second', async () => {
    const watch = await watchConfigMap(ns.admin, ns.name);
    const run = startPublisher({ identity: 'controller-a', term: 1, render: changingDocument() });
    // Phase 1: no early requests: the first write and four ticks.
    await run.waitWritten(5, 15_000);
    const tickWrites = run.written.length;
    // Phase 2: early writes requested every 10 ms ("a device became failed" a hundred times a second).
    const hammer = setInterval(() => run.publisher.requestEarlyWrite(), 10);
    try {
      await run.waitWritten(tickWrites + 12, 15_000);
    } finally {
      clearInterval(hammer);
    }
    await run.stop();
    const acks = run.written.map((w) => w.at);
    await watch.waitFor((e) => e.length >= acks.length, 10_000, 'every acknowledged write seen by the watch');
    watch.stop();

    // Every acknowledged write is in the API, in order, stamped with its identity and term.
    expect(watch.events.map((e) => e.type)).toEqual(['ADDED', ...acks.slice(1).map(() => 'MODIFIED')]);
    expect(watch.events.map((e) => e.document?.publisher)).toEqual(
      acks.map(() => ({ identity: 'controller-a', term: 1 })),
    );
    const seen = watch.events.map((e) => e.at);

    const tickGaps = gapsOf(acks.slice(0, tickWrites));
    const earlyGaps = gapsOf(acks.slice(tickWrites - 1));
    const seenTickGaps = gapsOf(seen.slice(0, tickWrites));
    const seenEarlyGaps = gapsOf(seen.slice(tickWrites - 1));
    // Start to start: the tick (1.0–1.2 s), plus timer delay on a loaded machine. Acknowledgement
    // to acknowledgement differs from that only by how much the two requests' latencies differ.
    const starts = run.written.map((w) => w.renderedAt);
    for (const gap of gapsOf(starts.slice(0, tickWrites))) {
      expect(gap).toBeGreaterThanOrEqual(999);
      expect(gap).toBeLessThanOrEqual(1200 + SLACK_MS);
    }
    for (const gap of tickGaps) {
      expect(gap).toBeGreaterThanOrEqual(1000 - SLACK_MS / 5);
      expect(gap).toBeLessThanOrEqual(1200 + SLACK_MS);
    }
    for (const gap of seenTickGaps) {
      expect(gap).toBeGreaterThanOrEqual(1000 - SLACK_MS / 5);
      expect(gap).toBeLessThanOrEqual(1200 + SLACK_MS);
    }
    // An early write begins ≥ 150 ms (publish.earlyMinGapMs) after the previous write began (schedule.ts: gaps count
    // from the start of a write, so a slow request does not stretch them), and well before a
    // tick. (The first may wait for the tick it replaces: the hammering began during a tick.)
    const earlyStartGaps = gapsOf(starts.slice(tickWrites - 1));
    for (const gap of earlyStartGaps) expect(gap).toBeGreaterThanOrEqual(149);
    for (const gap of earlyGaps.slice(1)) expect(gap).toBeLessThan(1000);
    // Seen from outside, the gaps vary only by how long each request took.
    for (const gap of seenEarlyGaps) expect(gap).toBeGreaterThanOrEqual(150 - SLACK_MS / 5);
    expect(maxInWindow(acks, 1000)).toBeLessThanOrEqual(4);
    expect(maxInWindow(seen, 1000 - SLACK_MS / 5)).toBeLessThanOrEqual(4);

    const earlySpan = (acks.at(-1) ?? 0) - (acks[tickWrites - 1] ?? 0);
    measured.budget = {
      writes: acks.length,
      tickGapsMs: seenTickGaps,
      earlyGapsMs: seenEarlyGaps,
      maxWritesInAnySecond: maxInWindow(seen, 1000),
      earlyWritesPerSecond: Number((((acks.length - tickWrites) * 1000) / earlySpan).toFixed(2)),
      meanWriteSeconds: await run.meanOf('write_duration_seconds'),
    };
  });

  it('publishes 1,500 nodes × 8 devices with 30% failing under 900 KiB, every failing node listed with its share, and the byte budget defers writes', async () => {
    // The fleet: 910B, 310P and NVIDIA nodes in turn; every device of 3 nodes in 10 loses its PCIe link.
    const fleet = roundRobinFleet(1500, 'publisher');
    const failing = fleet.filter((_, i) => i % 10 < 3);
    const faults: Fault[] = failing.flatMap((node) =>
      node.devices.map((d): Fault => ({ kind: 'link-down', node: node.name, device: d.id, from: 1 })),
    );
    const trace = generateTrace({ nodes: fleet, seconds: 3, faults, seed: 'publisher' });
    const engine = createEngine();
    engine.setKnownNodes(fleet.map((n) => n.name));
    let traceNow = trace.start;
    for (const snapshot of trace.snapshots) {
      traceNow = Math.max(traceNow, Date.parse(snapshot.collected_at));
      engine.observe(snapshot, traceNow + 20);
    }
    // Rendered as of the trace's end (its agents are not stale then), stamped by the publisher;
    // the timestamp moves as in production (an update with identical data is a no-op for the API).
    const render: StatusPublisherDeps['render'] = (now, publisher) => ({
      ...engine.document(traceNow + 100, publisher),
      timestamp: new Date(now).toISOString(),
    });

    // A 5 s byte window at the contract's 256 KiB/s holds one 900 KiB document, not two.
    const config = { bytesWindowSeconds: 5 };
    const allowance = 256 * 1024 * config.bytesWindowSeconds;
    const watch = await watchConfigMap(ns.admin, ns.name);
    const run = startPublisher({ identity: 'controller-a', term: 1, render, config });
    await run.waitWritten(4, 40_000);
    await run.stop();
    await watch.waitFor((e) => e.length >= run.written.length, 10_000, 'every write seen');
    watch.stop();

    const stored = await core.readNamespacedConfigMap({ name: STATUS_CONFIGMAP_NAME, namespace: ns.name });
    const json = stored.data?.[FAULT_DATA_KEY] ?? '';
    const document = publishedDocumentSchema.parse(JSON.parse(json));
    const bytes = Buffer.byteLength(json);
    expect(bytes).toBeLessThanOrEqual(MAX_DOCUMENT_BYTES);
    expect(stored.data?.version).toBe('3.0');
    expect(document.publisher).toEqual({ identity: 'controller-a', term: 1 });
    expect(document.cluster_summary).toEqual({
      total: 12_000,
      healthy: 8400,
      degraded: 0,
      failed: 3600,
      unknown: 0,
    });
    // Every failing node stays listed (contract §5.3): the budget gives each the same share of
    // its failed devices and counts the rest, rather than cutting whole nodes.
    expect(document.omitted_nodes).toBeUndefined();
    expect(Object.keys(document.nodes).sort()).toEqual(failing.map((n) => n.name).sort());
    const shares = new Set<number>();
    for (const entry of Object.values(document.nodes)) {
      expect(entry.summary.failed).toBe(8);
      expect(entry.npus.every((d) => d.status === 'failed')).toBe(true);
      expect(entry.npus.length + (entry.omitted_devices ?? 0)).toBe(8);
      shares.add(entry.npus.length);
    }
    // One share for all, one more for some while it fits.
    expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
    expect(Math.min(...shares)).toBeGreaterThan(0);

    // The byte ceiling: never more than the allowance in any 5 s window; writes were held back.
    const acks = run.written.map((w) => w.at);
    for (const end of acks) {
      const inWindow = run.written.filter((w) => w.at > end - 5000 && w.at <= end);
      expect(inWindow.reduce((sum, w) => sum + w.bytes, 0)).toBeLessThanOrEqual(allowance);
    }
    expect(Math.min(...gapsOf(acks))).toBeGreaterThanOrEqual(5000);
    const deferred = await run.metric('publish_deferred_total');
    expect(deferred['{"budget":"bytes"}']).toBeGreaterThanOrEqual(3);
    const span = (acks.at(-1) ?? 0) - (acks[0] ?? 0);
    const after = run.written.slice(1).reduce((sum, w) => sum + w.bytes, 0);
    measured.large = {
      nodes: fleet.length,
      devices: fleet.length * 8,
      failingNodes: failing.length,
      documentBytes: bytes,
      listedNodes: Object.keys(document.nodes).length,
      devicesListedPerNode: Object.values(document.nodes)[0]?.npus.length,
      writes: acks.length,
      gapsMs: gapsOf(acks),
      deferred,
      achievedBytesPerSecond: Math.round((after * 1000) / span),
      ceilingBytesPerSecond: 256 * 1024,
      renderMs: (() => {
        const started = performance.now();
        engine.document(traceNow + 100, { identity: 'x', term: 1 });
        return Math.round(performance.now() - started);
      })(),
      meanWriteSeconds: await run.meanOf('write_duration_seconds'),
    };
  });

  it('retries conflicts caused by another writer in between; the final document is its own', async () => {
    const admin = core;
    const interference: (() => Promise<unknown>)[] = [];
    const adminUpdate = async (change: (cm: k8s.V1ConfigMap) => k8s.V1ConfigMap): Promise<void> => {
      const current = await admin.readNamespacedConfigMap({
        name: STATUS_CONFIGMAP_NAME,
        namespace: ns.name,
      });
      await admin.replaceNamespacedConfigMap({
        name: STATUS_CONFIGMAP_NAME,
        namespace: ns.name,
        body: change(current),
      });
    };
    // An admin writes between the publisher's read and its update: a real 409 from the apiserver.
    const interfering: ConfigMapClient = {
      get: (key, signal) => client.get(key, signal),
      create: (key, content, signal) => client.create(key, content, signal),
      delete: (key, preconditions, signal) => client.delete(key, preconditions, signal),
      async replace(key, resourceVersion, content, signal) {
        await interference.shift()?.();
        return await client.replace(key, resourceVersion, content, signal);
      },
    };
    const run = startPublisher({
      identity: 'controller-a',
      term: 3,
      render: changingDocument(),
      client: interfering,
    });
    await run.waitWritten(1, 10_000);
    interference.push(
      // Its own document with an annotation added (kubectl annotate): same identity, retried.
      () =>
        adminUpdate((cm) => ({ ...cm, metadata: { ...cm.metadata, annotations: { touched: 'by-admin' } } })),
      // Garbage: overwritten, logged and counted.
      () => adminUpdate((cm) => ({ ...cm, data: { version: '3.0', [FAULT_DATA_KEY]: '{"oops"' } })),
      // An older term's document of another replica: retried.
      () =>
        adminUpdate((cm) => {
          // (Built afresh: this may run just after the garbage, on the retry.)
          const stale = changingDocument()(Date.now(), { identity: 'controller-old', term: 2 });
          return { ...cm, data: { version: '3.0', [FAULT_DATA_KEY]: JSON.stringify(stale) } };
        }),
    );
    await run.waitWritten(5, 15_000);
    await run.stop();
    expect(interference).toEqual([]);
    expect(await run.metric('publish_conflicts_total')).toEqual({ '{"outcome":"retried"}': 3 });
    expect(await run.metric('publish_invalid_overwritten_total')).toEqual({ '{}': 1 });
    expect((await run.metric('writes_total'))['{"target":"status","result":"conflict"}']).toBe(3);
    const stored = await admin.readNamespacedConfigMap({ name: STATUS_CONFIGMAP_NAME, namespace: ns.name });
    const document = publishedDocumentSchema.parse(JSON.parse(stored.data?.[FAULT_DATA_KEY] ?? ''));
    // Its own: the last acknowledged write, or one rendered after it whose request was in flight at stop.
    expect(document.publisher).toEqual({ identity: 'controller-a', term: 3 });
    const renderedAfter =
      (document.unobserved[0] ?? '') >= (run.written.at(-1)?.document.unobserved[0] ?? '~');
    expect(renderedAfter).toBe(true);
    expect(stored.metadata?.annotations).toEqual({ touched: 'by-admin' });
    measured.conflicts = { retried: 3, invalidOverwritten: 1, writes: run.written.length };
  });

  it("refuses a deposed leader's late write: it meets a 409, re-reads, steps down, and the successor's document stays", async () => {
    const watch = await watchConfigMap(ns.admin, ns.name);
    const a = startPublisher({ identity: 'controller-a', term: 1, render: changingDocument() });
    await a.waitWritten(1, 10_000);
    const bClient = createKubeConfigMapClient((await access.another()).makeApiClient(k8s.CoreV1Api));
    const b = startPublisher({
      identity: 'controller-b',
      term: 2,
      render: changingDocument(),
      client: bClient,
    });
    await b.waitWritten(1, 10_000);
    const started = performance.now();
    await a.waitStepDown(10_000);
    const stepDownMs = Math.round(performance.now() - started);
    await a.done; // A's start() ended on its own
    await b.waitWritten(b.written.length + 1, 10_000);
    await b.stop();
    await watch.waitFor((e) => e.length >= a.written.length + b.written.length, 10_000, 'every write seen');
    watch.stop();

    expect(a.stepDowns).toEqual(['status ConfigMap written by controller-b in term 2 (ours: 1)']);
    expect(await a.metric('publish_conflicts_total')).toEqual({ '{"outcome":"stepped_down"}': 1 });
    // After B's first write, every write in the API is B's: A's late write never landed.
    const identities = watch.events.map((e) => e.document?.publisher.identity);
    const firstOfB = identities.indexOf('controller-b');
    expect(firstOfB).toBeGreaterThan(0);
    expect(identities.slice(firstOfB).every((i) => i === 'controller-b')).toBe(true);
    const stored = await core.readNamespacedConfigMap({ name: STATUS_CONFIGMAP_NAME, namespace: ns.name });
    expect(JSON.parse(stored.data?.[FAULT_DATA_KEY] ?? '{}')).toMatchObject({
      publisher: { identity: 'controller-b', term: 2 },
    });
    measured.deposed = { stepDownAfterSuccessorWriteMs: stepDownMs, writesOfA: a.written.length };
  });

  it('mirrors into labelled namespaces, removes the copy when the label goes, and leaves a foreign ConfigMap alone', async () => {
    const [labelled, unlabelled, foreign] = await Promise.all(
      ['mirror-a', 'mirror-b', 'mirror-x'].map((prefix) => createTestNamespace(prefix)),
    );
    if (!labelled || !unlabelled || !foreign) throw new Error('namespaces not created');
    extraNamespaces.push(labelled, unlabelled, foreign);
    const ours = new Set([labelled.name, unlabelled.name, foreign.name]);
    // Each opted in as an operator does (test/controller-privilege.test.ts covers one that is not).
    for (const name of ours) await allowMirrorsIn(ns, name);
    const foreignMap = await core.createNamespacedConfigMap({
      namespace: foreign.name,
      body: {
        metadata: { name: STATUS_CONFIGMAP_NAME, labels: { owner: 'team-x' } },
        data: { theirs: 'yes' },
      },
    });
    const label = (name: string, value: string | null) =>
      core.patchNamespace(
        { name, body: { metadata: { labels: { [MIRROR_LABEL]: value } } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    await Promise.all([...ours].map((name) => label(name, 'true')));

    // The namespace set, from a watch of labelled namespaces as the controller (ClusterRole
    // namespaces list/watch), limited to this test's namespaces.
    const labelledNow = new Set<string>();
    const namespacesChanged = new Signal();
    const namespaceWatch = await new k8s.Watch(access.kubeConfig).watch(
      '/api/v1/namespaces',
      { labelSelector: `${MIRROR_LABEL}=true` },
      (type: string, object: k8s.V1Namespace) => {
        const name = object.metadata?.name ?? '';
        if (!ours.has(name)) return;
        if (type === 'DELETED') labelledNow.delete(name);
        else labelledNow.add(name);
        namespacesChanged.emit();
      },
      () => undefined,
    );
    const namespaces: MirrorNamespaces = {
      namespaces: () => labelledNow,
      onChange: namespacesChanged.subscribe,
    };
    await until(
      namespacesChanged.subscribe,
      () => labelledNow.size === 3,
      10_000,
      () => 'three labelled namespaces',
    );

    const { log, lines, changed: logged } = recordingLog();
    const mirrors = createStatusMirrors(
      {
        client,
        namespaces,
        leadership: () => ({ leading: true, term: 1 }),
        clock: systemClock,
        log,
        registry: new Registry(),
      },
      { term: 1, statusNamespace: ns.name },
    );
    const stopMirrors = new AbortController();
    const mirrorsDone = mirrors.start(stopMirrors.signal);
    const run = startPublisher({
      identity: 'controller-a',
      term: 1,
      render: changingDocument(),
      onWritten: (w) => mirrors.publish(w),
    });
    try {
      const published = new Set<string>();
      const copyOf = (namespace: string) =>
        watchUntil<k8s.V1ConfigMap>(
          ns.admin,
          `/api/v1/namespaces/${namespace}/configmaps`,
          (cm) => {
            for (const w of run.written) published.add(w.data[FAULT_DATA_KEY] ?? '');
            return published.has(cm.data?.[FAULT_DATA_KEY] ?? '-');
          },
          {
            fieldSelector: `metadata.name=${STATUS_CONFIGMAP_NAME}`,
            timeoutMs: 15_000,
            what: `mirror in ${namespace}`,
          },
        );
      const [copyA, copyB] = await Promise.all([copyOf(labelled.name), copyOf(unlabelled.name)]);
      for (const copy of [copyA, copyB]) {
        expect(copy.metadata?.labels).toMatchObject({
          'app.kubernetes.io/name': 'npu-fault',
          'app.kubernetes.io/managed-by': 'npu-fault-controller',
        });
        expect(copy.data?.version).toBe('3.0');
      }

      // The foreign one: found, logged, left alone.
      await until(
        logged.subscribe,
        () => lines.some((l) => l.namespace === foreign.name && String(l.msg).includes('not ours')),
        15_000,
        () => 'the foreign ConfigMap to be noticed',
      );

      // The label goes: the copy goes.
      const removedAt = performance.now();
      await label(unlabelled.name, null);
      await watchUntil(
        ns.admin,
        `/api/v1/namespaces/${unlabelled.name}/configmaps`,
        (_cm, type) => type === 'DELETED',
        {
          fieldSelector: `metadata.name=${STATUS_CONFIGMAP_NAME}`,
          resourceVersion: copyB.metadata?.resourceVersion,
          timeoutMs: 15_000,
          what: 'mirror removed',
        },
      );
      const removalMs = Math.round(performance.now() - removedAt);

      const foreignNow = await core.readNamespacedConfigMap({
        name: STATUS_CONFIGMAP_NAME,
        namespace: foreign.name,
      });
      expect(foreignNow.metadata?.resourceVersion).toBe(foreignMap.metadata?.resourceVersion);
      expect(foreignNow.data).toEqual({ theirs: 'yes' });
      const stillThere = await core.readNamespacedConfigMap({
        name: STATUS_CONFIGMAP_NAME,
        namespace: labelled.name,
      });
      expect(stillThere.metadata?.uid).toBe(copyA.metadata?.uid);
      measured.mirrors = {
        removalAfterUnlabelMs: removalMs,
        copyBytes: Buffer.byteLength(copyA.data?.[FAULT_DATA_KEY] ?? ''),
      };
    } finally {
      stopMirrors.abort(new Error('test stop'));
      await mirrorsDone;
      namespaceWatch.abort();
    }
  });
});

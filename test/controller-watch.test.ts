/**
 * The controller's watches (controller/watch) against the real apiserver, acting as the
 * controller's ServiceAccount under exactly the shipped RBAC (test/setup/controller-rbac.ts):
 * Nodes found by capacity and by label, Ready changes and deletions seen; the mirror label
 * on a namespace added and removed; the rules ConfigMap followed through its field selector
 * (the Role names only that ConfigMap), valid and invalid edits; a watchdog restart on a
 * quiet watch; a watch resumed after a gap. The one exception is the real 410 Gone: it is
 * provoked on a custom resource (as admin) whose CRD change rebuilds the apiserver's watch
 * cache during a gap in the loop's watch, so the loop's own resourceVersion expires (the
 * same loop and transport as the controller's watches; see that test for why not Nodes).
 *
 * Nodes are cluster-scoped and other test files run at once, so this file's Nodes are named
 * after its namespace and every assertion looks only at them. Every wait is on a callback of
 * the code under test (or its log line, or an API watch) with a deadline: no sleeps.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import type { Counter } from 'prom-client';
import {
  MIRROR_LABEL,
  RULES_CONFIGMAP,
  createKubeWatchClients,
  createMirrorNamespaceWatch,
  createNodeWatch,
  createRulesConfigMapWatch,
  describeRulesSource,
  type KubeWatchClients,
  type NodeChange,
} from '../controller/watch/index.js';
import {
  createKubeListWatchClient,
  createWatchLoop,
  type KubeCollection,
  type ListPage,
  type ListWatchClient,
  type WatchRequest,
} from '../platform/k8s/index.js';
import { defaultRules } from '../core/rules/index.js';
import { Registry, createLogger, systemClock, type Logger, type Runnable } from '../platform/index.js';
import { controllerAccess, type ControllerAccess } from './setup/controller-rbac.js';
import { createTestNamespace, waitUntilGone, watchUntil, type TestNamespace } from './setup/cluster.js';

const WAIT_MS = 30_000;
const MERGE_PATCH = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** Things reported by callbacks and log lines, with waits that resolve on them. */
class Recorder<T> {
  readonly seen: T[] = [];
  readonly #waiters: { predicate: (item: T) => boolean; resolve: (item: T) => void }[] = [];

  push(item: T): void {
    this.seen.push(item);
    for (const waiter of [...this.#waiters]) {
      if (!waiter.predicate(item)) continue;
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve(item);
    }
  }

  /** The first item (already seen or to come) matching `predicate`; rejects after `timeoutMs`. */
  waitFor(what: string, predicate: (item: T) => boolean, timeoutMs = WAIT_MS): Promise<T> {
    const found = this.seen.find(predicate);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}; seen: ${JSON.stringify(this.seen).slice(-800)}`,
          ),
        );
      }, timeoutMs);
      const waiter = {
        predicate,
        resolve: (item: T) => {
          clearTimeout(timer);
          resolve(item);
        },
      };
      this.#waiters.push(waiter);
    });
  }

  /** Waits for items from now on only (call it before the action that causes them). */
  next(what: string, predicate: (item: T) => boolean, timeoutMs = WAIT_MS): Promise<T> {
    const from = this.seen.length;
    return this.waitFor(what, (item) => this.seen.indexOf(item) >= from && predicate(item), timeoutMs);
  }
}

/** A logger whose lines are recorded (parsed), so tests can wait on them. */
function recordingLog(): { log: Logger; lines: Recorder<Record<string, unknown>> } {
  const lines = new Recorder<Record<string, unknown>>();
  const log = createLogger({
    level: 'debug',
    destination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  return { log, lines };
}

async function counter(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(`npu_fault_controller_${name}`) as Counter | undefined;
  if (!metric) return 0;
  const { values } = await metric.get();
  return values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value ?? 0;
}

/** Resolves (undefined, or the error it ended with) when a new watch of `path` ends. */
async function watchEnds(kc: k8s.KubeConfig, path: string): Promise<unknown> {
  let ended: (error: unknown) => void = () => undefined;
  const done = new Promise<unknown>((resolve) => (ended = resolve));
  await new k8s.Watch(kc).watch(
    path,
    {},
    () => undefined,
    (error: unknown) => ended(error ?? undefined),
  );
  return done;
}

/** Started runnables, stopped after each test. */
const running: { stop: AbortController; done: Promise<void> }[] = [];
function run(runnable: Runnable): void {
  const stop = new AbortController();
  running.push({ stop, done: runnable.start(stop.signal) });
}

/**
 * A client between the loop and the real one that can open a gap: `disconnect` ends the
 * open watch and holds the next one back; `resume` lets it go, optionally from another
 * resourceVersion (an expired one, to meet the apiserver's 410).
 */
function gapClient(inner: ListWatchClient) {
  let held: { release: () => void; promise: Promise<void> } | undefined;
  let resumeFrom: string | undefined;
  let open: AbortController | undefined;
  const sent: string[] = [];
  let lists = 0;
  const client: ListWatchClient = {
    description: inner.description,
    list(onPage, signal) {
      lists += 1;
      return inner.list(onPage, signal);
    },
    async watch(request: WatchRequest, onEvent, signal) {
      if (held) await held.promise;
      const resourceVersion = resumeFrom ?? request.resourceVersion;
      resumeFrom = undefined;
      sent.push(resourceVersion);
      open = new AbortController();
      return inner.watch({ ...request, resourceVersion }, onEvent, AbortSignal.any([signal, open.signal]));
    },
  };
  return {
    client,
    sent,
    lists: () => lists,
    disconnect(): void {
      let release = (): void => undefined;
      const promise = new Promise<void>((resolve) => (release = resolve));
      held = { release, promise };
      open?.abort();
    },
    resume(from?: string): void {
      resumeFrom = from;
      const gate = held;
      held = undefined;
      gate?.release();
    },
  };
}

describe('controller watches on the real control plane, under the shipped RBAC', () => {
  let ns: TestNamespace;
  let access: ControllerAccess;
  let clients: KubeWatchClients;
  let admin: k8s.CoreV1Api;
  const nodes = new Set<string>();

  const createNode = async (suffix: string, labels: Record<string, string> = {}): Promise<string> => {
    const name = `${ns.name}-${suffix}`;
    await admin.createNode({
      body: { metadata: { name, labels: { 'npu-fault.io/test': 'true', ...labels } } },
    });
    nodes.add(name);
    return name;
  };
  const patchNodeStatus = (name: string, status: k8s.V1NodeStatus): Promise<k8s.V1Node> =>
    admin.patchNodeStatus({ name, body: { status } }, MERGE_PATCH);
  const readyCondition = (status: 'True' | 'False' | 'Unknown'): k8s.V1NodeCondition => ({
    type: 'Ready',
    status,
    reason: status === 'True' ? 'KubeletReady' : 'KubeletNotReady',
    message: 'set by controller-watch.test.ts',
    lastHeartbeatTime: new Date(),
    lastTransitionTime: new Date(),
  });
  const deleteNode = async (name: string): Promise<void> => {
    await admin.deleteNode({ name });
    await waitUntilGone(ns.admin, '/api/v1/nodes', name, (fieldSelector) =>
      admin.listNode({ fieldSelector }),
    );
    nodes.delete(name);
  };

  beforeAll(async () => {
    ns = await createTestNamespace('watch');
    access = await controllerAccess(ns);
    clients = createKubeWatchClients(access.kubeConfig, { namespace: ns.name });
    admin = ns.admin.makeApiClient(k8s.CoreV1Api);
  });

  afterEach(async () => {
    for (const { stop } of running) stop.abort();
    await Promise.all(running.splice(0).map((r) => r.done));
  });

  afterAll(async () => {
    for (const name of nodes) await admin.deleteNode({ name }).catch(() => undefined);
    await access?.dispose();
    await ns?.dispose();
  });

  function startNodeWatch(
    client: ListWatchClient,
    labelSelector = '',
  ): {
    changes: Recorder<NodeChange>;
    registry: Registry;
    lines: Recorder<Record<string, unknown>>;
    watch: ReturnType<typeof createNodeWatch>;
  } {
    const changes = new Recorder<NodeChange>();
    const registry = new Registry();
    const { log, lines } = recordingLog();
    const watch = createNodeWatch(
      { client, clock: systemClock, log, registry },
      {
        config: { labelSelector },
        callbacks: { onChange: (change) => changes.push(change) },
        loop: { initialBackoffMs: 200, maxBackoffMs: 2000 },
      },
    );
    run(watch);
    return { changes, registry, lines, watch };
  }

  it('finds accelerator nodes by capacity and by label, and sees Ready change and deletion', async () => {
    const gpu = await createNode('gpu');
    await patchNodeStatus(gpu, { capacity: { cpu: '8', 'nvidia.com/gpu': '8' } });
    const labelled = await createNode('labelled', { 'npu-fault.io/accelerator': 'true' });
    const cpu = await createNode('cpu');
    await patchNodeStatus(cpu, { capacity: { cpu: '8' } });

    const { changes, watch } = startNodeWatch(clients.nodes, 'npu-fault.io/accelerator=true');
    await watch.whenSynced();
    expect(watch.get(gpu)).toMatchObject({ accelerator: true, ready: undefined });
    expect(watch.get(labelled)).toMatchObject({ accelerator: true });
    expect(watch.get(cpu)).toMatchObject({ accelerator: false });
    expect(watch.acceleratorNodes().map((n) => n.name)).toEqual(expect.arrayContaining([gpu, labelled]));

    // A node turning into an accelerator node after the list (its device plugin registered).
    const npu = await createNode('npu');
    await changes.waitFor(`${npu} added`, (c) => c.name === npu && c.current?.accelerator === false);
    await patchNodeStatus(npu, { capacity: { 'huawei.com/Ascend910': '8' } });
    await changes.waitFor(`${npu} accelerator`, (c) => c.name === npu && c.current?.accelerator === true);

    await patchNodeStatus(gpu, { conditions: [readyCondition('True')] });
    await changes.waitFor(`${gpu} Ready`, (c) => c.name === gpu && c.current?.ready === true);
    await patchNodeStatus(gpu, { conditions: [readyCondition('False')] });
    const notReady = await changes.waitFor(
      `${gpu} not Ready`,
      (c) => c.name === gpu && c.current?.ready === false,
    );
    expect(notReady.previous?.ready).toBe(true);

    await admin.patchNode(
      { name: gpu, body: { metadata: { annotations: { 'npu-fault.io/clear': 'all' } } } },
      MERGE_PATCH,
    );
    await changes.waitFor(`${gpu} clear annotation`, (c) => c.name === gpu && c.current?.clear === 'all');

    await admin.deleteNode({ name: gpu });
    nodes.delete(gpu);
    const deleted = await changes.waitFor(`${gpu} deleted`, (c) => c.name === gpu && c.current === undefined);
    expect(deleted.previous).toMatchObject({ accelerator: true, ready: false, clear: 'all' });
    expect(watch.get(gpu)).toBeUndefined();
  });

  it('follows the mirror label on a namespace (server-side selector)', async () => {
    const sets = new Recorder<ReadonlySet<string>>();
    const { log } = recordingLog();
    const watch = createMirrorNamespaceWatch(
      { client: clients.mirrorNamespaces, clock: systemClock, log, registry: new Registry() },
      { onChange: (set) => sets.push(set) },
    );
    run(watch);
    await watch.whenSynced();
    expect(watch.current().has(ns.name)).toBe(false);

    await admin.patchNamespace(
      { name: ns.name, body: { metadata: { labels: { [MIRROR_LABEL]: 'true' } } } },
      MERGE_PATCH,
    );
    await sets.waitFor('label added', (set) => set.has(ns.name));
    expect(watch.current().has(ns.name)).toBe(true);

    const removed = sets.next('label removed', (set) => !set.has(ns.name));
    await admin.patchNamespace(
      { name: ns.name, body: { metadata: { labels: { [MIRROR_LABEL]: null } } } },
      MERGE_PATCH,
    );
    await removed;
    expect(watch.current().has(ns.name)).toBe(false);
  });

  it('follows the rules ConfigMap through its field selector: valid edits reload, an invalid one is refused', async () => {
    // The Role grants list/watch on this one name only: the field selector makes that enough.
    const asController = access.kubeConfig.makeApiClient(k8s.CoreV1Api);
    await expect(
      asController.listNamespacedConfigMap({
        namespace: ns.name,
        fieldSelector: `metadata.name=${RULES_CONFIGMAP}`,
      }),
    ).resolves.toMatchObject({ items: [] });
    await expect(asController.listNamespacedConfigMap({ namespace: ns.name })).rejects.toMatchObject({
      code: 403,
    });

    await admin.createNamespacedConfigMap({
      namespace: ns.name,
      body: {
        metadata: { name: RULES_CONFIGMAP },
        data: { 'rules.yaml': 'high_temp:\n  threshold_c: 80\n' },
      },
    });
    const reloads = new Recorder<string>();
    const registry = new Registry();
    const { log } = recordingLog();
    const watch = createRulesConfigMapWatch(
      { client: clients.rulesConfigMap, clock: systemClock, log, registry },
      {
        namespace: ns.name,
        fallback: defaultRules(),
        onRules: (rules, source) => reloads.push(`rules ${rules.high_temp.threshold_c} ${source.kind}`),
        onInvalid: (message) => reloads.push(`invalid ${message}`),
      },
    );
    run(watch);
    await reloads.waitFor('initial rules', (r) => r === 'rules 80 configmap');
    expect(describeRulesSource(watch.current().source)).toMatch(
      new RegExp(`^${ns.name}/npu-fault-rules/rules.yaml@\\d+$`),
    );

    const edit = (text: string): Promise<k8s.V1ConfigMap> =>
      admin.patchNamespacedConfigMap(
        { name: RULES_CONFIGMAP, namespace: ns.name, body: { data: { 'rules.yaml': text } } },
        MERGE_PATCH,
      );
    await edit('high_temp:\n  threshold_c: 75\n');
    await reloads.waitFor('valid edit', (r) => r === 'rules 75 configmap');

    await edit('high_temp:\n  threshold_c: 75\n  min_sample: 3\n');
    const refused = await reloads.waitFor('invalid edit', (r) => r.startsWith('invalid'));
    expect(refused).toBe(
      `invalid ${ns.name}/npu-fault-rules/rules.yaml:3: high_temp.min_sample: unknown field`,
    );
    expect(watch.current().rules.high_temp.threshold_c).toBe(75);
    expect(await counter(registry, 'rules_reloads_total', { result: 'invalid' })).toBe(1);
    expect(await counter(registry, 'rules_reloads_total', { result: 'ok' })).toBe(2);

    await admin.deleteNamespacedConfigMap({ name: RULES_CONFIGMAP, namespace: ns.name });
    await reloads.waitFor('fallback after deletion', (r) => r === 'rules 85 fallback');
    expect(reloads.seen).toHaveLength(4);
  });

  it('restarts a quiet watch after watchdogMs without an event or bookmark; events after it still arrive', async () => {
    const reloads = new Recorder<number>();
    const registry = new Registry();
    const { log, lines } = recordingLog();
    const watch = createRulesConfigMapWatch(
      { client: clients.rulesConfigMap, clock: systemClock, log, registry },
      {
        namespace: ns.name,
        fallback: defaultRules(),
        onRules: (rules) => reloads.push(rules.window_samples),
        onInvalid: () => undefined,
        loop: { watchdogMs: 1500 },
      },
    );
    run(watch);
    await watch.whenSynced();
    // Nothing writes this ConfigMap: the watch is quiet, and the apiserver bookmarks only every minute.
    await lines.waitFor(
      'a watchdog restart',
      (l) => l.msg === 'no watch event or bookmark in time; watching again',
    );
    expect(
      await counter(registry, 'watch_restarts_total', { resource: 'rules-configmap', reason: 'watchdog' }),
    ).toBeGreaterThanOrEqual(1);

    await admin.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: RULES_CONFIGMAP }, data: { 'rules.yaml': 'window_samples: 7\n' } },
    });
    await reloads.waitFor('rules after the restart', (n) => n === 7);
    await admin.deleteNamespacedConfigMap({ name: RULES_CONFIGMAP, namespace: ns.name });
  });

  it('resumes a watch from its resourceVersion after a gap: a deletion meanwhile is replayed, no re-list', async () => {
    const gone = await createNode('gap', { 'npu-fault.io/accelerator': 'true' });
    const gap = gapClient(clients.nodes);
    const { changes, watch } = startNodeWatch(gap.client, 'npu-fault.io/accelerator=true');
    await watch.whenSynced();
    expect(watch.get(gone)?.accelerator).toBe(true);

    gap.disconnect();
    await deleteNode(gone);
    gap.resume();
    await changes.waitFor(`${gone} deleted (replayed)`, (c) => c.name === gone && c.current === undefined);
    expect(gap.lists()).toBe(1);
  });

  it('re-lists after a real 410 Gone and reports the deletion it never saw as an event', async () => {
    // The apiserver answers 410 to a watch from a resourceVersion older than its watch
    // cache's window. A fresh control plane's Node cache starts at about resourceVersion 1
    // (so no older one exists), and it drops old events only once it is full and they are
    // over 75 s old, which a test should not wait for. The window also starts over when the
    // cache is rebuilt: at an apiserver restart, or, for a custom resource, at any change of
    // its CRD's spec. So: a custom resource, a gap in the loop's watch, a deletion and a CRD
    // change during the gap; the loop then resumes from its own, now expired, resourceVersion.
    const group = `${ns.name}.npu-fault.test`;
    const crd = `widgets.${group}`;
    const extensions = ns.admin.makeApiClient(k8s.ApiextensionsV1Api);
    const custom = ns.admin.makeApiClient(k8s.CustomObjectsApi);
    const versions = [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ];
    await extensions.createCustomResourceDefinition({
      body: {
        metadata: { name: crd },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
          versions,
        },
      },
    });
    try {
      await watchUntil<k8s.V1CustomResourceDefinition>(
        ns.admin,
        '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
        (object) =>
          object.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false,
        { fieldSelector: `metadata.name=${crd}`, what: `${crd} established` },
      );
      const widgets = { group, version: 'v1', namespace: ns.name, plural: 'widgets' };
      const widget = (name: string): Promise<unknown> =>
        custom.createNamespacedCustomObject({
          ...widgets,
          body: { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name } },
        });
      await widget('kept');
      await widget('missed');

      const collection: KubeCollection = {
        path: `/apis/${group}/v1/namespaces/${ns.name}/widgets`,
        listPage: (page, options) =>
          custom.listNamespacedCustomObject(
            { ...widgets, limit: page.limit, _continue: page.continue },
            options,
          ) as Promise<ListPage>,
      };
      const gap = gapClient(createKubeListWatchClient(ns.admin, collection));
      const registry = new Registry();
      const { log, lines } = recordingLog();
      const order: string[] = [];
      const deletions = new Recorder<string>();
      const loop = createWatchLoop<string>(
        { client: gap.client, clock: systemClock, log, registry },
        {
          resource: 'widgets',
          transform: (raw) => raw.metadata?.name,
          handlers: {
            onDelete: (key) => {
              order.push(`delete ${key}`);
              deletions.push(key);
            },
          },
          initialBackoffMs: 200,
          maxBackoffMs: 2000,
        },
      );
      run(loop);
      await loop.whenSynced();
      expect([...loop.values()].sort()).toEqual(['kept', 'missed']);

      // A watch of our own on the old cache: it ends when the CRD change tears that cache down.
      const oldCacheGone = watchEnds(ns.admin, collection.path);
      gap.disconnect();
      await custom.deleteNamespacedCustomObject({ ...widgets, name: 'missed' });
      await extensions.patchCustomResourceDefinition(
        { name: crd, body: { spec: { names: { plural: 'widgets', kind: 'Widget', shortNames: ['wdg'] } } } },
        MERGE_PATCH,
      );
      expect(await oldCacheGone).toBeUndefined();
      gap.resume();

      const expired = await lines.waitFor('410', (l) => l.msg === 'watch expired (410 Gone); listing again');
      order.push('410');
      expect(JSON.stringify(expired.err)).toMatch(/410.*too old resource version/);
      await deletions.waitFor('missed deleted', (key) => key === `${ns.name}/missed`);
      expect(order).toEqual(['410', `delete ${ns.name}/missed`]);
      expect([...loop.values()]).toEqual(['kept']);
      expect(gap.lists()).toBe(2);
      expect(await counter(registry, 'watch_restarts_total', { resource: 'widgets', reason: 'gone' })).toBe(
        1,
      );
      expect(await counter(registry, 'watch_events_total', { resource: 'widgets', type: 'error' })).toBe(1);
    } finally {
      for (const { stop } of running) stop.abort();
      await extensions.deleteCustomResourceDefinition({ name: crd }).catch(() => undefined);
    }
  });
});

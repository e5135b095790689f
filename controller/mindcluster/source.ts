/**
 * The MindCluster observation source: a list+watch of the device-info ConfigMaps in one
 * namespace (label `mx-consumer-cim=true`, name `mindx-dl-deviceinfo-<node>`), each read into
 * a view (device-info.ts), and a loop that, every `periodMs`, hands the engine a synthetic
 * snapshot (snapshot.ts) of every node that has a valid view and no npu-fault agent.
 *
 * - A node is an agent node once the engine host accepted one of its agent's snapshots; from
 *   then on this source only lends its view to the merge (EngineHost), never a snapshot.
 * - A changed view is applied at once (the write's latency is the watch's, not the period's);
 *   the period keeps an unchanged node alive, as an agent's 1 Hz samples do.
 * - A node whose ConfigMap has not been written for `maxSilenceMs` (watch receipt, this
 *   replica's clock; the first list after a start counts as a write) gets no more snapshots:
 *   MindCluster's plugin rewrites it at least every 5 minutes with a new UpdateTime, so a
 *   silence that long is a dead plugin, and the node turns agent-unreachable rather than
 *   staying healthy on a frozen view (counted once per silence, logged once).
 * - Only Nodes count: a ConfigMap named for a node that is not in the controller's Node cache
 *   is held but neither emitted nor merged (a writer of ConfigMaps there could otherwise make
 *   phantom nodes); at most `maxNodes` views are held, a new one beyond refused (`limit`).
 * - Nothing is emitted for `graceMs` after the start, so a restarted replica hears the agents
 *   (1 Hz) before it could mistake an agent node for an agentless one.
 * - A refused ConfigMap (integrity, JSON, shape, size) is counted
 *   (`npu_fault_controller_mindcluster_configmaps_refused_total{reason}`), logged once per
 *   change with the one-line reason, and the node gets no more snapshots, so it turns
 *   agent-unreachable after the stale threshold while the engine keeps every fault it holds.
 *   On an agent node the last valid view is still merged (a fault MindCluster reported is not
 *   lifted because one write could not be read). A deleted ConfigMap drops the view.
 * - With `nodeInfoClient`, NodeD's node-info ConfigMaps (`mindx-dl-nodeinfo-<node>`, node-info.ts)
 *   are watched too: a node's host hardware fault is a node problem added to every snapshot of
 *   the node, synthetic or its agent's (`nodeProblems`, merged by EngineHost), and applied at
 *   once on an agentless node. NodeD deletes the ConfigMap once the node is healthy, so a delete
 *   lifts it; a refused write keeps the last valid view (a fault is not dropped because a write
 *   could not be read), counted and logged as above.
 * Every replica runs it (hot standby): each applies the same views to its own engine.
 */
import { Counter, Gauge } from 'prom-client';
import type { NodeProblemReading, Snapshot } from '../../contracts/index.js';
import { metricPrefix, type Clock, type Logger, type Registry, type Runnable } from '../../platform/index.js';
import { createWatchLoop, type ListWatchClient, type RawObject } from '../../platform/k8s/index.js';
import {
  DEVICE_INFO_PREFIX,
  parseDeviceInfo,
  type MindClusterView,
  type ParseResult,
  type RefusalReason,
} from './device-info.js';
import { NODE_INFO_PREFIX, nodeProblemOf, parseNodeInfo, type NodeInfoResult } from './node-info.js';
import { BOOT_PREFIX, snapshotOf } from './snapshot.js';

export interface MindClusterSourceDeps {
  /** The device-info ConfigMaps (createMindClusterClient, or a FakeListWatchClient). */
  client: ListWatchClient;
  /** NodeD's node-info ConfigMaps, when they are read too (createMindClusterClient on their namespace). */
  nodeInfoClient?: ListWatchClient;
  clock: Clock;
  log: Logger;
  registry: Registry;
  /** Hands synthetic snapshots to the engine (EngineHost.accept). */
  accept(snapshots: Snapshot[]): void;
  /** Whether the node's own agent reports it (EngineHost.isAgentNode). */
  isAgentNode(node: string): boolean;
  /** Whether a Node of that name exists (the controller's Node cache). */
  isNode(node: string): boolean;
}

export interface MindClusterSourceOptions {
  periodMs: number;
  /** No snapshot before this long after the start (default 5000). */
  graceMs?: number;
  /** No snapshot for a node whose ConfigMap was not written for this long (default 900 000: 3 × the plugin's 5 minutes). */
  maxSilenceMs?: number;
  /** At most this many views held (default 10 000); a new ConfigMap beyond is refused (`limit`). */
  maxNodes?: number;
}

/** The running source. */
export interface MindClusterSource extends Runnable {
  /** The node's valid view, if it has one now (for the merge into its agent's snapshots). */
  view(node: string): MindClusterView | undefined;
  /** The node problems NodeD reports for the node now (none without node-info, or for a name that is no Node). */
  nodeProblems(node: string): readonly NodeProblemReading[];
  synced(): boolean;
  whenSynced(): Promise<void>;
}

interface Cached {
  readonly node: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly result: ParseResult;
}

/** Why a ConfigMap is refused: its content (device-info.ts), or one view too many. */
type SourceRefusal = RefusalReason | 'limit';
const REASONS: readonly SourceRefusal[] = ['integrity', 'json', 'shape', 'oversize', 'limit'];

export function createMindClusterSource(
  deps: MindClusterSourceDeps,
  options: MindClusterSourceOptions,
): MindClusterSource {
  const { clock, log } = deps;
  const prefix = metricPrefix('controller');
  const refused = new Counter({
    name: `${prefix}mindcluster_configmaps_refused_total`,
    help: 'MindCluster device-info ConfigMaps refused (each change counted once), by reason',
    labelNames: ['reason'],
    registers: [deps.registry],
  });
  for (const reason of REASONS) refused.inc({ reason }, 0);
  const maxSilenceMs = options.maxSilenceMs ?? 900_000;
  const maxNodes = options.maxNodes ?? 10_000;
  const silenced = new Counter({
    name: `${prefix}mindcluster_nodes_silenced_total`,
    help: 'MindCluster nodes whose ConfigMap went unwritten past maxSilenceSeconds (no more snapshots until the next write)',
    registers: [deps.registry],
  });
  /**
   * A node's last valid view, when its ConfigMap was last written (received), whether it went
   * silent since, whether its latest write was refused (then merged only, never emitted).
   */
  const views = new Map<
    string,
    { view: MindClusterView; bootId: string; writtenAt: number; silent: boolean; refused: boolean }
  >();
  new Gauge({
    name: `${prefix}mindcluster_nodes`,
    help: 'Nodes with a valid MindCluster view, by role: synthetic (no agent: this source reports them), merged (into their agent), silent (unwritten past maxSilenceSeconds, or its latest write refused: not reported), not-a-node (no such Node: held, not reported)',
    labelNames: ['role'],
    registers: [deps.registry],
    collect() {
      const count = { synthetic: 0, merged: 0, silent: 0, 'not-a-node': 0 };
      for (const [node, entry] of views) {
        if (!deps.isNode(node)) count['not-a-node']++;
        else if (deps.isAgentNode(node)) count.merged++;
        else if (entry.silent || entry.refused) count.silent++;
        else count.synthetic++;
      }
      for (const [role, value] of Object.entries(count)) this.set({ role }, value);
    },
  });
  const seq = new Map<string, number>();
  const nodeInfo = deps.nodeInfoClient ? watchNodeInfo(deps.nodeInfoClient) : undefined;
  /** Past the start grace: a changed view is applied at once, not at the next period. */
  let emitting = false;

  const seen = (cached: Cached): void => {
    const { result } = cached;
    if ('view' in result && !views.has(cached.node) && views.size >= maxNodes) {
      refused.inc({ reason: 'limit' });
      log.warn(
        { node: cached.node, maxNodes, resourceVersion: cached.resourceVersion },
        'MindCluster device-info ConfigMap refused: maxNodes views already held; no MindCluster observations for the node',
      );
      return;
    }
    if ('view' in result) {
      views.set(cached.node, {
        view: result.view,
        bootId: `${BOOT_PREFIX}${cached.uid}`,
        writtenAt: clock.now(),
        silent: false,
        refused: false,
      });
      if (emitting) emit(cached.node);
      return;
    }
    const held = views.get(cached.node);
    if (held) held.refused = true;
    refused.inc({ reason: result.refused });
    log.warn(
      {
        node: cached.node,
        reason: result.refused,
        message: result.message,
        resourceVersion: cached.resourceVersion,
      },
      'MindCluster device-info ConfigMap refused; no MindCluster snapshots for the node until it is valid (an agent node keeps its last valid view merged)',
    );
  };
  const loop = createWatchLoop<Cached>(deps, {
    resource: 'mindcluster-configmaps',
    transform: (raw) => cachedOf(raw),
    // A new resourceVersion is a new write (the plugin's 5-minute refresh too): re-read, and a
    // refusal logged once per write, not once per re-list.
    equals: (a, b) => a.resourceVersion === b.resourceVersion && a.uid === b.uid,
    handlers: {
      onAdd: (_key, cached) => seen(cached),
      onUpdate: (_key, cached) => seen(cached),
      onDelete: (_key, previous) => {
        views.delete(previous.node);
        // Only a delete ends a boot: a refused write keeps the uid, and the next valid one
        // must go on counting, or the engine drops its snapshots as out of order.
        seq.delete(`${BOOT_PREFIX}${previous.uid}`);
        log.info({ node: previous.node }, 'MindCluster device-info ConfigMap deleted');
      },
    },
  });

  /** Hands the engine a snapshot of every agentless node with a view (or of `only`). */
  const emit = (only?: string): void => {
    const batch: Snapshot[] = [];
    const now = clock.now();
    for (const [node, entry] of views) {
      const { view, bootId } = entry;
      if (!deps.isNode(node) || deps.isAgentNode(node) || (only !== undefined && node !== only)) continue;
      if (entry.refused) continue;
      if (now - entry.writtenAt > maxSilenceMs) {
        if (!entry.silent) {
          entry.silent = true;
          silenced.inc();
          log.warn(
            { node, silentForMs: now - entry.writtenAt, maxSilenceMs },
            'MindCluster device-info ConfigMap not written for too long (device plugin down?); no MindCluster observations for the node until it is',
          );
        }
        continue;
      }
      const next = (seq.get(bootId) ?? 0) + 1; // from 1, as an agent counts (contract §1)
      seq.set(bootId, next);
      try {
        batch.push(snapshotOf(view, { bootId, seq: next, now }, nodeInfo?.problems(node) ?? []));
      } catch (error) {
        // The read refuses what the snapshot schema would (device-info.ts): a bug, not input.
        log.error({ node, err: error }, 'MindCluster view not turned into a snapshot');
      }
    }
    if (batch.length > 0) deps.accept(batch);
  };

  const emitter = async (signal: AbortSignal): Promise<void> => {
    await clock.sleep(options.graceMs ?? 5000, signal).catch(() => undefined);
    emitting = true;
    while (!signal.aborted) {
      try {
        emit();
      } catch (error) {
        log.error({ err: error }, 'MindCluster snapshots not applied');
      }
      await clock.sleep(options.periodMs, signal).catch(() => undefined);
    }
  };

  /** NodeD's node-info ConfigMaps: each node's node problem, held until a delete (NodeD's "healthy"). */
  function watchNodeInfo(client: ListWatchClient) {
    const refusedInfo = new Counter({
      name: `${prefix}mindcluster_node_info_refused_total`,
      help: 'MindCluster NodeD node-info ConfigMaps refused (each write counted once), by reason; the last valid view is kept',
      labelNames: ['reason'],
      registers: [deps.registry],
    });
    for (const reason of REASONS) refusedInfo.inc({ reason }, 0);
    /**
     * Each node's last valid node-info report: its node problem (none for NotHandleFault
     * alone), as the array merged into snapshots, and when it was written (received here).
     */
    const reports = new Map<string, { problems: readonly NodeProblemReading[]; writtenAt: number }>();
    new Gauge({
      name: `${prefix}mindcluster_node_info_silent`,
      help: `Nodes whose NodeD report holds a problem but was not rewritten for ${NODE_INFO_SILENT_MS / 1000} s (NodeD rewrites it every 1800 s while a fault holds: NodeD down?); the problem is kept`,
      registers: [deps.registry],
      collect() {
        const now = clock.now();
        let silent = 0;
        for (const [node, report] of reports)
          if (report.problems.length > 0 && deps.isNode(node) && now - report.writtenAt > NODE_INFO_SILENT_MS)
            silent++;
        this.set(silent);
      },
    });
    new Gauge({
      name: `${prefix}mindcluster_node_problems`,
      help: 'Nodes with a host hardware fault NodeD reports, by reason (host-hardware-fault, host-hardware-warning)',
      labelNames: ['reason'],
      registers: [deps.registry],
      collect() {
        const count: Record<string, number> = { 'host-hardware-fault': 0, 'host-hardware-warning': 0 };
        for (const [node, { problems }] of reports)
          for (const problem of deps.isNode(node) ? problems : [])
            count[problem.reason] = (count[problem.reason] ?? 0) + 1;
        for (const [reason, value] of Object.entries(count)) this.set({ reason }, value);
      },
    });
    const seenInfo = (cached: CachedNodeInfo): void => {
      const { result, node } = cached;
      if ('refused' in result) {
        refusedInfo.inc({ reason: result.refused });
        log.warn(
          { node, reason: result.refused, message: result.message, resourceVersion: cached.resourceVersion },
          reports.has(node)
            ? 'MindCluster node-info ConfigMap refused; the node keeps its last valid NodeD report'
            : 'MindCluster node-info ConfigMap refused; no NodeD report for the node until it is valid',
        );
        return;
      }
      if (!reports.has(node) && reports.size >= maxNodes) {
        refusedInfo.inc({ reason: 'limit' });
        log.warn({ node, maxNodes }, 'MindCluster node-info ConfigMap refused: maxNodes already held');
        return;
      }
      const before = reports.get(node)?.problems[0];
      const problem = nodeProblemOf(result.view);
      reports.set(node, { problems: problem ? [problem] : [], writtenAt: clock.now() });
      if (emitting && (before?.reason !== problem?.reason || before?.message !== problem?.message))
        emit(node);
    };
    const infoLoop = createWatchLoop<CachedNodeInfo>(
      { ...deps, client },
      {
        resource: 'mindcluster-node-info',
        transform: (raw) => cachedNodeInfoOf(raw),
        equals: (a, b) => a.resourceVersion === b.resourceVersion && a.uid === b.uid,
        handlers: {
          onAdd: (_key, cached) => seenInfo(cached),
          onUpdate: (_key, cached) => seenInfo(cached),
          onDelete: (_key, previous) => {
            const had = reports.get(previous.node)?.problems.length ?? 0;
            reports.delete(previous.node);
            log.info(
              { node: previous.node },
              'MindCluster node-info ConfigMap deleted (NodeD: the node is healthy)',
            );
            if (emitting && had > 0) emit(previous.node);
          },
        },
      },
    );
    return {
      loop: infoLoop,
      problems: (node: string): readonly NodeProblemReading[] =>
        (deps.isNode(node) ? reports.get(node)?.problems : undefined) ?? [],
    };
  }

  return {
    name: 'mindcluster',
    async start(signal) {
      await Promise.all([
        loop.start(signal),
        ...(nodeInfo ? [nodeInfo.loop.start(signal)] : []),
        emitter(signal),
      ]);
    },
    view: (node) => (deps.isNode(node) ? views.get(node)?.view : undefined),
    nodeProblems: (node) => nodeInfo?.problems(node) ?? [],
    synced: () => loop.synced() && (nodeInfo?.loop.synced() ?? true),
    whenSynced: async () => {
      await Promise.all([loop.whenSynced(), nodeInfo?.loop.whenSynced()]);
    },
  };
}

/** NodeD rewrites a node-info ConfigMap at least every 30 minutes while it exists: three missed is a silent NodeD. */
const NODE_INFO_SILENT_MS = 3 * 1_800_000;

interface CachedNodeInfo {
  readonly node: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly result: NodeInfoResult;
}

/** A node-info ConfigMap as cached (read at once); others undefined. */
export function cachedNodeInfoOf(raw: RawObject): CachedNodeInfo | undefined {
  const metadata = (raw as { metadata?: { name?: string; uid?: string; resourceVersion?: string } }).metadata;
  const name = metadata?.name ?? '';
  if (!name.startsWith(NODE_INFO_PREFIX) || name.length === NODE_INFO_PREFIX.length) return undefined;
  const node = name.slice(NODE_INFO_PREFIX.length);
  return {
    node,
    uid: metadata?.uid ?? name,
    resourceVersion: metadata?.resourceVersion ?? '',
    result: parseNodeInfo(node, (raw as { data?: Record<string, string> }).data),
  };
}

/** A device-info ConfigMap as cached (its data read at once, the raw object not kept); others undefined. */
export function cachedOf(raw: RawObject): Cached | undefined {
  const metadata = (raw as { metadata?: { name?: string; uid?: string; resourceVersion?: string } }).metadata;
  const name = metadata?.name ?? '';
  if (!name.startsWith(DEVICE_INFO_PREFIX) || name.length === DEVICE_INFO_PREFIX.length) return undefined;
  const node = name.slice(DEVICE_INFO_PREFIX.length);
  const data = (raw as { data?: Record<string, string> }).data;
  return {
    node,
    uid: metadata?.uid ?? name,
    resourceVersion: metadata?.resourceVersion ?? '',
    result: parseDeviceInfo(node, data),
  };
}

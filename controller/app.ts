/**
 * The controller, assembled (controller-runtime's manager, in small): every part is a
 * Runnable in a start group run by `runGroups`, with its probes on the metrics port.
 *
 * ```
 *  POST /v1/observations ──▶ EngineHost (every replica: hot standby) ──▶ transitions
 *  Node watch ──▶ NodeSync (known nodes, Ready overlay, clear) ─┘              │
 *  rules ConfigMap watch ──▶ engine.setRules                                   ▼
 *  Lease (elector) ──onStartedLeading──▶ LeaderSession: publisher, mirrors, Node status, Events
 * ```
 *
 * Start groups, in order (each starts once the one before is ready; they stop in reverse):
 * - `servers`: the metrics (probes) and observations ports;
 * - `events`: the Event recorder's flush on the way out (after all that records Events stopped);
 * - `caches`: the watches; ready once those that seeding reads have listed;
 * - `engine`: seeding (from the published document and the latched failures on Nodes) and
 *   the tick; ready once seeded; only then is the replica ready and accepts observations
 *   (before, 503);
 * - `election`: the elector (a replica that cannot publish yet must not hold the Lease);
 * - `leaderOnly`: the leader session's parts, started with each term and stopped when it
 *   ends. A replica that becomes leader merges the published document again before its
 *   first write (leader-session.ts).
 */
import * as k8s from '@kubernetes/client-node';
import type { Rules } from '../contracts/index.js';
import { createEngine, type NodeSeed, type ReloadableEngine } from '../core/engine/index.js';
import {
  AppError,
  createHttpServer,
  createLeaderOnly,
  describeError,
  type Clock,
  type HttpServer,
  type Logger,
  type Registry,
  type Runnable,
  type StartGroup,
} from '../platform/index.js';
import {
  createIssuerKeyCache,
  createLocalTokenCheck,
  createTokenReviewMetrics,
  createTokenReviewer,
  kubeIssuerKeys,
  kubeTokenReview,
} from '../platform/k8s/index.js';
import type { ControllerConfig } from './config.js';
import { EngineHost, type ObservationJournal } from './engine-host.js';
import {
  createKubeLeaseClient,
  createLeaderElector,
  type LeaderElector,
  type Leadership,
} from './leader-election/index.js';
import { LeaderSession } from './leader-session.js';
import { createControllerMetrics } from './metrics.js';
import { NodeSync } from './node-sync.js';
import {
  createEventRecorder,
  createKubeEventClient,
  createKubeNodeClient,
  createNodeStatusWriter,
  decodeLatched,
  type EventRecorder,
} from './node-status/index.js';
import { EXPLAIN_TOKEN_AUDIENCE, createExplainApp, explainUser, withExplain } from './explain/index.js';
import { createObservationsApp } from './observations/index.js';
import {
  createMindClusterClient,
  createMindClusterSource,
  mergeNodeProblems,
  mergeView,
} from './mindcluster/index.js';
import {
  createKubeDeviceTaintClient,
  createKubePodClient,
  createKubeRemediationNodeClient,
  createRemediationConfigWatch,
  createRemediationMetrics,
  createRemediator,
  drainNode,
  knownHolders,
  parseRemediationConfig,
  REMEDIATION_CONFIGMAP,
} from './remediation/index.js';
import {
  createKubeConfigMapClient,
  documentOf,
  type ConfigMapClient,
  type MirrorNamespaces,
} from './publisher/index.js';
import {
  createKubeWatchClients,
  createMirrorNamespaceWatch,
  createNodeWatch,
  createRulesConfigMapWatch,
  type MirrorNamespaceWatch,
  type NodeWatch,
} from './watch/index.js';

/** What the controller is built from (main.ts builds these from the command line). */
export interface ControllerDeps {
  config: ControllerConfig;
  identity: string;
  kubeConfig: k8s.KubeConfig;
  clock: Clock;
  log: Logger;
  registry: Registry;
  /** Rules in force when the rules ConfigMap is absent (the --rules file, or the defaults). */
  fallbackRules: Rules;
  journal?: ObservationJournal;
}

/** The assembled controller. */
export interface Controller {
  /** Its parts, in start order: run them with runGroups. */
  groups: StartGroup[];
  host: EngineHost;
  elector: LeaderElector;
  metricsServer: HttpServer;
  observationsServer: HttpServer;
}

/** Builds every part; run `groups` with runGroups. */
export function createController(deps: ControllerDeps): Controller {
  const { config, identity, kubeConfig, clock, registry } = deps;
  const log = deps.log;
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const configMaps = createKubeConfigMapClient(core);
  const engine: ReloadableEngine = createEngine(deps.fallbackRules);
  const host = new EngineHost(engine, clock, deps.journal);
  const events = createEventRecorder(
    { client: createKubeEventClient(core), clock, log: log.child({ part: 'events' }), registry },
    { component: 'npu-fault-controller', instance: identity },
  );
  let session: LeaderSession | undefined;
  let seeded = false;

  // Leader-only work: a session per term, its parts run while the term lasts.
  const leaderWork = createLeaderOnly({
    name: 'leader',
    log: log.child({ part: 'leader' }),
    async prepare(term, signal) {
      const current = new LeaderSession(term, sessionDeps, {
        namespace: config.namespace,
        statusName: config.publish.name,
        publish: config.publish,
        mirrors: {
          intervalMs: config.mirrors.intervalMs,
          heartbeatMs: config.mirrors.heartbeatMs,
          requestTimeoutMs: config.mirrors.requestTimeoutMs,
        },
      });
      session = current;
      const ended = (): void => {
        current.end();
        if (session === current) session = undefined;
      };
      try {
        return { runnables: await current.prepare(signal), ended };
      } catch (error) {
        ended();
        throw error;
      }
    },
  });

  // The Lease lives in the controller's namespace unless configured apart.
  const leaseNamespace = config.lease.namespace === 'ai-infra' ? config.namespace : config.lease.namespace;
  const elector = createLeaderElector(
    {
      client: createKubeLeaseClient(kubeConfig.makeApiClient(k8s.CoordinationV1Api)),
      clock,
      log: log.child({ part: 'leader-election' }),
      registry,
    },
    {
      identity,
      config: { ...config.lease, namespace: leaseNamespace },
      callbacks: { onStartedLeading: (term, signal) => leaderWork.lead(term, signal) },
    },
  );

  const watchClients = createKubeWatchClients(kubeConfig, { namespace: config.namespace });
  const watchDeps = { clock, log: log.child({ part: 'watch' }), registry };
  const nodeSync = new NodeSync(
    host,
    log.child({ part: 'nodes' }),
    {
      dirty: (node) => session?.markDirty(node),
      invalidClear: (node, message) => {
        log.warn({ node, message }, 'clear annotation refused');
        if (session?.leadership().leading)
          events.record(
            { apiVersion: 'v1', kind: 'Node', name: node, uid: node },
            'Warning',
            'ClearRefused',
            message,
          );
      },
    },
    () => clock.now(),
  );
  // The condition types the rules in force name: what the node watch keeps of each Node.
  let typesOf: { rules: Rules; types: ReadonlySet<string> } | undefined;
  const conditionTypesOf = (rules: Rules): ReadonlySet<string> => {
    if (typesOf?.rules !== rules)
      typesOf = { rules, types: new Set(rules.node_conditions.map((c) => c.type)) };
    return typesOf.types;
  };
  const nodes: NodeWatch = createNodeWatch(
    { ...watchDeps, client: watchClients.nodes },
    {
      config: {
        resourceNames: [...config.nodes.resourceNames],
        labelSelector: config.nodes.labelSelector,
        watchdogSeconds: config.nodes.watchdogSeconds,
      },
      conditionTypes: () => conditionTypesOf(host.rules()),
      callbacks: {
        onChange: (change) => {
          nodeSync.onChange(change);
          session?.wakeRemediation();
        },
      },
    },
  );
  const mirrorListeners = new Set<() => void>();
  const mirrorWatch: MirrorNamespaceWatch | undefined = config.mirrors.enabled
    ? createMirrorNamespaceWatch(
        { ...watchDeps, client: watchClients.mirrorNamespaces },
        { onChange: () => mirrorListeners.forEach((listener) => listener()) },
      )
    : undefined;
  const mirrorNamespaces: MirrorNamespaces | undefined = mirrorWatch && {
    namespaces: () => mirrorWatch.current(),
    onChange(listener) {
      mirrorListeners.add(listener);
      return () => mirrorListeners.delete(listener);
    },
  };
  const rules = createRulesConfigMapWatch(
    { ...watchDeps, client: watchClients.rulesConfigMap },
    {
      namespace: config.namespace,
      fallback: deps.fallbackRules,
      onRules: (next, source) => {
        host.setRules(next);
        log.info({ source }, 'rules in force');
      },
      onInvalid: (message) => {
        log.warn({ message }, 'rules edit refused; the rules in force stay');
        // Every replica refuses it; only the leader says so on the ConfigMap.
        if (!session?.leadership().leading) return;
        events.record(
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'npu-fault-rules', namespace: config.namespace },
          'Warning',
          'RulesRefused',
          message,
        );
      },
    },
  );

  const remediationSettings = createRemediationConfigWatch(
    { ...watchDeps, client: watchClients.remediationConfigMap },
    {
      namespace: config.namespace,
      fallback: parseRemediationConfig(config.remediation),
      onChange: () => session?.wakeRemediation(),
      onInvalid: (message) => {
        if (!session?.leadership().leading) return;
        events.record(
          { apiVersion: 'v1', kind: 'ConfigMap', name: REMEDIATION_CONFIGMAP, namespace: config.namespace },
          'Warning',
          'RemediationSettingsRefused',
          message,
        );
      },
    },
  );
  const remediationMetrics = createRemediationMetrics(registry);
  const remediationNodes = createKubeRemediationNodeClient(core);
  const pods = createKubePodClient(core);
  const remediationDeviceTaints = createKubeDeviceTaintClient(
    kubeConfig.makeApiClient(k8s.CustomObjectsApi),
    config.namespace,
    { rbac: kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api), clusterRole: config.deviceTaintsGrant },
  );

  const metrics = createControllerMetrics(registry, {
    census: () => engine.census(),
    lastDocument: () => session?.lastDocument(),
    retired: () => engine.stats().retired,
  });
  host.onTransitions((transitions, cause) => {
    metrics.transitions(transitions);
    session?.onTransitions(transitions, cause !== 'seed');
  });

  const nodeClient = createKubeNodeClient(core);
  const sessionDeps = {
    host,
    client: configMaps,
    clock,
    log: log.child({ part: 'leader' }),
    registry,
    metrics,
    events,
    mirrorNamespaces,
    elector,
    remediator: (leadership: () => Leadership, term: number) =>
      createRemediator(
        {
          nodes: () => nodes.values(),
          entry: (node) => (host.view(node).observed ? host.view(node).entry : undefined),
          config: () => remediationSettings.current().config,
          nodeClient: remediationNodes,
          configMaps,
          deviceTaints: remediationDeviceTaints,
          drain: (node, devices, drainConfig, signal) =>
            drainNode(
              { pods, clock, log: log.child({ part: 'drain', node }) },
              // Who holds the failed devices, from the engine's own entry (never budget-trimmed).
              { node, devices, holders: knownHolders(host.entry(node), devices), config: drainConfig },
              signal,
            ),
          events,
          clock,
          log: log.child({ part: 'remediation' }),
          metrics: remediationMetrics,
          leadership,
        },
        { identity, term, namespace: config.namespace },
      ),
    pendingClears: () => nodeSync.pendingClears(),
    clearedAt: (node: string) => nodeSync.clearedAt(node),
    nodeStatus: (leadership: () => Leadership) =>
      createNodeStatusWriter(
        {
          client: nodeClient,
          clock,
          log: log.child({ part: 'node-status' }),
          registry,
          leadership,
          facts: (name) => {
            const node = nodes.get(name);
            if (!node?.accelerator) return undefined;
            return {
              ...(node.npuHealthy ? { condition: node.npuHealthy } : {}),
              ...(node.latched !== undefined ? { latched: node.latched } : {}),
              ...(node.clear !== undefined ? { clear: node.clear } : {}),
            };
          },
          view: (name) => host.view(name),
          appliedClear: (name) => nodeSync.appliedClear(name),
          clearPublished: (name) => {
            const at = nodeSync.clearedAt(name);
            const written = session?.lastRenderedAt();
            return at !== undefined && written !== undefined && written > at;
          },
          nodes: () => nodeSync.acceleratorNodes(),
        },
        { resyncMs: config.nodes.statusResyncSeconds * 1000 },
      ),
  };

  // Seeding (once the caches group is ready): from the published document and the Nodes' latched records.
  let seededResolve: () => void = () => undefined;
  const whenSeeded = new Promise<void>((resolve) => (seededResolve = resolve));
  const seeder: Runnable = {
    name: 'seed',
    async start(signal) {
      while (!signal.aborted && !seeded) {
        try {
          const seeds = await readSeeds(configMaps, config, nodes, log, signal);
          const changes = host.seed(seeds);
          seeded = true;
          nodeSync.enableClears(nodes.values());
          seededResolve();
          log.info({ nodes: seeds.length, restored: changes.length }, 'seeded');
        } catch (error) {
          if (signal.aborted) break;
          log.warn({ err: describeError(error) }, 'seeding failed; retrying');
          await clock.sleep(2000, signal).catch(() => undefined);
        }
      }
      await aborted(signal);
    },
  };

  // MindCluster's device-info ConfigMaps (off by default): snapshots for agentless nodes, and a
  // merge into agent snapshots; started with the engine group, so only once seeded.
  const mindcluster = config.mindcluster.enabled
    ? createMindClusterSource(
        {
          client: createMindClusterClient(kubeConfig, config.mindcluster.namespace),
          // NodeD's node-info ConfigMaps (opt-in too: a Role in their own namespace).
          ...(config.mindcluster.nodeInfo.enabled
            ? { nodeInfoClient: createMindClusterClient(kubeConfig, config.mindcluster.nodeInfo.namespace) }
            : {}),
          clock,
          log: log.child({ part: 'mindcluster' }),
          registry,
          accept: (snapshots) => host.accept(snapshots, 'mindcluster'),
          isAgentNode: (node) => host.isAgentNode(node),
          // Only Nodes the controller knows: a ConfigMap names no node into being.
          isNode: (node) => nodes.get(node) !== undefined,
        },
        {
          periodMs: config.mindcluster.periodMs,
          maxSilenceMs: config.mindcluster.maxSilenceSeconds * 1000,
          maxNodes: config.mindcluster.maxNodes,
        },
      )
    : undefined;
  if (mindcluster)
    host.setMerge((snapshot) =>
      mergeNodeProblems(
        mergeView(snapshot, mindcluster.view(snapshot.node)),
        mindcluster.nodeProblems(snapshot.node),
      ),
    );

  const ticker: Runnable = {
    name: 'tick',
    async start(signal) {
      while (!signal.aborted) {
        await clock.sleep(config.tickMs, signal).catch(() => undefined);
        if (seeded && !signal.aborted) host.tick();
      }
    },
  };

  const tokenReview = kubeTokenReview(kubeConfig.makeApiClient(k8s.AuthenticationV1Api));
  // One copy of the apiserver's keys for both endpoints' checks (read once, refreshed once).
  const observationUsers =
    config.auth.allowedUsers.length > 0
      ? config.auth.allowedUsers
      : [`system:serviceaccount:${config.namespace}:npu-fault-function`];
  // The ingest function's token must carry the controllers' own audience (--auth-audiences);
  // one that cannot (garbage, another account or audience) is refused before any review.
  const reviewMetrics = createTokenReviewMetrics(registry, () => reviewer, 'controller');
  const issuerKeys = createIssuerKeyCache({
    fetchKeys: kubeIssuerKeys(kubeConfig),
    clock,
    onKeysRead: reviewMetrics.onKeysRead,
  });
  const reviewer = createTokenReviewer({
    review: tokenReview,
    clock,
    ttlMs: config.auth.cacheSeconds * 1000,
    audiences: config.auth.audiences,
    onOutcome: reviewMetrics.onOutcome,
    localCheck: createLocalTokenCheck({
      keys: issuerKeys,
      audiences: config.auth.audiences,
      subjects: observationUsers,
      clock,
    }),
  });
  // explain's callers send a token `npu-fault explain` minted for the explain ServiceAccount.
  const explainMetrics = createTokenReviewMetrics(registry, () => explainReviewer, 'controller_explain');
  const explainReviewer = createTokenReviewer({
    review: tokenReview,
    clock,
    ttlMs: config.auth.cacheSeconds * 1000,
    audiences: [EXPLAIN_TOKEN_AUDIENCE],
    maxConcurrent: 4,
    maxQueued: 16,
    onOutcome: explainMetrics.onOutcome,
    localCheck: createLocalTokenCheck({
      keys: issuerKeys,
      audiences: [EXPLAIN_TOKEN_AUDIENCE],
      subjects: [explainUser(config.namespace)],
      clock,
    }),
  });
  const observations = createObservationsApp(
    {
      authenticate: reviewer.authenticate,
      accept: (snapshots) => {
        if (!seeded)
          throw new AppError('not_ready', 'controller is starting (seeding its state)', { status: 503 });
        return host.accept(snapshots);
      },
      entryFor: (node) => host.entry(node),
      leadership: () => session?.leadership() ?? { leading: false },
      identity,
      leaderIdentity: () => elector.leader(),
      clock,
      log,
      registry,
    },
    // By default the ingest function's ServiceAccount in this controller's namespace.
    { allowedUsers: observationUsers },
  );

  const ready = {
    watches: () =>
      (nodes.synced() && rules.synced() && remediationSettings.synced() && (mirrorWatch?.synced() ?? true)) ||
      'watches not synced',
    seeded: () => seeded || 'not seeded yet',
  };
  const metricsServer = createHttpServer({
    name: 'metrics',
    ...(config.metricsListen.host ? { host: config.metricsListen.host } : {}),
    port: config.metricsListen.port,
    log,
    registry,
  });
  const observationsServer = createHttpServer({
    name: 'observations',
    ...(config.listen.host ? { host: config.listen.host } : {}),
    port: config.listen.port,
    log,
    // A function sends its micro-batches whole in milliseconds: 10 s is a body that is not coming.
    limits: { maxConnections: config.maxConnections, requestTimeoutMs: 10_000 },
    // Optional TLS on the function-to-controller hop (k8s/controller/tls).
    ...(config.tls.certFile && config.tls.keyFile
      ? { tls: { certFile: config.tls.certFile, keyFile: config.tls.keyFile } }
      : {}),
    // GET /v1/explain (npu-fault explain) shares the port; only the explain ServiceAccount's tokens.
    handler: withExplain(
      createExplainApp({
        authenticate: explainReviewer.authenticate,
        explain: (node, device, now) => (seeded ? engine.explain(node, device, now) : undefined),
        leadership: () => session?.leadership() ?? { leading: false },
        identity,
        leaderIdentity: () => elector.leader(),
        namespace: config.namespace,
        clock,
        log,
      }),
      observations,
    ),
  });
  for (const server of [metricsServer, observationsServer]) {
    for (const [name, check] of Object.entries(ready)) server.addReadyCheck(name, check);
  }

  const groups: StartGroup[] = [
    { name: 'servers', runnables: [metricsServer, observationsServer] },
    { name: 'events', runnables: [flushOnStop(events)] },
    {
      name: 'caches',
      runnables: [nodes, rules, remediationSettings, ...(mirrorWatch ? [mirrorWatch] : [])],
      // What seeding reads; self-healing must not act on the flags' settings while the
      // ConfigMap's are unread. The mirror namespaces are not waited for (readiness is).
      ready: async () => {
        await nodes.whenSynced();
        await rules.whenSynced();
        await remediationSettings.whenSynced();
      },
    },
    { name: 'engine', runnables: [seeder, ticker], ready: () => whenSeeded },
    // After seeding: its snapshots go to a seeded engine, like the observations port's.
    ...(mindcluster ? [{ name: 'sources', runnables: [mindcluster] }] : []),
    // A replica contends for the Lease only once seeded: one that cannot publish yet must not
    // hold it while a seeded standby waits.
    { name: 'election', runnables: [elector] },
    { name: 'leaderOnly', runnables: [leaderWork] },
  ];
  return { groups, host, elector, metricsServer, observationsServer };
}

/** Resolves when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Reads what the engine seeds from; throws when the status ConfigMap cannot be read. */
async function readSeeds(
  client: ConfigMapClient,
  config: ControllerConfig,
  nodes: NodeWatch,
  log: Logger,
  signal: AbortSignal,
): Promise<NodeSeed[]> {
  const stored = await client.get({ namespace: config.namespace, name: config.publish.name }, signal);
  const document = documentOf(stored?.data);
  if (stored && !document) log.warn('the status ConfigMap holds no valid 3.x document: not seeding from it');
  const seeds = new Map<string, NodeSeed>();
  for (const entry of Object.values(document?.nodes ?? {}))
    seeds.set(entry.node, { node: entry.node, entry });
  for (const node of nodes.acceleratorNodes()) {
    if (node.latched === undefined) continue;
    const decoded = decodeLatched(node.latched);
    if (decoded.error !== undefined) {
      log.warn({ node: node.name, message: decoded.error }, 'latched record refused');
      continue;
    }
    seeds.set(node.name, { ...seeds.get(node.name), node: node.name, latched: decoded.records });
  }
  return [...seeds.values()];
}

/** Waits for queued Events on the way out, at most `ms` (they are advice: never hold the exit). */
function flushOnStop(events: EventRecorder, ms = 3000): Runnable {
  return {
    name: 'events',
    async start(signal) {
      await aborted(signal);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([events.flush(), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
      clearTimeout(timer);
    },
  };
}

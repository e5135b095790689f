/**
 * The node agent, assembled: a collector behind the hardened probe, the sampling loop, the
 * kernel-log and device-node followers that trigger out-of-cycle snapshots, the sender that
 * pushes to the ingest function, and the node-local HTTP API (health, the node's published
 * status and its SSE stream, /healthz, /readyz, /metrics) on one port. With the simulator,
 * its fault-injection API shares the port.
 */
import { access, constants } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import type { DeviceHolderReading, Payload, Snapshot } from '../contracts/index.js';
import type { SimKind } from '../core/sim/index.js';
import { devicesIn } from '../core/normalise.js';
import { FAMILIES } from '../families/index.js';
import {
  createHeapTrimmer,
  createHttpServer,
  tokenFromFile,
  v8MinorCollection,
  type Clock,
  type HttpServer,
  type Logger,
  type Registry,
  type RequestHandler,
  type Runnable,
} from '../platform/index.js';
import { createCanary, type Canary } from './canary/index.js';
import {
  createPodResourcesClient,
  createPodResourcesReader,
  type PodResourcesReader,
} from './pod-resources/index.js';
import {
  createHdcCollector,
  createNpuSmiCollector,
  createNvidiaSmiCollector,
  type Collector,
} from './collectors/index.js';
import type { AgentConfig, CollectorKind } from './config.js';
import { createDeviceNodeWatcher, createKmsgFollower } from './events/index.js';
import { applyInventory, emptyInventory, scanInventory, type Inventory } from './inventory/index.js';
import { createFaultFeed, createLocalApp, type FaultFeed, type FaultState } from './local/index.js';
import {
  createExecTool,
  createProbe,
  createStreamTool,
  type ExecTool,
  type StreamTool,
} from './probe/index.js';
import { createSender, type Sender } from './push/index.js';
import { createSampler, type Sampler } from './sampler/index.js';
import { FaultBoard, SIM_FAULTS_PATH, loadSimNode, simDeviceHolders, simNodeCheck } from './sim/index.js';
import { createNodeCheckRunner, type NodeCheck, type NodeCheckRunner } from './node-checks/index.js';
import { createEdacCheck } from './node-checks/edac/index.js';
import { createFilesystemsCheck } from './node-checks/filesystems/index.js';
import { createKernelCheck, type KernelCheck } from './node-checks/kernel/index.js';
import { createLinksCheck } from './node-checks/links/index.js';
import { createNetworkCheck } from './node-checks/network/index.js';
import { createNvlinkCheck, nvlinkCheckWanted } from './node-checks/nvlink/index.js';
import { createDeviceMetrics, deviceTelemetry, type DeviceTelemetry } from './telemetry/index.js';

/** Device node names the watcher follows: each family's (`davinci<N>`, `nvidia<N>`). */
const DEVICE_NODE = new RegExp(`^(${FAMILIES.deviceNodes.map((prefix) => `${prefix}\\d+`).join('|')})$`);

/** What the agent is built from (cli/agent.ts builds these from the command line). */
export interface AgentDeps {
  config: AgentConfig;
  clock: Clock;
  log: Logger;
  registry: Registry;
  /** Runs tools; default createExecTool, each in its own process group. */
  exec?: ExecTool;
  /** Runs long-lived tools (the nvidia-smi loop); default node:child_process, in its own process group. */
  stream?: StreamTool;
  /** Outgoing HTTP (push, canary); default node:http for the push, global fetch for the canary. */
  fetch?: typeof fetch;
  /** Randomness of jitter and backoff; default Math.random. */
  random?: () => number;
  /** The heap trimmer's full collection; default V8's (platform/heap-trim.ts). */
  collectGarbage?: () => void;
  /** $PATH, for `--collector auto` finding hdc; default process.env.PATH. */
  path?: string;
}

/** The assembled agent. */
export interface NodeAgent {
  runnables: Runnable[];
  server: HttpServer;
  sampler: Sampler;
  sender: Sender;
  feed: FaultFeed;
  /** The collector in use (after `auto` chose). */
  collector: string;
  /** The simulated node's fault board, with `--collector sim`. */
  faults?: FaultBoard;
  /** The node checks that run (`sim` alone on a simulated node: it probes nothing real). */
  nodeChecks: readonly string[];
  /** The kubelet PodResources reader, when it runs (never on a simulated node). */
  podResources?: PodResourcesReader;
}

/** Builds every part (reads the PCI inventory first); run `runnables` with runAll. */
export async function createNodeAgent(deps: AgentDeps): Promise<NodeAgent> {
  const { config, clock, log, registry } = deps;
  // Tools that print tens of MB a run (stderr floods): their read buffers are freed as they go.
  // The drivers' library directories reach the tools' environment only, never this process's.
  const libraryPath = config.toolLibraryPath;
  const exec =
    deps.exec ?? createExecTool({ reclaim: v8MinorCollection(), ...(libraryPath ? { libraryPath } : {}) });
  const simulated = config.collector === 'sim';
  // The inventory is everything ever seen since the start: a device that drops off the bus
  // leaves sysfs too, and must then be reported absent rather than forgotten.
  const inventory = new InventoryUnion();
  if (config.inventory.enabled && !simulated) {
    inventory.add(
      await scanInventory({ sysPciDevices: config.inventory.sysPciDevices, dev: config.inventory.dev }),
    );
  }
  const kind = simulated
    ? 'sim'
    : await chooseCollector(config.collector, inventory.current, config, deps.path);
  log.info({ collector: kind, inventory: inventory.current }, 'collector chosen');

  let board: FaultBoard | undefined;
  let collector: Collector;
  let simNodeHandler: RequestHandler | undefined;
  // Sampler and sim API refer to each other (an injected XID enters as a kernel event).
  const samplerRef: { current?: Sampler } = {};
  if (simulated) {
    const { buildNode, createSimCollector, createSimApi, readFaultToken } = await loadSimNode();
    const tokenFile = config.sim.faultTokenFile;
    const faultToken = tokenFile === undefined ? undefined : await readFaultToken(tokenFile);
    if (faultToken === undefined)
      log.warn({ listen: config.listen }, 'simulated fault API without a token (loopback only)');
    const start = clock.now();
    const node = buildNode(config.node, config.sim.kind as SimKind, config.sim.seed);
    board = new FaultBoard(node, start);
    collector = createSimCollector(node, board, { seed: config.sim.seed, start }, { clock });
    simNodeHandler = createSimApi({
      node,
      board,
      onKernelEvent: (event) => samplerRef.current?.event(event),
      clock,
      log: log.child({ part: 'sim' }),
      ...(faultToken === undefined ? {} : { faultToken }),
    });
  } else {
    const collectorDeps = {
      exec,
      clock,
      log: log.child({ part: 'collector' }),
      stream: deps.stream ?? createStreamTool(libraryPath ? { libraryPath } : {}),
      periodMs: config.sampling.intervalMs,
      registry,
    };
    collector =
      kind === 'hdc'
        ? createHdcCollector(config.hdc, collectorDeps)
        : kind === 'npu-smi'
          ? createNpuSmiCollector(config.npuSmi, collectorDeps)
          : createNvidiaSmiCollector(config.nvidiaSmi, collectorDeps);
  }

  const probe = createProbe(
    collector,
    {
      timeoutMs: config.probe.timeoutMs,
      retries: config.probe.retries,
      cacheTtlMs: config.probe.cacheTtlSeconds * 1000,
      warmupMs: config.probe.warmupSeconds * 1000,
    },
    { clock, log: log.child({ part: 'probe' }), registry },
  );

  const feed = createFaultFeed({ clock, staleAfterMs: config.local.staleAfterSeconds * 1000 });
  const sender = createSender(
    {
      url: config.functionUrl,
      timeoutMs: config.push.timeoutMs,
      maxQueue: config.push.maxQueue,
      backoff: { initialMs: config.push.backoffInitialMs, maxMs: config.push.backoffMaxMs },
    },
    {
      // Read at every request (once a second): a refused token is replaced at the next retry.
      token: tokenFromFile(config.tokenFile, clock, 0),
      onAnswer: (answer) => {
        feed.update(
          { entry: answer.result.entry ?? null, leader: answer.leader, term: answer.term },
          new Date(clock.now()).toISOString(),
        );
      },
      clock,
      log: log.child({ part: 'push' }),
      registry,
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
      ...(deps.random ? { random: deps.random } : {}),
    },
  );

  // Which pods hold which device (docs/pod-resources.md): the kubelet's word, read every few
  // seconds; a simulated node reads no real socket.
  const podResources =
    config.podResources.enabled && !simulated
      ? createPodResourcesReader(config.podResources, {
          client: createPodResourcesClient(config.podResources),
          clock,
          log: log.child({ part: 'pod-resources' }),
          registry,
        })
      : undefined;

  // A simulated node's holders are what its fault API injects (`holder` faults).
  const holders: HoldersOf | undefined = board
    ? (payload) => simDeviceHolders(board, payload, clock.now())
    : podResources
      ? () => podResources.holders()
      : undefined;

  let canary: Canary | undefined;
  if (config.canary.url !== undefined) {
    canary = createCanary(
      { ...config.canary, url: config.canary.url },
      { clock, log: log.child({ part: 'canary' }), registry, ...(deps.fetch ? { fetch: deps.fetch } : {}) },
    );
  }

  // The node checks (docs/node-checks.md): their problems go with every snapshot, and a
  // change of them is sent at once.
  // A simulated node checks nothing real (no probe of this machine's network): only what
  // its fault API injects.
  const real = board
    ? undefined
    : realNodeChecks(config.nodeChecks, kind, config.events.kmsg, {
        clock,
        log: log.child({ part: 'node-checks' }),
        registry,
        exec,
      });
  const checks: NodeCheck[] = board ? [simNodeCheck(board)] : (real?.checks ?? []);
  const nodeChecks =
    checks.length === 0
      ? undefined
      : createNodeCheckRunner(checks, {
          clock,
          log: log.child({ part: 'node-checks' }),
          registry,
          onChange: () => samplerRef.current?.sampleNow(),
        });

  let lastSnapshot: Snapshot | null = null;
  // The last snapshot with the tool's own fresh readings (not a resend, not old readings
  // carrying new events, not a liveness sample), for the device series.
  let lastReadings: { snapshot: Snapshot; at: number } | null = null;
  let lastQueuedAt = Number.NaN;
  const sampler = createSampler(
    {
      node: config.node,
      collector: collector.name,
      probe,
      enqueue: (snapshot) => sender.enqueue(snapshot),
      ...(config.inventory.enabled && !simulated ? { complete: completeWith(inventory) } : {}),
      ...(canary || nodeChecks || holders ? { decorate: payloadDecorator(canary, nodeChecks, holders) } : {}),
      ...(board ? { muted: () => board.active('silence', clock.now()) } : {}),
      onSnapshot: (snapshot) => {
        lastSnapshot = snapshot;
        if (!snapshot.cached && snapshot.stale_readings !== true && devicesIn(snapshot.payload) > 0)
          lastReadings = { snapshot, at: clock.monotonic() };
        lastQueuedAt = clock.monotonic();
      },
      clock,
      log: log.child({ part: 'sampler' }),
      registry,
      ...(deps.random ? { random: deps.random } : {}),
    },
    {
      intervalMs: config.sampling.intervalMs,
      jitterMs: config.sampling.jitterMs,
      keepAliveMs: config.sampling.keepAliveMs,
    },
  );
  samplerRef.current = sampler;

  const eventSources: Runnable[] = [];
  if (!simulated && config.events.kmsg) {
    eventSources.push(
      createKmsgFollower(
        { path: config.events.kmsgPath },
        {
          onEvent: (event) => sampler.event(event),
          ...(real?.kernel ? { onNodeEvent: (event) => real.kernel?.record(event, clock.now()) } : {}),
          clock,
          log: log.child({ part: 'kmsg' }),
          registry,
        },
      ),
    );
  }
  if (!simulated && config.events.deviceNodes) {
    eventSources.push(
      createDeviceNodeWatcher(
        { dir: config.inventory.dev, pattern: DEVICE_NODE },
        { onEvent: (event) => sampler.event(event), log: log.child({ part: 'device-nodes' }), registry },
      ),
    );
  }

  // How long a snapshot counts as recent: for readiness, and for the readings on /metrics.
  const staleAfterMs =
    Math.max(5000, 3 * config.sampling.intervalMs) + config.probe.timeoutMs * (config.probe.retries + 1);
  // Each device's readings and published status on /metrics: one target per node, as the
  // exporters (npu-exporter, dcgm-exporter) users already scrape. Readings older than
  // staleAfterMs are left out (a failing tool's last numbers are not current).
  // The nine device metrics read the same rows: worked out once per new snapshot or answer.
  let rows: { snapshot: Snapshot | null; published: FaultState; devices: DeviceTelemetry[] } | undefined;
  createDeviceMetrics(registry, () => {
    const fresh = lastReadings !== null && clock.monotonic() - lastReadings.at <= staleAfterMs;
    const snapshot = fresh ? (lastReadings?.snapshot ?? null) : null;
    const published = feed.current();
    if (rows?.snapshot !== snapshot || rows.published !== published)
      rows = { snapshot, published, devices: deviceTelemetry(config.node, snapshot, published) };
    return rows.devices;
  });

  const localApp = createLocalApp(
    {
      feed,
      lastSample: () => lastSnapshot,
      pushStatus: () => sender.status(),
      toolStatus: () => probe.status(),
      node: config.node,
      clock,
      log: log.child({ part: 'local' }),
      registry,
    },
    { heartbeatMs: config.local.heartbeatSeconds * 1000 },
  );
  const handler: RequestHandler = simNodeHandler
    ? (req, res) =>
        (req.url ?? '').startsWith(SIM_FAULTS_PATH) ? simNodeHandler(req, res) : localApp(req, res)
    : localApp;
  const server = createHttpServer({
    name: 'http',
    ...(config.listen.host ? { host: config.listen.host } : {}),
    port: config.listen.port,
    log,
    registry,
    handler,
    limits: { maxConnections: config.local.maxConnections },
  });
  // Ready once a snapshot went out recently: a pod behind the node-local Service then gets a
  // live agent. Push failures do not make it unready (pods still get the last known status
  // and /v1/health says the push is failing).
  server.addReadyCheck(
    'sampling',
    () =>
      clock.monotonic() - lastQueuedAt <= staleAfterMs ||
      'no snapshot queued recently (tool failing or warming up)',
  );

  // On SIGTERM: sampling and event sources stop at once, the sender tries a last flush, and
  // the server ends its SSE streams first (open streams would otherwise hold its shutdown).
  const serving: Runnable = {
    name: server.name,
    start: (signal) => {
      signal.addEventListener(
        'abort',
        () => {
          localApp.close();
          feed.close();
        },
        { once: true },
      );
      return server.start(signal);
    },
  };
  // What the collector keeps running (the nvidia-smi loop) stops with the agent.
  const collecting: Runnable = {
    name: 'collector',
    start: (signal) =>
      new Promise<void>((resolve) => {
        const stop = (): void => {
          collector.close?.();
          resolve();
        };
        if (signal.aborted) stop();
        else signal.addEventListener('abort', stop, { once: true });
      }),
  };
  const runnables: Runnable[] = [
    serving,
    sampler,
    sender,
    collecting,
    ...eventSources,
    ...(canary ? [canary] : []),
    ...(nodeChecks ? [nodeChecks] : []),
    ...(podResources ? [podResources] : []),
    ...(config.heapTrimSeconds > 0
      ? [
          createHeapTrimmer(config.heapTrimSeconds * 1000, {
            clock,
            log,
            registry,
            component: 'agent',
            ...(deps.collectGarbage ? { collect: deps.collectGarbage } : {}),
          }),
        ]
      : []),
  ];
  return {
    runnables,
    server,
    sampler,
    sender,
    feed,
    collector: collector.name,
    ...(board ? { faults: board } : {}),
    nodeChecks: checks.map((c) => c.name),
    ...(podResources ? { podResources } : {}),
  };
}

/** The node checks the config turns on, for a real node; the kernel one is fed by the kernel-log follower. */
function realNodeChecks(
  config: AgentConfig['nodeChecks'],
  collector: string,
  kmsg: boolean,
  deps: { clock: Clock; log: Logger; registry: Registry; exec: ExecTool },
): { checks: NodeCheck[]; kernel?: KernelCheck } {
  const { network, links, nvlink, edac, kernel, filesystems } = config;
  const { log, registry } = deps;
  const checks: NodeCheck[] = [];
  if (network.enabled) checks.push(createNetworkCheck(network, { ...deps, env: process.env }));
  // hccn_tool and nvidia-smi need the drivers' libraries: the agent's own tool runner.
  if (links.enabled) checks.push(createLinksCheck(links, { log, registry, exec: deps.exec }));
  if (nvlinkCheckWanted(nvlink, collector))
    checks.push(createNvlinkCheck(nvlink, { log, registry, exec: deps.exec, clock: deps.clock }));
  if (edac.enabled) checks.push(createEdacCheck(edac, { log, registry }));
  if (filesystems.enabled) checks.push(createFilesystemsCheck(filesystems, { log, registry }));
  // Its input is the kernel-log follower's: without it, it would say nothing, ever.
  if (!kernel.enabled || !kmsg) {
    if (kernel.enabled) log.warn('the kernel check needs the kernel-log follower (events.kmsg): not run');
    return { checks };
  }
  const kernelCheck = createKernelCheck(kernel, { log: log.child({ check: 'kernel' }) });
  checks.push(kernelCheck);
  return { checks, kernel: kernelCheck };
}

/** The pods holding each device of a payload, or undefined when not known. */
type HoldersOf = (payload: Payload) => DeviceHolderReading[] | undefined;

/**
 * Adds what the agent knows beside the tool to every payload: the canary's verdict (the engine
 * raises inference-canary-failed), the node problems that hold (CONTRACT §1.8) and the pods
 * holding each device as of the last good read of the kubelet (§1.9; left out when not known).
 */
export function payloadDecorator(
  canary: Canary | undefined,
  nodeChecks: NodeCheckRunner | undefined,
  holdersOf: HoldersOf | undefined,
): (payload: Payload) => Payload {
  return (payload) => {
    const verdict = canary?.verdict();
    const problems = nodeChecks?.problems() ?? [];
    const holders = holdersOf?.(payload);
    if ((verdict === undefined || verdict.at === null) && problems.length === 0 && holders === undefined)
      return payload;
    return {
      ...payload,
      ...(verdict === undefined || verdict.at === null
        ? {}
        : { canary: { ok: verdict.ok, consecutive_failures: verdict.consecutiveFailures, at: verdict.at } }),
      ...(problems.length === 0 ? {} : { node_problems: [...problems] }),
      ...(holders === undefined ? {} : { device_holders: holders }),
    } as Payload;
  };
}

/**
 * Adds the installed devices the tool left out, as `present: false`; the last payload sent is
 * passed along so a GPU that drops out keeps the identity (uuid) it was last seen with.
 */
function completeWith(inventory: InventoryUnion): (payload: Payload) => Payload {
  let previous: Payload | undefined;
  return (payload) => {
    const completed = applyInventory(payload, inventory.current, previous);
    previous = completed;
    return completed;
  };
}

/** Devices seen since the start (union of scans). */
class InventoryUnion {
  current: Inventory = emptyInventory();
  add(scan: Inventory): void {
    const merge = (a: readonly string[], b: readonly string[]): string[] => [...new Set([...a, ...b])].sort();
    const next = emptyInventory();
    for (const vendor of FAMILIES.vendors) next[vendor] = merge(this.current[vendor], scan[vendor]);
    next.deviceNodes = merge(this.current.deviceNodes, scan.deviceNodes);
    this.current = next;
  }
}

/**
 * `auto`: the collectors of the first family (in registry order) installed on the node, its
 * vendor's PCI functions or its device nodes present (families/<id>: `inventory.collectors`):
 * nvidia-smi on NVIDIA nodes; on Ascend nodes hdc where it is installed, else npu-smi. Any
 * other choice is taken as given.
 */
async function chooseCollector(
  choice: CollectorKind,
  inventory: Inventory,
  config: AgentConfig,
  path = process.env.PATH ?? '',
): Promise<Exclude<CollectorKind, 'auto' | 'sim'>> {
  if (choice !== 'auto') {
    if (choice === 'sim') throw new Error('collector: sim is chosen before this');
    return choice;
  }
  const installed = FAMILIES.families.find(
    ({ inventory: family }) =>
      inventory[family.vendor].length > 0 ||
      inventory.deviceNodes.some((node) => node.startsWith(family.deviceNode)),
  );
  if (installed !== undefined) {
    const collectors = installed.inventory.collectors as readonly ToolCollector[];
    for (const collector of collectors.slice(0, -1))
      if (await onPath(commandOf(collector, config), path)) return collector;
    const last = collectors[collectors.length - 1];
    if (last !== undefined) return last;
  }
  throw new Error(
    `collector: auto found no ${FAMILIES.vendors.join(' or ')} accelerator in sysfs or /dev; give --collector hdc|npu-smi|nvidia-smi`,
  );
}

/** A collector that runs a tool. */
type ToolCollector = Exclude<CollectorKind, 'auto' | 'sim'>;

/** The command a tool collector runs, as configured. */
function commandOf(collector: ToolCollector, config: AgentConfig): string {
  if (collector === 'hdc') return config.hdc.command;
  if (collector === 'npu-smi') return config.npuSmi.command;
  return config.nvidiaSmi.command;
}

/** True when `command` is an executable file, itself or on `path`. */
async function onPath(command: string, path: string): Promise<boolean> {
  const candidates = isAbsolute(command)
    ? [command]
    : path
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, command));
  for (const file of candidates) {
    try {
      await access(file, constants.X_OK);
      return true;
    } catch {
      // not here
    }
  }
  return false;
}

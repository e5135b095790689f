/**
 * The network check: every round, one TCP connection attempt to the default route's gateway,
 * the API server and the configured targets (connector.ts says what counts as an answer);
 * `misses` missed in a row by any of them is `network-unreachable`. Any, not all: a node that
 * cannot reach its API server is unusable even while its gateway answers, and a gateway that
 * stopped answering is a failing NIC, cable or switch port however the API server is reached.
 *
 * The gateway is read from the routing table every round, so a changed default route is
 * followed. When the table loses its default route (an interface set down takes its routes
 * with it), the last gateway seen is still probed: its misses are the fault, not a reason to
 * stop looking.
 */
import { systemClock, type Clock, type Logger, type Registry } from '../../../platform/index.js';
import type { NodeCheck, NodeProblem } from '../check.js';
import type { NetworkCheckConfig } from './config.js';
import { createTcpConnector, type ConnectResult, type Connector } from './connector.js';
import { networkMetrics, type NetworkMetrics, type ProbeOutcome, type TableErrorReason } from './metrics.js';
import { ANSWERING, afterProbe, isUnreachable, unreachableMessage, type MissState } from './misses.js';
import { neighbourEntry } from './neighbour-table.js';
import { readHead as readHeadOfFile, type ReadHead } from './read-head.js';
import { parseRouteTable } from './route-table.js';
import {
  TARGET_KINDS,
  addressProblem,
  formatEndpoint,
  parseEndpoint,
  portProblem,
  type Target,
} from './targets.js';

/** The most of a table read each round (the kernel lists default routes first; ARP tables are small). */
const MAX_TABLE_BYTES = 1024 * 1024;

/** What the check needs from its surroundings; each has a real default. */
export interface NetworkCheckDeps {
  log: Logger;
  registry: Registry;
  /** Times attempts out and measures them (default the system clock). */
  clock?: Clock;
  /** Where KUBERNETES_SERVICE_HOST and _PORT are read, once (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** One connection attempt (default a real TCP connect). */
  connect?: Connector;
  /** Reads the routing and neighbour tables (default a bounded file read). */
  readHead?: ReadHead;
}

/** A gateway target also names the interface of its route (its neighbour entry is there). */
type ProbedTarget = Target & { readonly iface?: string };

/** One target's record: its run of misses and the attempt in flight, if any. */
interface TargetRecord {
  target: ProbedTarget;
  state: MissState;
  inFlight: Promise<void> | null;
}

/** Builds the network check (`name` network). With `enabled` false it never reads or probes anything. */
export function createNetworkCheck(config: NetworkCheckConfig, deps: NetworkCheckDeps): NodeCheck {
  const probe = new NetworkProbe(config, deps);
  return {
    name: 'network',
    intervalMs: config.intervalMs,
    run: (now, signal) => (config.enabled ? probe.round(now, signal) : Promise.resolve([])),
  };
}

class NetworkProbe {
  readonly #clock: Clock;
  readonly #connect: Connector;
  readonly #readHead: ReadHead;
  readonly #metrics: NetworkMetrics;
  readonly #log: Logger;
  /** The API server and the configured targets: fixed at the start. */
  readonly #fixed: ProbedTarget[] = [];
  readonly #records = new Map<string, TargetRecord>();
  /** The keys of the last round's targets: only they make problems. */
  #current = new Set<string>();
  /** The gateway last read from the routing table: probed while the table has none. */
  #gateway: ProbedTarget | null = null;
  /** Each table's failing spell (its reason), so one warning is logged per spell. */
  readonly #failing = new Map<string, TableErrorReason>();
  #started = false;

  constructor(
    private readonly config: NetworkCheckConfig,
    deps: NetworkCheckDeps,
  ) {
    this.#clock = deps.clock ?? systemClock;
    this.#connect = deps.connect ?? createTcpConnector(this.#clock);
    this.#readHead = deps.readHead ?? readHeadOfFile;
    this.#metrics = networkMetrics(deps.registry);
    this.#log = deps.log.child({ check: 'network' });
    if (config.enabled && config.apiServer) {
      const apiServer = apiServerTarget(deps.env ?? process.env);
      if ('target' in apiServer) this.#fixed.push(apiServer.target);
      else if (apiServer.problem === null)
        this.#log.info(
          'API server not probed: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset (not in a pod)',
        );
      else this.#log.warn(`API server not probed: ${apiServer.problem}`);
    }
    for (const text of config.targets) {
      const endpoint = parseEndpoint(text);
      // The schema refused bad ones; a config built by hand past it is told so, not probed.
      if ('error' in endpoint)
        this.#log.warn(`network.targets: "${text.slice(0, 80)}": ${endpoint.error}; not probed`);
      else this.#fixed.push({ kind: 'configured', ...endpoint });
    }
  }

  /** One round: every target probed (or its attempt in flight awaited), then the problems. */
  async round(now: number, signal: AbortSignal): Promise<readonly NodeProblem[]> {
    try {
      if (!this.#started) {
        this.#started = true;
        this.#log.info(
          {
            targets: this.#fixed.map(formatEndpoint),
            gateway: this.config.gateway,
            intervalMs: this.config.intervalMs,
          },
          'network probe started',
        );
      }
      const targets = [...(this.config.gateway ? await this.#gatewayTarget() : []), ...this.#fixed];
      this.#current = new Set(targets.map(keyOf));
      // A gateway the routing table no longer names is forgotten with its misses (once its
      // attempt settled, so a gateway named again never gets a second attempt at once).
      for (const [key, record] of this.#records)
        if (!this.#current.has(key) && !record.inFlight) this.#records.delete(key);
      for (const kind of TARGET_KINDS)
        this.#metrics.targets.set({ target: kind }, targets.filter((t) => t.kind === kind).length);
      await Promise.all(targets.map((target) => this.#probe(target, now, signal)));
    } catch (error) {
      // A fault of this code, not of what it reads: said once per round, never thrown at the runner.
      this.#log.error({ err: error }, 'network probe round failed');
    }
    return this.#problems(now);
  }

  #problems(now: number): NodeProblem[] {
    const unreachable = [...this.#records]
      .filter(([key, record]) => this.#current.has(key) && isUnreachable(record.state, this.config.misses))
      .map(([, record]) => record);
    this.#metrics.unreachable.set(unreachable.length);
    if (unreachable.length === 0) return [];
    return [{ reason: 'network-unreachable', message: unreachableMessage(unreachable, now) }];
  }

  /** Probes `target` unless an attempt to it is already in flight (then awaits that one). */
  #probe(target: ProbedTarget, now: number, signal: AbortSignal): Promise<void> {
    const key = keyOf(target);
    let record = this.#records.get(key);
    if (!record) {
      record = { target, state: ANSWERING, inFlight: null };
      this.#records.set(key, record);
    }
    record.target = target;
    if (record.inFlight) return record.inFlight;
    const current = record;
    current.inFlight = this.#attempt(current, now, signal).finally(() => {
      current.inFlight = null;
    });
    return current.inFlight;
  }

  async #attempt(record: TargetRecord, now: number, signal: AbortSignal): Promise<void> {
    const { target } = record;
    const started = this.#clock.monotonic();
    const result = await this.#connect(target, this.config.timeoutMs, signal);
    if (result.outcome === 'aborted' || signal.aborted) return;
    const outcome = await this.#judge(target, result);
    this.#metrics.duration.observe({ target: target.kind }, (this.#clock.monotonic() - started) / 1000);
    this.#metrics.probes.inc({ target: target.kind, outcome });
    const answered = outcome === 'connected' || outcome === 'refused' || outcome === 'neighbour';
    const wasUnreachable = isUnreachable(record.state, this.config.misses);
    record.state = afterProbe(
      record.state,
      answered ? { answered } : { answered, error: result.error ?? outcome },
      now,
    );
    const unreachable = isUnreachable(record.state, this.config.misses);
    const fields = { target: formatEndpoint(target), kind: target.kind, outcome };
    if (unreachable && !wasUnreachable)
      this.#log.warn(
        { ...fields, misses: record.state.consecutive, error: record.state.lastError },
        'network target unreachable',
      );
    else if (!unreachable && wasUnreachable) this.#log.info(fields, 'network target answers again');
    else if (!answered) this.#log.debug({ ...fields, error: result.error }, 'network probe missed');
  }

  /**
   * The outcome of an attempt. A gateway may drop a SYN to a closed port without a word, so a
   * miss at the gateway is taken back when its neighbour entry is complete right after the
   * attempt: the kernel resolved it, so the gateway answers on the link. A link that loses its
   * carrier flushes the entry at once; a gateway that dies with the link up keeps it until the
   * kernel's own probes fail (up to about a minute), which the API server probe bounds.
   */
  async #judge(target: ProbedTarget, result: ConnectResult): Promise<ProbeOutcome> {
    const outcome = result.outcome as Exclude<typeof result.outcome, 'aborted'>;
    const missed = outcome !== 'connected' && outcome !== 'refused';
    if (!missed || target.kind !== 'gateway' || !this.config.gatewayNeighbour) return outcome;
    return (await this.#neighbourComplete(target)) ? 'neighbour' : outcome;
  }

  async #neighbourComplete(target: ProbedTarget): Promise<boolean> {
    const path = this.config.neighbourTable;
    const read = await this.#readTable('neighbour', path);
    if (read === null) return false;
    const entry = neighbourEntry(read, target.host, target.iface);
    if (!entry.ok) {
      this.#tableFailed('neighbour', 'garbage', `${path}: ${entry.error}`);
      return false;
    }
    if (entry.skipped > 0)
      this.#tableFailed(
        'neighbour',
        'garbage',
        `${path}: ${entry.skipped} lines are not entries`,
        entry.skipped,
      );
    else this.#tableRecovered('neighbour', path);
    return entry.state === 'complete';
  }

  /** The default route's gateway now, else the last one seen; none when none ever was. */
  async #gatewayTarget(): Promise<ProbedTarget[]> {
    const path = this.config.routeTable;
    const text = await this.#readTable('route', path);
    const table = text === null ? null : parseRouteTable(text);
    if (table && !table.ok) this.#tableFailed('route', 'garbage', `${path}: ${table.error}`);
    else if (table?.ok) {
      const preferred = table.defaults[0];
      if (!preferred)
        this.#tableFailed('route', 'no-default-route', `${path}: no default route through a gateway`);
      else if (table.skipped > 0)
        this.#tableFailed(
          'route',
          'garbage',
          `${path}: ${table.skipped} lines are not routes (${table.firstSkipped})`,
          table.skipped,
        );
      else this.#tableRecovered('route', path);
      if (preferred) {
        if (this.#gateway?.host !== preferred.gateway)
          this.#log.info({ gateway: preferred.gateway, iface: preferred.iface }, 'default gateway');
        this.#gateway = {
          kind: 'gateway',
          host: preferred.gateway,
          port: this.config.gatewayPort,
          iface: preferred.iface,
        };
      }
    }
    return this.#gateway ? [this.#gateway] : [];
  }

  /** A table's text, or null when it cannot be read (counted and logged). */
  async #readTable(table: 'route' | 'neighbour', path: string): Promise<string | null> {
    try {
      return (await this.#readHead(path, MAX_TABLE_BYTES)).text;
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      this.#tableFailed(table, 'read', `cannot read ${path}${typeof code === 'string' ? ` (${code})` : ''}`);
      return null;
    }
  }

  #tableFailed(table: 'route' | 'neighbour', reason: TableErrorReason, message: string, count = 1): void {
    this.#metrics.tableErrors.inc({ table, reason }, count);
    if (this.#failing.get(table) === reason) return;
    this.#failing.set(table, reason);
    this.#log.warn({ table, reason }, message);
  }

  #tableRecovered(table: 'route' | 'neighbour', path: string): void {
    if (!this.#failing.delete(table)) return;
    this.#log.info({ table }, `${path} reads again`);
  }
}

/** Targets are told apart by kind and endpoint: a gateway changing address is a new target. */
function keyOf(target: Target): string {
  return `${target.kind} ${formatEndpoint(target)}`;
}

/**
 * The API server from the kubelet's variables: a target, none (`problem` null: unset, as
 * outside a pod), or why the values are unusable.
 */
export function apiServerTarget(
  env: Readonly<Record<string, string | undefined>>,
): { target: Target } | { problem: string | null } {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (host === undefined && port === undefined) return { problem: null };
  if (host === undefined || host === '')
    return { problem: 'KUBERNETES_SERVICE_HOST is unset while KUBERNETES_SERVICE_PORT is set' };
  if (port === undefined || port === '')
    return { problem: 'KUBERNETES_SERVICE_PORT is unset while KUBERNETES_SERVICE_HOST is set' };
  const hostProblem = addressProblem(host);
  if (hostProblem) return { problem: `KUBERNETES_SERVICE_HOST: ${hostProblem}` };
  const portText = portProblem(port);
  if (portText) return { problem: `KUBERNETES_SERVICE_PORT: ${portText}` };
  return { target: { kind: 'api-server', host, port: Number(port) } };
}

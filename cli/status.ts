/**
 * `npu-fault status [--watch] [--node X] [-o table|wide|json]`: the published status
 * (ConfigMap `<ns>/npu-fault-status-v3`, key `fault.json`, CONTRACT §5.2) for a person.
 *
 * - Nodes and devices worst first (failed > unknown > degraded > healthy), then by name,
 *   naturally (`node-2` before `node-10`). A node absent from `nodes` is healthy, unless the
 *   document left nodes out (an ingest outage, the byte budget): then it is unknown (§5.3,
 *   contracts/published-health.ts, the rules every reader follows).
 * - A summary line: the publisher, its term, the document's age, how many nodes need
 *   attention. Colour only when stdout is a terminal and NO_COLOR is unset.
 * - The document's major version is checked before anything else; a 3.x document is read
 *   for the fields this version knows (the rest is ignored, as the contract asks).
 * - Stale (timestamp older than --stale-after, default 10s): still printed, with a warning
 *   line on stderr; exit 0, or 1 with --fail-stale. A person looking at a stale document
 *   still wants to see it; a script that must not act on one asks for --fail-stale.
 * - `--watch` follows the ConfigMap through an API watch (get, then watch from its
 *   resourceVersion; 410 or a server-ended watch resume from a fresh read). On a terminal
 *   it clears the screen and redraws at every change and every second (ages move); on a
 *   pipe it appends a rendering only when the document changed beyond its heartbeat
 *   (`timestamp`), so a log of it shows changes, not one copy a second.
 *
 * Exit 0 shown, 1 missing / unknown major / invalid / the API refused (one line), 1 stale
 * with --fail-stale, 2 bad usage.
 */
import * as k8s from '@kubernetes/client-node';
import {
  entryHealth,
  FAULT_DATA_KEY,
  leavesNodesOut,
  nodeHealth,
  publishedDocumentSchema,
  PUBLISHED_VERSION,
  STATUS_SEVERITY,
  STATUS_CONFIGMAP_NAME,
  STATUS_NAMESPACE,
  type DeviceStatus,
  type PublishedDevice,
  type PublishedDocument,
  type PublishedNode,
} from '../contracts/index.js';
import { isGone, isNotFound } from '../platform/index.js';
import { configMapCollection, createKubeListWatchClient, resourceVersionOf } from '../platform/k8s/index.js';
import {
  booleanOption,
  excerpt,
  isExit,
  settleCommandLine,
  stringOption,
  UsageError,
  type CommandSpec,
  type ParsedArgs,
  parseDuration,
} from './args.js';
import { EXIT_DATA, type CliIO, type Subcommand } from './io.js';
import {
  callApi,
  describeKubeFailure,
  KUBE_OPTIONS,
  KubeCommandError,
  kubeSourceOf,
  loadOperatorKubeConfig,
  type KubeSource,
} from './kube.js';

/** The status command line. */
export const STATUS: CommandSpec = {
  name: 'status',
  synopsis: '[--watch] [--node <name>] [-o table|wide|json] [--namespace <ns>] [--stale-after <duration>]',
  summary: "table of the cluster's published status (worst first)",
  description: `Reads the published status (ConfigMap <namespace>/${STATUS_CONFIGMAP_NAME}, key ${FAULT_DATA_KEY})
and shows its nodes and devices, worst first (failed, unknown, degraded, healthy), with a
summary line naming the publisher, its term and the document's age. A node that is not
listed is healthy. --watch follows the ConfigMap and redraws at every change (on a
terminal; on a pipe it appends a rendering when the document changed beyond its heartbeat).

Needs get (and watch with --watch) on configmaps named ${STATUS_CONFIGMAP_NAME}: the
npu-fault-operator ClusterRole in k8s/operator/rbac.yaml. Also a kubectl plugin:
kubectl npu-fault status (bin/kubectl-npu_fault on PATH).`,
  options: {
    ...KUBE_OPTIONS,
    namespace: {
      type: 'string',
      value: '<ns>',
      description: `namespace of the status ConfigMap (default ${STATUS_NAMESPACE}, or a mirror namespace)`,
    },
    node: { type: 'string', value: '<name>', description: 'only this node' },
    output: {
      type: 'string',
      short: 'o',
      value: 'table|wide|json',
      description: 'table (default); wide adds reasons, temperature, power, ECC, link; json the document',
    },
    watch: { type: 'boolean', short: 'w', description: 'follow the ConfigMap and redraw at every change' },
    'stale-after': {
      type: 'string',
      value: '<duration>',
      description: 'a document older than this is stale: warned about (default 10s)',
    },
    'fail-stale': { type: 'boolean', description: 'exit 1 when the document is stale' },
  },
  positionals: { name: 'argument', min: 0, max: 0 },
  footer: `Examples:
  npu-fault status
  npu-fault status --node gpu-node-7 -o wide
  kubectl npu-fault status --watch

Exit codes: 0 shown (a stale document too, with a warning on stderr), 1 no status, an unknown
major version, an invalid document, the API refused, or stale with --fail-stale; 2 bad usage.`,
};

/** Default age after which a document is stale: the heartbeat is 1 s (CONTRACT §5.4). */
export const DEFAULT_STALE_AFTER_MS = 10_000;
/** How often a watch on a terminal redraws with nothing new (ages move). */
export const REDRAW_MS = 1000;
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export type StatusOutput = 'table' | 'wide' | 'json';

/** What the command line asked for. */
export interface StatusOptions {
  namespace: string;
  node: string | undefined;
  output: StatusOutput;
  watch: boolean;
  staleAfterMs: number;
  failStale: boolean;
}

function toOptions(args: ParsedArgs): StatusOptions & { kube: KubeSource } {
  const namespace = stringOption(args, 'namespace') ?? STATUS_NAMESPACE;
  if (namespace.length > 63 || !NAMESPACE_NAME.test(namespace))
    throw new UsageError(
      `--namespace '${excerpt(namespace)}' is not a namespace name (lower-case DNS label)`,
    );
  const node = stringOption(args, 'node');
  if (node !== undefined && (node.length > 253 || !NODE_NAME.test(node)))
    throw new UsageError(`--node '${excerpt(node)}' is not a Kubernetes node name (lower-case DNS name)`);
  const output = stringOption(args, 'output') ?? 'table';
  if (output !== 'table' && output !== 'wide' && output !== 'json')
    throw new UsageError(`-o must be table, wide or json, not '${excerpt(output)}'`);
  const staleAfter = stringOption(args, 'stale-after');
  return {
    namespace,
    node,
    output,
    watch: booleanOption(args, 'watch'),
    staleAfterMs:
      staleAfter === undefined ? DEFAULT_STALE_AFTER_MS : parseDuration(staleAfter, '--stale-after'),
    failStale: booleanOption(args, 'fail-stale'),
    kube: kubeSourceOf(args),
  };
}

// ---------------------------------------------------------------------------------------
// Decoding

/** A decoded document, or the one line saying why it cannot be shown. */
export type Decoded = { document: PublishedDocument } | { error: string };

/**
 * Reads the ConfigMap's data: the `fault.json` key, JSON, a known major version (checked
 * before the schema, so a 4.0 document is reported as such, not as a list of bad fields),
 * then the schema. A 3.x document is validated as 3.0: unknown fields are ignored.
 */
export function decodeStatus(data: Readonly<Record<string, string>> | undefined, where: string): Decoded {
  const text = data?.[FAULT_DATA_KEY];
  if (text === undefined) return { error: `${where} has no ${FAULT_DATA_KEY} key` };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { error: `${where}: ${FAULT_DATA_KEY} is not JSON (${(error as Error).message.split('\n')[0]})` };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return { error: `${where}: ${FAULT_DATA_KEY} is not a JSON object` };
  const version = (raw as { version?: unknown }).version;
  if (typeof version !== 'string')
    return { error: `${where}: ${FAULT_DATA_KEY}: version: missing or not a string` };
  const known = PUBLISHED_VERSION.split('.')[0] as string;
  const major = version.split('.')[0];
  if (major !== known)
    return {
      error:
        `${where}: unknown major version ${excerpt(version)} of ${FAULT_DATA_KEY}; this npu-fault reads ` +
        `${known}.x (upgrade npu-fault to read it)`,
    };
  const parsed = publishedDocumentSchema.safeParse({ ...raw, version: PUBLISHED_VERSION });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = formatPath(issue?.path ?? []);
    return { error: `${where}: ${FAULT_DATA_KEY}: ${field || '(document)'}: ${issue?.message ?? 'invalid'}` };
  }
  return { document: { ...parsed.data, version: version as typeof PUBLISHED_VERSION } };
}

/** `nodes.gpu-1.npus[0].status`. */
function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`))
    .join('');
}

// ---------------------------------------------------------------------------------------
// Ordering

/** Worst first. */
const rank = (status: DeviceStatus): number => -STATUS_SEVERITY[status];

/** `node-2` before `node-10`. */
export function compareNatural(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true }) || (a < b ? -1 : a > b ? 1 : 0);
}

/** A listed node's status (from its counts over every device, listed or not: contracts' entryHealth). */
export function nodeStatus(node: PublishedNode): DeviceStatus {
  return entryHealth(node);
}

/** Nodes worst first, then by name. */
export function sortNodes(nodes: readonly PublishedNode[]): PublishedNode[] {
  return [...nodes].sort(
    (a, b) => rank(nodeStatus(a)) - rank(nodeStatus(b)) || compareNatural(a.node, b.node),
  );
}

/** Devices worst first, then by id. */
export function sortDevices(devices: readonly PublishedDevice[]): PublishedDevice[] {
  return [...devices].sort((a, b) => rank(a.status) - rank(b.status) || compareNatural(a.id, b.id));
}

/** A node needs attention when a device is not healthy or its agent is not ok. */
function needsAttention(node: PublishedNode): boolean {
  return nodeStatus(node) !== 'healthy' || node.agent !== 'ok';
}

// ---------------------------------------------------------------------------------------
// Rendering

/** How to render: the clock, colour, what to show. */
export interface RenderOptions {
  output: StatusOutput;
  node: string | undefined;
  /** Milliseconds since the epoch. */
  now: number;
  color: boolean;
  staleAfterMs: number;
}

const COLORS: Readonly<Record<DeviceStatus | 'dim' | 'warn', string>> = {
  failed: '\x1b[31;1m',
  unknown: '\x1b[35m',
  degraded: '\x1b[33m',
  healthy: '\x1b[32m',
  dim: '\x1b[2m',
  warn: '\x1b[33;1m',
};
const RESET = '\x1b[0m';

/** `1.2 s`, `42 s`, `3 min`, `2 h`; a time in the future (clock skew) is `0 s`. */
export function formatAge(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** The document's age in milliseconds at `now`. */
export function documentAge(document: PublishedDocument, now: number): number {
  return now - Date.parse(document.timestamp);
}

/** True when the document is older than `staleAfterMs`. */
export function isStale(document: PublishedDocument, now: number, staleAfterMs: number): boolean {
  return documentAge(document, now) > staleAfterMs;
}

/** The stderr warning for a stale document. */
export function staleWarning(document: PublishedDocument, now: number, staleAfterMs: number): string {
  return (
    `warning: the status is stale: written ${formatAge(documentAge(document, now))} ago ` +
    `(over ${formatAge(staleAfterMs)}) by ${document.publisher.identity}; is a controller running and leading?`
  );
}

/** The summary line. */
export function summaryLine(document: PublishedDocument, now: number): string {
  const listed = Object.values(document.nodes);
  const attention = listed.filter(needsAttention).length;
  const { identity, term } = document.publisher;
  const nodes = `${document.node_count} node${document.node_count === 1 ? '' : 's'}`;
  const verb = attention === 1 ? 'needs' : 'need';
  return (
    `publisher ${identity} (term ${term}), written ${formatAge(documentAge(document, now))} ago; ` +
    `${attention} of ${nodes} ${verb} attention`
  );
}

/** Plain table cells padded to their columns; colour applied after padding (escapes have no width). */
function table(rows: readonly (readonly Cell[])[], color: boolean): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.text.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => {
          const padded = i === row.length - 1 ? cell.text : cell.text.padEnd(widths[i] ?? 0);
          return color && cell.color ? `${COLORS[cell.color]}${padded}${RESET}` : padded;
        })
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

interface Cell {
  text: string;
  color?: keyof typeof COLORS;
}

const cell = (text: string, color?: keyof typeof COLORS): Cell => (color ? { text, color } : { text });
const orDash = (value: number | string | null, unit = ''): string =>
  value === null ? '-' : `${value}${unit}`;

function nodeRows(nodes: readonly PublishedNode[], now: number): Cell[][] {
  const header = ['NODE', 'STATUS', 'AGENT', 'FAILED', 'UNKNOWN', 'DEGRADED', 'DEVICES', 'OBSERVED'].map(
    (h) => cell(h),
  );
  return [
    header,
    ...nodes.map((node) => {
      const status = nodeStatus(node);
      const { summary } = node;
      return [
        cell(node.node),
        cell(status, status),
        cell(node.agent, node.agent === 'ok' ? undefined : 'warn'),
        cell(String(summary.failed)),
        cell(String(summary.unknown)),
        cell(String(summary.degraded)),
        cell(String(summary.total)),
        cell(`${formatAge(now - Date.parse(node.observed_at))} ago`),
      ];
    }),
  ];
}

function deviceRows(nodes: readonly PublishedNode[], now: number, wide: boolean): Cell[][] {
  const header = ['NODE', 'DEVICE', 'STATUS', 'SINCE', 'REASON'];
  if (wide) header.push('REASONS', 'SIGNALS', 'TEMP', 'POWER', 'ECC', 'LINK', 'MODEL', 'KEY');
  const rows: Cell[][] = [header.map((h) => cell(h))];
  for (const node of nodes) {
    for (const device of sortDevices(node.npus)) {
      const row = [
        cell(node.node),
        cell(device.id),
        cell(device.status, device.status),
        cell(`${formatAge(now - Date.parse(device.since))} ago`),
        cell(device.reason ?? '-'),
      ];
      if (wide)
        row.push(
          cell(device.reasons.join(',') || '-'),
          cell(device.signals.join(',') || '-'),
          cell(orDash(device.temperature_c, '°C')),
          cell(orDash(device.power_w, 'W')),
          cell(orDash(device.ecc_errors)),
          cell(orDash(device.pcie_link_status), device.pcie_link_status === 'down' ? 'failed' : undefined),
          cell(device.model || '-'),
          cell(device.key),
        );
      rows.push(row);
    }
  }
  return rows;
}

/**
 * What `--node X` shows for a node absent from `nodes`: healthy, not yet observed, or unknown
 * when the document left nodes out (contracts' nodeHealth).
 */
export function unlistedNode(
  document: PublishedDocument,
  node: string,
): { node: string; listed: false; status: 'healthy' | 'unobserved' | 'unknown' } {
  const status = nodeHealth(document, node);
  return {
    node,
    listed: false,
    status: status === 'unobserved' || status === 'healthy' ? status : 'unknown',
  };
}

/** The text for stdout: the document (or one node of it) as the options ask. */
export function renderStatus(document: PublishedDocument, options: RenderOptions): string {
  const { now, color, node } = options;
  if (options.output === 'json') {
    if (node === undefined) return `${JSON.stringify(document, null, 2)}\n`;
    const entry = Object.hasOwn(document.nodes, node) ? document.nodes[node] : undefined;
    return `${JSON.stringify(entry ?? unlistedNode(document, node), null, 2)}\n`;
  }
  const paint = (text: string, key: keyof typeof COLORS): string =>
    color ? `${COLORS[key]}${text}${RESET}` : text;
  const lines: string[] = [];
  const summary = summaryLine(document, now);
  lines.push(
    `${isStale(document, now, options.staleAfterMs) ? paint(`${summary} (STALE)`, 'warn') : summary}\n`,
  );
  if (document.ingest_degraded)
    lines.push(
      `${paint(`ingest degraded: ${document.ingest_degraded.stale_nodes} nodes stale at once; those holding no failed or degraded device are not listed, and a node not listed is unknown`, 'warn')}\n`,
    );
  if (document.omitted_nodes !== undefined)
    lines.push(
      `${paint(`${document.omitted_nodes} nodes left out to fit the document's size budget; a node not listed is unknown`, 'warn')}\n`,
    );
  let nodes = sortNodes(Object.values(document.nodes));
  if (node !== undefined) {
    nodes = nodes.filter((entry) => entry.node === node);
    if (nodes.length === 0) {
      const unlisted = unlistedNode(document, node);
      lines.push(
        unlisted.status === 'unobserved'
          ? `node ${node}: no snapshot yet (unobserved): its status is not known\n`
          : unlisted.status === 'unknown'
            ? `node ${node}: ${paint('unknown', 'unknown')} (not listed, and the document left nodes out: it may be one of them)\n`
            : `node ${node}: ${paint('healthy', 'healthy')} (not listed: every device is healthy, or it has no accelerators)\n`,
      );
      return lines.join('');
    }
  } else {
    const { cluster_summary: s } = document;
    lines.push(
      `devices: ${s.total} total, ${s.failed} failed, ${s.unknown} unknown, ${s.degraded} degraded, ${s.healthy} healthy\n`,
    );
  }
  if (nodes.length === 0)
    lines.push(
      leavesNodesOut(document)
        ? `${paint('no node is listed, and the nodes left out are unknown', 'unknown')}\n`
        : `${paint('every observed node is healthy', 'healthy')}\n`,
    );
  else {
    lines.push('\n', table(nodeRows(nodes, now), color));
    const devices = deviceRows(nodes, now, options.output === 'wide');
    if (devices.length > 1) lines.push('\n', table(devices, color));
  }
  if (node === undefined && document.unobserved.length > 0)
    lines.push(
      `\nunobserved (no snapshot yet): ${[...document.unobserved].sort(compareNatural).join(', ')}\n`,
    );
  return lines.join('');
}

// ---------------------------------------------------------------------------------------
// Running

/** The ConfigMap as read: its data and resourceVersion; undefined when it does not exist. */
export interface StatusConfigMap {
  data: Readonly<Record<string, string>> | undefined;
  resourceVersion: string;
}

/** The API calls status makes; failures are thrown as KubeCommandError (one line). */
export interface StatusApi {
  read(): Promise<StatusConfigMap | undefined>;
  /**
   * Watches from `resourceVersion` and calls `onChange` with each new state (undefined:
   * deleted) until `signal` aborts; resumes by itself when the server ends the watch or the
   * resume point expired.
   */
  follow(
    resourceVersion: string,
    onChange: (configMap: StatusConfigMap | undefined) => void,
    signal: AbortSignal,
  ): Promise<void>;
}

/** What runStatus needs besides the options. */
export interface StatusDeps {
  api: StatusApi;
  io: CliIO;
  /** Milliseconds since the epoch. */
  now: () => number;
  /** Colour allowed: stdout is a terminal and NO_COLOR is unset. */
  color: boolean;
  /** Ends a watch (Ctrl-C). */
  signal: AbortSignal;
  /** Calls `fn` every `ms` until the returned function is called (the terminal redraw). */
  every: (ms: number, fn: () => void) => () => void;
}

const CLEAR_SCREEN = '\x1b[H\x1b[2J';

/** Shows the status once, or follows it with `options.watch`. */
export async function runStatus(options: StatusOptions, deps: StatusDeps): Promise<number> {
  const { api, io } = deps;
  const where = `${options.namespace}/${STATUS_CONFIGMAP_NAME}`;
  const missing = `no status published in ${where}: is the controller running?`;
  const fail = (line: string): number => {
    io.stderr(`npu-fault status: ${line}\n`);
    return EXIT_DATA;
  };
  const render = (document: PublishedDocument): string =>
    renderStatus(document, {
      output: options.output,
      node: options.node,
      now: deps.now(),
      color: deps.color,
      staleAfterMs: options.staleAfterMs,
    });
  let first: StatusConfigMap | undefined;
  try {
    first = await api.read();
  } catch (error) {
    if (error instanceof KubeCommandError) return fail(error.message);
    throw error;
  }
  if (!first) return fail(missing);
  const decoded = decodeStatus(first.data, where);
  if ('error' in decoded) return fail(decoded.error);
  if (!options.watch) {
    io.stdout(render(decoded.document));
    if (!isStale(decoded.document, deps.now(), options.staleAfterMs)) return 0;
    io.stderr(`npu-fault status: ${staleWarning(decoded.document, deps.now(), options.staleAfterMs)}\n`);
    return options.failStale ? EXIT_DATA : 0;
  }
  return await followStatus(options, deps, first, { where, missing, render });
}

async function followStatus(
  options: StatusOptions,
  deps: StatusDeps,
  first: StatusConfigMap,
  text: { where: string; missing: string; render: (document: PublishedDocument) => string },
): Promise<number> {
  const { io } = deps;
  const tty = io.isTTY;
  let current: Decoded = decodeStatus(first.data, text.where);
  let lastShown: string | undefined;
  let warnedStale = false;
  const show = (): void => {
    if ('error' in current) {
      const line = `npu-fault status: ${current.error}\n`;
      if (tty) io.stdout(`${CLEAR_SCREEN}${line}`);
      else if (line !== lastShown) io.stderr(line);
      lastShown = line;
      return;
    }
    const document = current.document;
    if (tty) io.stdout(`${CLEAR_SCREEN}${text.render(document)}`);
    else {
      // On a pipe: only changes beyond the heartbeat are appended.
      const key = JSON.stringify({ ...document, timestamp: '' });
      if (key !== lastShown) io.stdout(`${lastShown === undefined ? '' : '\n'}${text.render(document)}`);
      lastShown = key;
    }
    const stale = isStale(document, deps.now(), options.staleAfterMs);
    if (stale && !warnedStale)
      io.stderr(`npu-fault status: ${staleWarning(document, deps.now(), options.staleAfterMs)}\n`);
    warnedStale = stale;
  };
  show();
  const stopRedraw = tty ? deps.every(REDRAW_MS, show) : deps.every(REDRAW_MS, checkStaleOnly);
  function checkStaleOnly(): void {
    if ('error' in current) return;
    const stale = isStale(current.document, deps.now(), options.staleAfterMs);
    if (stale && !warnedStale)
      io.stderr(`npu-fault status: ${staleWarning(current.document, deps.now(), options.staleAfterMs)}\n`);
    warnedStale = stale;
  }
  try {
    await deps.api.follow(
      first.resourceVersion,
      (configMap) => {
        current = configMap ? decodeStatus(configMap.data, text.where) : { error: text.missing };
        show();
      },
      deps.signal,
    );
  } catch (error) {
    if (error instanceof KubeCommandError) {
      io.stderr(`npu-fault status: ${error.message}\n`);
      return EXIT_DATA;
    }
    throw error;
  } finally {
    stopRedraw();
  }
  return 0;
}

/** How long one watch request may last before the server ends it (it is then resumed). */
const WATCH_SECONDS = 300;

/** StatusApi on client-node: get, and a watch by name (what the operator role grants). */
export function kubeStatusApi(kubeConfig: k8s.KubeConfig, namespace: string): StatusApi {
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const server = kubeConfig.getCurrentCluster()?.server;
  const name = STATUS_CONFIGMAP_NAME;
  const attempt = { resource: 'configmaps', name, namespace };
  const read = async (): Promise<StatusConfigMap | undefined> => {
    try {
      const found = await callApi(
        { verb: 'get', ...attempt },
        () => core.readNamespacedConfigMap({ name, namespace }),
        { ...(server ? { server } : {}), keep: isNotFound },
      );
      return { data: found.data, resourceVersion: found.metadata?.resourceVersion ?? '' };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  return {
    read,
    async follow(resourceVersion, onChange, signal) {
      const client = createKubeListWatchClient(kubeConfig, configMapCollection(core, namespace, name));
      let version = resourceVersion;
      while (!signal.aborted) {
        let expired = false;
        let failure: unknown;
        const stop = new AbortController();
        const relay = (): void => stop.abort();
        signal.addEventListener('abort', relay, { once: true });
        try {
          await callApi(
            { verb: 'watch', ...attempt },
            () =>
              client.watch(
                {
                  resourceVersion: version,
                  timeoutSeconds: WATCH_SECONDS,
                  allowWatchBookmarks: true,
                  idleTimeoutMs: (WATCH_SECONDS + 30) * 1000,
                },
                (event) => {
                  if (expired || failure !== undefined) return;
                  if (event.type === 'ERROR') {
                    if (isGone(event.object)) expired = true;
                    else failure = event.object;
                    stop.abort();
                    return;
                  }
                  version = resourceVersionOf(event.object) ?? version;
                  if (event.type === 'BOOKMARK') return;
                  if (event.type === 'DELETED') onChange(undefined);
                  else
                    onChange({
                      data: (event.object as { data?: Record<string, string> }).data,
                      resourceVersion: version,
                    });
                },
                stop.signal,
              ),
            { ...(server ? { server } : {}), keep: isGone },
          );
        } catch (error) {
          if (!isGone(error)) throw error;
          expired = true;
        } finally {
          signal.removeEventListener('abort', relay);
        }
        if (failure !== undefined)
          throw new KubeCommandError(describeKubeFailure(failure, { verb: 'watch', ...attempt }, server));
        if (expired && !signal.aborted) {
          // 410: the resume point is gone; read afresh (a change in between is shown) and go on.
          const fresh = await read();
          onChange(fresh);
          version = fresh?.resourceVersion ?? '';
        }
      }
    },
  };
}

/** `npu-fault status`: see the module comment. */
export const status: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  const options = settleCommandLine(STATUS, args, io, toOptions);
  if (isExit(options)) return options.exit;
  const kubeConfig = loadOperatorKubeConfig('status', options.kube, io);
  if (isExit(kubeConfig)) return kubeConfig.exit;
  const interrupt = new AbortController();
  const onSignal = (): void => interrupt.abort();
  // Ctrl-C ends a watch with exit 0 rather than killing the process mid-write.
  if (options.watch) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  try {
    return await runStatus(options, {
      api: kubeStatusApi(kubeConfig, options.namespace),
      io,
      now: () => Date.now(),
      color: io.isTTY && !process.env.NO_COLOR,
      signal: interrupt.signal,
      every: (ms, fn) => {
        const timer = setInterval(fn, ms);
        return () => clearInterval(timer);
      },
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
};

/**
 * `npu-fault remediation reset|status`: the operator's side of self-healing.
 *
 * - `reset` closes an open circuit breaker (ConfigMap `<namespace>/npu-fault-remediation-state`,
 *   key `breaker.json`): the nodes counted when it opened are acknowledged (they may now be
 *   remediated and no longer count toward the limit). The write is an update carrying the
 *   resourceVersion read, so a concurrent change by the controller is a 409 and the reset is
 *   redone from a fresh read. An invalid record is refused (one line naming the field) unless
 *   `--force` replaces it with a closed breaker.
 * - `status` shows the breaker and every Node carrying `npu-fault.io/remediation` (a node the
 *   controller cordoned) or `npu-fault.io/maintenance` (remediation suspended).
 *
 * Exit 0 done, 1 the cluster refused or the record is invalid, 2 bad usage.
 */
import * as k8s from '@kubernetes/client-node';
import {
  BREAKER_CONFIGMAP,
  BREAKER_KEY,
  CLOSED_BREAKER,
  MAINTENANCE_ANNOTATION,
  REMEDIATION_ANNOTATION,
  decodeBreaker,
  decodeNodeRecord,
  encodeBreaker,
  resetBreaker,
  type BreakerState,
} from '../contracts/index.js';
import { isConflict, isNotFound } from '../platform/index.js';
import { requestOptions } from '../platform/k8s/index.js';
import {
  booleanOption,
  commandHelp,
  excerpt,
  isExit,
  settleCommandLine,
  stringOption,
  UsageError,
  type CommandSpec,
  type ParsedArgs,
} from './args.js';
import { EXIT_DATA, EXIT_USAGE, type CliIO, type Subcommand } from './io.js';
import {
  callApi,
  KUBE_OPTIONS,
  KubeCommandError,
  kubeSourceOf,
  kubeUserName,
  loadOperatorKubeConfig,
  type KubeSource,
} from './kube.js';

/** The namespace the controller (and so the breaker) lives in by default. */
export const DEFAULT_NAMESPACE = 'ai-infra';
/** Attempts of the read-reset-update before giving up on a record that keeps changing. */
export const RESET_ATTEMPTS = 5;
/** Nodes named in a one-line message before the rest are counted. */
const NAMES_SHOWN = 20;
const MAX_BY = 253;
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const NAMESPACE_OPTION = {
  namespace: {
    type: 'string',
    value: '<name>',
    description: `the controller's namespace, where the breaker's ConfigMap lives (default ${DEFAULT_NAMESPACE})`,
  },
} as const;

/** The `remediation` command group (its own help lists the subcommands). */
export const REMEDIATION: CommandSpec = {
  name: 'remediation',
  synopsis: 'reset|status [options]',
  summary: 'self-healing: close the circuit breaker (reset), show it and the remediated nodes (status)',
  description: `Subcommands:
  reset   close an open circuit breaker, acknowledging the nodes it counted
  status  the breaker, and every node the controller cordoned or that is in maintenance

Run 'npu-fault remediation <subcommand> --help' for details.`,
  options: {},
  positionals: { name: 'subcommand', min: 1, max: 1 },
};

/** `remediation reset`. */
export const REMEDIATION_RESET: CommandSpec = {
  name: 'remediation reset',
  synopsis: '[--namespace <name>] [--by <name>] [--force]',
  summary: 'close an open self-healing circuit breaker',
  description: `Closes the self-healing circuit breaker (ConfigMap <namespace>/${BREAKER_CONFIGMAP},
key ${BREAKER_KEY}). The nodes it counted when it opened are acknowledged: they may be
cordoned and drained again and no longer count toward the limit, so it opens again only
for nodes beyond those. A breaker that is closed (or was never opened) is left alone.

Needs get and update on that ConfigMap: the npu-fault-operator Role in
k8s/operator/rbac.yaml.`,
  options: {
    ...KUBE_OPTIONS,
    ...NAMESPACE_OPTION,
    by: {
      type: 'string',
      value: '<name>',
      description: 'who closes it, recorded as closedBy (default: the kubeconfig user, else $USER)',
    },
    force: {
      type: 'boolean',
      description: 'replace an invalid breaker record with a closed breaker instead of refusing',
    },
  },
  positionals: { name: 'argument', min: 0, max: 0 },
  footer:
    'Exit codes: 0 closed (or already closed), 1 the cluster refused or the record is invalid, 2 bad usage.',
};

/** `remediation status`. */
export const REMEDIATION_STATUS: CommandSpec = {
  name: 'remediation status',
  synopsis: '[--namespace <name>] [-o table|json]',
  summary: 'show the circuit breaker and the remediated nodes',
  description: `Shows the self-healing circuit breaker and every node carrying ${REMEDIATION_ANNOTATION}
(cordoned by the controller: phase, since, reason) or ${MAINTENANCE_ANNOTATION}
(remediation suspended). An invalid record is shown as "invalid" with what is wrong.

Needs get on the breaker's ConfigMap and list on nodes: the npu-fault-operator roles in
k8s/operator/rbac.yaml.`,
  options: {
    ...KUBE_OPTIONS,
    ...NAMESPACE_OPTION,
    output: { type: 'string', short: 'o', value: 'table|json', description: 'output format (default table)' },
  },
  positionals: { name: 'argument', min: 0, max: 0 },
  footer: 'Exit codes: 0 shown, 1 the cluster refused, 2 bad usage.',
};

// ---------------------------------------------------------------------------------------
// The API calls, behind an interface (a fake in the unit tests).

/** A Node as status shows it. */
export interface NodeSummary {
  name: string;
  annotations: Readonly<Record<string, string>>;
  unschedulable: boolean;
}

/**
 * The API calls remediation makes. Failures other than the ones named are thrown as
 * KubeCommandError, already one line.
 */
export interface RemediationApi {
  /** The breaker's ConfigMap; undefined when it does not exist (the breaker never opened). */
  readBreaker(): Promise<k8s.V1ConfigMap | undefined>;
  /** Replaces it (its metadata.resourceVersion is a precondition: a 409 is thrown as the API's error). */
  replaceBreaker(configMap: k8s.V1ConfigMap): Promise<void>;
  /** Nodes carrying the remediation or the maintenance annotation. */
  listRemediationNodes(): Promise<NodeSummary[]>;
}

/** RemediationApi on client-node, for the breaker in `namespace`. */
export function kubeRemediationApi(kubeConfig: k8s.KubeConfig, namespace: string): RemediationApi {
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const server = kubeConfig.getCurrentCluster()?.server;
  const at = server ? { server } : {};
  const breaker = { resource: 'configmaps', name: BREAKER_CONFIGMAP, namespace };
  return {
    async readBreaker() {
      try {
        return await callApi(
          { verb: 'get', ...breaker },
          () => core.readNamespacedConfigMap({ name: BREAKER_CONFIGMAP, namespace }),
          { ...at, keep: isNotFound },
        );
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    async replaceBreaker(body) {
      await callApi(
        { verb: 'update', ...breaker },
        () => core.replaceNamespacedConfigMap({ name: BREAKER_CONFIGMAP, namespace, body }),
        { ...at, keep: isConflict },
      );
    },
    async listRemediationNodes() {
      const found: NodeSummary[] = [];
      let next: string | undefined;
      do {
        // Paged, so a large fleet is never held whole; only the annotated nodes are kept.
        const page = await callApi({ verb: 'list', resource: 'nodes' }, () =>
          core.listNode({ limit: 500, _continue: next }, requestOptions({})),
        );
        for (const node of page.items) {
          const annotations = node.metadata?.annotations ?? {};
          if (
            annotations[REMEDIATION_ANNOTATION] === undefined &&
            annotations[MAINTENANCE_ANNOTATION] === undefined
          )
            continue;
          found.push({
            name: node.metadata?.name ?? '',
            annotations,
            unschedulable: node.spec?.unschedulable === true,
          });
        }
        next = page.metadata?._continue || undefined;
      } while (next !== undefined);
      return found;
    },
  };
}

// ---------------------------------------------------------------------------------------
// reset

/** What a reset does to the record it read. */
export type ResetPlan =
  | { kind: 'closed'; state: BreakerState }
  | { kind: 'reset'; before: BreakerState; after: BreakerState }
  | { kind: 'invalid'; error: string }
  | { kind: 'forced'; error: string; after: BreakerState };

/** The reset of `text` (the `breaker.json` value; undefined: absent, so closed). */
export function planReset(
  text: string | undefined,
  options: { now: string; by: string; force: boolean },
): ResetPlan {
  const decoded = decodeBreaker(text);
  if (decoded.error !== undefined) {
    if (!options.force) return { kind: 'invalid', error: decoded.error };
    return {
      kind: 'forced',
      error: decoded.error,
      after: resetBreaker(CLOSED_BREAKER, options.now, options.by),
    };
  }
  const state = decoded.value;
  if (state.state === 'closed') return { kind: 'closed', state };
  return { kind: 'reset', before: state, after: resetBreaker(state, options.now, options.by) };
}

/** `a, b, c`, or the first names and `… (+N more)`. */
export function nameList(names: readonly string[], shown = NAMES_SHOWN): string {
  const head = names.slice(0, shown).join(', ');
  return names.length > shown ? `${head}, … (+${names.length - shown} more)` : head;
}

/** One line saying what a plan did (or found). */
export function describeReset(plan: Exclude<ResetPlan, { kind: 'invalid' }>): string {
  if (plan.kind === 'forced')
    return `breaker closed by ${plan.after.closedBy ?? '?'}: the invalid record was replaced (${plan.error})`;
  if (plan.kind === 'closed') {
    const last = plan.state.closedAt
      ? ` (last closed ${plan.state.closedAt} by ${plan.state.closedBy ?? '?'})`
      : plan.state.openedAt
        ? ''
        : ' (it has never opened)';
    return `breaker is already closed${last}; nothing to do`;
  }
  const nodes = [...plan.before.unhealthy].sort(naturalOrder);
  const acknowledged =
    nodes.length === 0
      ? 'no nodes to acknowledge'
      : `${nodes.length} node${nodes.length === 1 ? '' : 's'} acknowledged: ${nameList(nodes)}`;
  return `breaker closed by ${plan.after.closedBy ?? '?'}; ${acknowledged}`;
}

/** What reset was asked to do. */
export interface ResetOptions {
  namespace: string;
  by: string;
  force: boolean;
}

/** Closes the breaker; returns the exit code. */
export async function runReset(
  options: ResetOptions,
  deps: { api: RemediationApi; io: CliIO; now: () => string },
): Promise<number> {
  const { api, io } = deps;
  const fail = (line: string): number => {
    io.stderr(`npu-fault remediation reset: ${line}\n`);
    return EXIT_DATA;
  };
  const where = `${options.namespace}/${BREAKER_CONFIGMAP}`;
  try {
    for (let attempt = 0; attempt < RESET_ATTEMPTS; attempt++) {
      const configMap = await api.readBreaker();
      if (!configMap) {
        io.stdout(`breaker is closed: ${where} does not exist (it has never opened); nothing to do\n`);
        return 0;
      }
      const plan = planReset(configMap.data?.[BREAKER_KEY], { ...options, now: deps.now() });
      if (plan.kind === 'invalid')
        return fail(`${options.namespace}/${plan.error}; --force replaces it with a closed breaker`);
      if (plan.kind === 'closed') {
        io.stdout(`${describeReset(plan)}\n`);
        return 0;
      }
      try {
        // managedFields left out: the server keeps them (sent back, they would be taken as a rewrite).
        const { managedFields: _managed, ...metadata } = configMap.metadata ?? {};
        await api.replaceBreaker({
          ...configMap,
          metadata,
          data: { ...configMap.data, [BREAKER_KEY]: encodeBreaker(plan.after) },
        });
      } catch (error) {
        if (isConflict(error)) continue; // changed since read (the controller): redo it from a fresh read
        throw error;
      }
      io.stdout(`${describeReset(plan)}\n`);
      return 0;
    }
  } catch (error) {
    if (error instanceof KubeCommandError) return fail(error.message);
    throw error;
  }
  return fail(`${where} kept changing (${RESET_ATTEMPTS} conflicting updates); try again`);
}

// ---------------------------------------------------------------------------------------
// status

/** A node in the status report. */
export interface NodeReport {
  name: string;
  /** The record's phase; `invalid` when it cannot be read; null without a record. */
  phase: string | null;
  since: string | null;
  reason: string | null;
  /** The maintenance annotation's value; null when absent. */
  maintenance: string | null;
  unschedulable: boolean;
  /** What is wrong with the record, when `phase` is `invalid`. */
  error?: string;
}

/** The breaker in the status report. */
export type BreakerReport = { configMap: string; exists: boolean } & (
  BreakerState | { state: 'invalid'; error: string }
);

/** What status shows. */
export interface StatusReport {
  breaker: BreakerReport;
  nodes: NodeReport[];
}

/** Compares node names naturally (`n2` before `n10`). */
function naturalOrder(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

/** The status of the breaker's ConfigMap (undefined: absent) and the annotated nodes. */
export function buildStatus(
  where: string,
  configMap: k8s.V1ConfigMap | undefined,
  nodes: readonly NodeSummary[],
): StatusReport {
  const decoded = decodeBreaker(configMap?.data?.[BREAKER_KEY]);
  const breaker: BreakerReport =
    decoded.error !== undefined
      ? { configMap: where, exists: true, state: 'invalid', error: decoded.error }
      : { configMap: where, exists: configMap !== undefined, ...decoded.value };
  const reports = nodes.map((node): NodeReport => {
    const maintenance = node.annotations[MAINTENANCE_ANNOTATION] ?? null;
    const base = { name: node.name, maintenance, unschedulable: node.unschedulable };
    const text = node.annotations[REMEDIATION_ANNOTATION];
    if (text === undefined) return { ...base, phase: null, since: null, reason: null };
    const record = decodeNodeRecord(text);
    if (record.error !== undefined)
      return { ...base, phase: 'invalid', since: null, reason: null, error: record.error };
    return { ...base, phase: record.value.phase, since: record.value.since, reason: record.value.reason };
  });
  return { breaker, nodes: reports.sort((a, b) => naturalOrder(a.name, b.name)) };
}

/** The breaker in a few lines. */
function breakerLines(breaker: BreakerReport): string[] {
  const head = `Breaker (${breaker.configMap}): `;
  if (breaker.state === 'invalid') return [`${head}invalid: ${breaker.error}`];
  if (breaker.state === 'closed') {
    const detail = breaker.closedAt
      ? `, last closed ${breaker.closedAt} by ${breaker.closedBy ?? '?'}`
      : breaker.openedAt
        ? ''
        : ', never opened';
    const lines = [`${head}closed${detail}`];
    if (breaker.acknowledged.length > 0) lines.push(`  acknowledged: ${nameList(breaker.acknowledged)}`);
    return lines;
  }
  return [
    `${head}OPEN since ${breaker.openedAt ?? '?'}: ${breaker.reason ?? '(no reason recorded)'}`,
    `  unhealthy: ${breaker.unhealthy.length === 0 ? '-' : nameList(breaker.unhealthy)}`,
    `  acknowledged: ${breaker.acknowledged.length === 0 ? '-' : nameList(breaker.acknowledged)}`,
    `  new cordons and drains are stopped; 'npu-fault remediation reset' closes it`,
  ];
}

/** The report as a table. */
export function formatStatusTable(report: StatusReport): string {
  const lines = breakerLines(report.breaker);
  lines.push('');
  if (report.nodes.length === 0) {
    lines.push(`No node carries ${REMEDIATION_ANNOTATION} or ${MAINTENANCE_ANNOTATION}.`);
    return `${lines.join('\n')}\n`;
  }
  const header = ['NODE', 'PHASE', 'SINCE', 'CORDONED', 'MAINTENANCE', 'REASON'];
  const rows = report.nodes.map((node) => [
    node.name,
    node.phase ?? '-',
    node.since ?? '-',
    node.unschedulable ? 'yes' : 'no',
    node.maintenance === null ? '-' : node.maintenance === '' ? 'yes' : oneLine(node.maintenance, 40),
    oneLine(node.error ?? node.reason ?? '-', 120),
  ]);
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const render = (cells: string[]): string =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  lines.push(render(header), ...rows.map(render));
  return `${lines.join('\n')}\n`;
}

/** A cluster-supplied value for one table cell: one line, bounded. */
function oneLine(text: string, max: number): string {
  // eslint-disable-next-line no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Shows the status; returns the exit code. */
export async function runStatus(
  options: { namespace: string; output: 'table' | 'json' },
  deps: { api: RemediationApi; io: CliIO },
): Promise<number> {
  let report: StatusReport;
  try {
    const [configMap, nodes] = await Promise.all([deps.api.readBreaker(), deps.api.listRemediationNodes()]);
    report = buildStatus(`${options.namespace}/${BREAKER_CONFIGMAP}`, configMap, nodes);
  } catch (error) {
    if (!(error instanceof KubeCommandError)) throw error;
    deps.io.stderr(`npu-fault remediation status: ${error.message}\n`);
    return EXIT_DATA;
  }
  deps.io.stdout(
    options.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatStatusTable(report),
  );
  return 0;
}

// ---------------------------------------------------------------------------------------
// The command lines

function namespaceOf(args: ParsedArgs): string {
  const namespace = stringOption(args, 'namespace') ?? DEFAULT_NAMESPACE;
  if (namespace.length > 63 || !NAMESPACE_NAME.test(namespace))
    throw new UsageError(
      `--namespace '${excerpt(namespace)}' is not a namespace name (lower-case DNS label)`,
    );
  return namespace;
}

function toResetOptions(args: ParsedArgs): {
  namespace: string;
  by: string | undefined;
  force: boolean;
  kube: KubeSource;
} {
  const by = stringOption(args, 'by');
  if (by !== undefined && (by.trim() === '' || by.length > MAX_BY))
    throw new UsageError(`--by must be a name of 1 to ${MAX_BY} characters`);
  return {
    namespace: namespaceOf(args),
    by: by?.trim(),
    force: booleanOption(args, 'force'),
    kube: kubeSourceOf(args),
  };
}

function toStatusOptions(args: ParsedArgs): {
  namespace: string;
  output: 'table' | 'json';
  kube: KubeSource;
} {
  const output = stringOption(args, 'output') ?? 'table';
  if (output !== 'table' && output !== 'json')
    throw new UsageError(`-o must be table or json, not '${excerpt(output)}'`);
  return { namespace: namespaceOf(args), output, kube: kubeSourceOf(args) };
}

/** Who a reset is recorded as: `--by`, else the kubeconfig user, else $USER. */
export function resetBy(
  by: string | undefined,
  kubeUser: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string {
  const name = by ?? kubeUser ?? (env.USER?.trim() || undefined) ?? 'unknown';
  return name.slice(0, MAX_BY);
}

/** `npu-fault remediation`: dispatches to reset or status. */
export const remediation: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  const [sub, ...rest] = args;
  if (sub === '--help' || sub === '-h' || sub === 'help') {
    io.stdout(commandHelp(REMEDIATION));
    return 0;
  }
  if (sub === 'reset') {
    const options = settleCommandLine(REMEDIATION_RESET, rest, io, toResetOptions);
    if (isExit(options)) return options.exit;
    const kubeConfig = loadOperatorKubeConfig('remediation reset', options.kube, io);
    if (isExit(kubeConfig)) return kubeConfig.exit;
    const by = resetBy(options.by, kubeUserName(kubeConfig), process.env);
    return await runReset(
      { namespace: options.namespace, by, force: options.force },
      { api: kubeRemediationApi(kubeConfig, options.namespace), io, now: () => new Date().toISOString() },
    );
  }
  if (sub === 'status') {
    const options = settleCommandLine(REMEDIATION_STATUS, rest, io, toStatusOptions);
    if (isExit(options)) return options.exit;
    const kubeConfig = loadOperatorKubeConfig('remediation status', options.kube, io);
    if (isExit(kubeConfig)) return kubeConfig.exit;
    return await runStatus(options, { api: kubeRemediationApi(kubeConfig, options.namespace), io });
  }
  const problem =
    sub === undefined ? 'missing subcommand (reset or status)' : `unknown subcommand '${excerpt(sub)}'`;
  io.stderr(`npu-fault remediation: ${problem}; run 'npu-fault remediation --help'\n`);
  return EXIT_USAGE;
};

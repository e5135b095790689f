/**
 * `npu-fault explain <node>[/<device>]`: why a device has its status (active reasons and
 * their rules, the smoothing window, timers, latches and how to clear them), asked of a
 * controller replica's read-only `GET /v1/explain/…` (controller/explain; the request and the
 * answer are contracts/explain.ts), since the published ConfigMap does not carry the engine's
 * internals.
 *
 * The kubeconfig's credentials go to the apiserver and nowhere else. The CLI asks the
 * apiserver for a 10-minute token of the ServiceAccount `npu-fault-explain` with the audience
 * `npu-fault-explain` (TokenRequest: the operator's RBAC, `create serviceaccounts/token` on that
 * name, is what authorises explain), and sends that token to the controller, which takes no
 * other. Two ways to reach it:
 * - `--controller-url URL`: straight to a replica (a port-forward, or inside the cluster);
 * - otherwise the leader named by the Lease <namespace>/npu-fault-controller, through the
 *   apiserver's pod proxy, once the pod is checked to be a controller (its ServiceAccount and
 *   label). The proxy does not forward the Authorization header (which carries the operator's
 *   credential for the apiserver) to the pod; the explain token travels in
 *   `X-Npu-Fault-Authorization`.
 *
 * Exit 0 explained, 1 refused / not found / unreachable (one line), 2 bad usage.
 */
import * as k8s from '@kubernetes/client-node';
import {
  EXPLAIN_SERVICE_ACCOUNT,
  EXPLAIN_TOKEN_AUDIENCE,
  EXPLAIN_TOKEN_HEADER,
  explainPath,
  type ExplainDevice,
  type ExplainNode,
  type ExplainResponse,
  type ExplainTimer,
} from '../contracts/index.js';
import { describeError, K8sApiError, readResponseText } from '../platform/index.js';
import {
  excerpt,
  isExit,
  settleCommandLine,
  stringOption,
  UsageError,
  type CommandSpec,
  type ParsedArgs,
} from './args.js';
import { parseTarget, type ClearTarget } from './clear.js';
import { EXIT_DATA, type CliIO, type Subcommand } from './io.js';
import {
  describeKubeFailure,
  KUBE_OPTIONS,
  kubeSourceOf,
  loadOperatorKubeConfig,
  type KubeSource,
} from './kube.js';

/** The largest explanation read (one node of 32 devices is some 60 KiB). */
const MAX_EXPLAIN_ANSWER_BYTES = 4 * 1024 * 1024;

/** The Lease the controller replicas elect their leader with (k8s/controller). */
export const CONTROLLER_LEASE = 'npu-fault-controller';
/** The controller's observation/explain port (k8s/controller/deployment.yaml). */
export const CONTROLLER_PORT = 8080;

/** The explain command line. */
export const EXPLAIN: CommandSpec = {
  name: 'explain',
  synopsis: '<node>[/<device>] [--controller-url <url>] [-o text|json]',
  summary: "why a device has its status (asks the leading controller for the engine's state)",
  description: `Shows, for a node's devices (or one, by id such as npu3 or by key), the published status and
the rule that decided it, each active reason with the rule and threshold that raised it, the
smoothing window, the timers running (healthy → degraded, degraded → failed, the node's
agent-unreachable deadline) and when they fire, and latched reasons with the command that
clears them.

Your kubeconfig's credentials are sent only to the API server: the command asks it for a
10-minute token of the ServiceAccount ${EXPLAIN_SERVICE_ACCOUNT} (audience ${EXPLAIN_TOKEN_AUDIENCE}), which
is all the controller sees. Without --controller-url it asks the leader (the Lease
${CONTROLLER_LEASE} in --namespace) through the API server's pod proxy, after checking that
the pod is a controller. Needs create on serviceaccounts/token for ${EXPLAIN_SERVICE_ACCOUNT}, and
without --controller-url get on the Lease, get on pods and get on pods/proxy in that
namespace: the npu-fault-operator Role in k8s/operator/rbac.yaml.`,
  options: {
    ...KUBE_OPTIONS,
    'controller-url': {
      type: 'string',
      value: '<url>',
      description:
        'a controller replica, e.g. http://localhost:8080 (default: the leader, through the API server)',
    },
    namespace: {
      type: 'string',
      value: '<name>',
      description: "the controller's namespace (default ai-infra)",
    },
    output: { type: 'string', short: 'o', value: 'text|json', description: 'output format (default text)' },
  },
  positionals: { name: '<node>[/<device>]', min: 1, max: 1 },
  footer: `Examples:
  npu-fault explain gpu-node-7/npu3
  kubectl -n ai-infra port-forward deploy/npu-fault-controller 8080 &
  npu-fault explain gpu-node-7 --controller-url http://localhost:8080 -o json

Exit codes: 0 explained, 1 refused, not found or unreachable (one line saying why), 2 bad usage.`,
};

/** What the command line asked for. */
export interface ExplainOptions {
  target: ClearTarget;
  controllerUrl: string | undefined;
  namespace: string;
  output: 'text' | 'json';
}

/** Where explanations come from; failures are thrown as ExplainError, already one line. */
export interface ExplainSource {
  /** Who is asked, for messages (`http://…`, `pod ai-infra/x (leader)`). */
  describe(): string;
  get(node: string, device: string | undefined): Promise<ExplainResponse>;
}

/** A failed request, described in one line. */
export class ExplainError extends Error {
  override readonly name = 'ExplainError';
}

function toOptions(args: ParsedArgs): ExplainOptions & {
  kube: KubeSource;
} {
  const output = stringOption(args, 'output') ?? 'text';
  if (output !== 'text' && output !== 'json')
    throw new UsageError(`-o must be text or json, not '${excerpt(output)}'`);
  const url = stringOption(args, 'controller-url');
  if (url !== undefined && !/^https?:\/\/[^/]+/.test(url))
    throw new UsageError(`--controller-url must be an http(s) URL, not '${excerpt(url)}'`);
  return {
    target: parseTarget(args.positionals[0] as string),
    controllerUrl: url?.replace(/\/+$/, ''),
    namespace: stringOption(args, 'namespace') ?? 'ai-infra',
    output,
    kube: kubeSourceOf(args),
  };
}

/** Asks `source` and prints the explanation. */
export async function runExplain(
  options: ExplainOptions,
  deps: { source: ExplainSource; io: CliIO },
): Promise<number> {
  const { node, device } = options.target;
  let response: ExplainResponse;
  try {
    response = await deps.source.get(node, device);
  } catch (error) {
    if (!(error instanceof ExplainError)) throw error;
    deps.io.stderr(`npu-fault explain: ${error.message}\n`);
    return EXIT_DATA;
  }
  deps.io.stdout(
    options.output === 'json' ? `${JSON.stringify(response, null, 2)}\n` : renderExplanation(response),
  );
  return 0;
}

/** The one line for a controller's error answer (`{ error: { code, message } }`). */
export function describeAnswer(status: number, body: string, who: string): string {
  let message: string | undefined;
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } };
    if (typeof parsed.error?.message === 'string') message = parsed.error.message;
  } catch {
    // not JSON: fall through to the status alone
  }
  const what =
    status === 401
      ? 'unauthorized'
      : status === 403
        ? 'forbidden'
        : status === 404
          ? 'not found'
          : status === 503
            ? 'unavailable'
            : `HTTP ${status}`;
  // eslint-disable-next-line no-control-regex
  const line = (message ?? body.split('\n', 1)[0] ?? '').replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, 300);
  return `${who} answered ${what}: ${line}`;
}

/** Parses a 200 answer, or says what is wrong with it. */
function parseResponse(body: string, who: string): ExplainResponse {
  try {
    const parsed = JSON.parse(body) as ExplainResponse;
    if (parsed?.explanation?.tracked === true && Array.isArray(parsed.explanation.devices)) return parsed;
  } catch {
    // reported below
  }
  throw new ExplainError(`${who} sent an answer that is not an explanation`);
}

/** How long a minted explain token lives (TokenRequest's minimum). */
export const EXPLAIN_TOKEN_SECONDS = 600;

/**
 * `Bearer <token>` for a token of the explain ServiceAccount in `namespace`, minted by the
 * apiserver (TokenRequest) with the operator's own credentials, which go nowhere else.
 */
export async function mintExplainToken(kubeConfig: k8s.KubeConfig, namespace: string): Promise<string> {
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  let token: string | undefined;
  try {
    const request = await core.createNamespacedServiceAccountToken({
      name: EXPLAIN_SERVICE_ACCOUNT,
      namespace,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { audiences: [EXPLAIN_TOKEN_AUDIENCE], expirationSeconds: EXPLAIN_TOKEN_SECONDS },
      },
    });
    token = request.status?.token;
  } catch (error) {
    if (K8sApiError.from(error)?.apiStatus === 404)
      throw new ExplainError(
        `no ServiceAccount ${namespace}/${EXPLAIN_SERVICE_ACCOUNT}: is npu-fault installed in namespace ${namespace}?`,
      );
    throw new ExplainError(
      describeKubeFailure(
        error,
        { verb: 'create', resource: 'serviceaccounts/token', name: EXPLAIN_SERVICE_ACCOUNT, namespace },
        kubeConfig.getCurrentCluster()?.server,
      ),
    );
  }
  if (!token) throw new ExplainError('the API server answered the token request without a token');
  return `Bearer ${token}`;
}

/** The controller's ServiceAccount and pod label (k8s/controller/deployment.yaml). */
const CONTROLLER_SERVICE_ACCOUNT = 'npu-fault-controller';
const CONTROLLER_NAME_LABEL = 'app.kubernetes.io/name';

/**
 * Why `pod` is not a controller replica to trust with the explain token, or undefined when it
 * is one: anyone who can write the Lease could otherwise name a pod of their own.
 */
export function notAController(pod: k8s.V1Pod): string | undefined {
  const account = pod.spec?.serviceAccountName ?? 'default';
  if (account !== CONTROLLER_SERVICE_ACCOUNT)
    return `it runs as ServiceAccount ${account}, not ${CONTROLLER_SERVICE_ACCOUNT}`;
  const label = pod.metadata?.labels?.[CONTROLLER_NAME_LABEL];
  if (label !== CONTROLLER_SERVICE_ACCOUNT)
    return `its label ${CONTROLLER_NAME_LABEL} is ${JSON.stringify(label ?? null)}, not ${CONTROLLER_SERVICE_ACCOUNT}`;
  if (pod.metadata?.deletionTimestamp) return 'it is being deleted';
  return undefined;
}

/** Straight to a replica at `url`. */
export function urlSource(url: string, authorization: () => Promise<string>): ExplainSource {
  return {
    describe: () => url,
    async get(node, device) {
      const auth = await authorization();
      let res: Response;
      try {
        res = await fetch(`${url}${explainPath(node, device)}`, {
          headers: { Authorization: auth, Accept: 'application/json' },
          signal: AbortSignal.timeout(15_000),
        });
      } catch (error) {
        throw new ExplainError(`cannot reach the controller at ${url}: ${networkReason(error)}`);
      }
      let body: string;
      try {
        body = await readResponseText(res, MAX_EXPLAIN_ANSWER_BYTES);
      } catch (error) {
        throw new ExplainError(`the controller at ${url}: ${describeError(error)}`);
      }
      if (res.status !== 200)
        throw new ExplainError(describeAnswer(res.status, body, `the controller at ${url}`));
      return parseResponse(body, `the controller at ${url}`);
    },
  };
}

/** The leader (Lease holder) through the apiserver's pod proxy. */
export function proxySource(kubeConfig: k8s.KubeConfig, namespace: string): ExplainSource {
  const server = kubeConfig.getCurrentCluster()?.server;
  const coordination = kubeConfig.makeApiClient(k8s.CoordinationV1Api);
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  let pod: string | undefined;
  return {
    describe: () => (pod === undefined ? `the leader in ${namespace}` : `pod ${namespace}/${pod}`),
    async get(node, device) {
      const leaseAttempt = { verb: 'get', resource: 'leases', name: CONTROLLER_LEASE, namespace };
      let holder: string | undefined;
      try {
        const lease = await coordination.readNamespacedLease({ name: CONTROLLER_LEASE, namespace });
        holder = lease.spec?.holderIdentity ?? undefined;
      } catch (error) {
        if (K8sApiError.from(error)?.apiStatus === 404)
          throw new ExplainError(
            `no Lease ${namespace}/${CONTROLLER_LEASE}: is the controller running in namespace ${namespace}?`,
          );
        throw new ExplainError(describeKubeFailure(error, leaseAttempt, server));
      }
      if (!holder)
        throw new ExplainError(
          `no controller leads now (Lease ${namespace}/${CONTROLLER_LEASE} has no holder)`,
        );
      pod = holder;
      const who = `the leader (pod ${namespace}/${holder})`;
      let target: k8s.V1Pod;
      try {
        target = await core.readNamespacedPod({ name: holder, namespace });
      } catch (error) {
        throw new ExplainError(
          describeKubeFailure(error, { verb: 'get', resource: 'pods', name: holder, namespace }, server),
        );
      }
      const wrong = notAController(target);
      if (wrong !== undefined)
        throw new ExplainError(
          `the Lease ${namespace}/${CONTROLLER_LEASE} names pod ${holder}, which is not a controller (${wrong}): refusing to send it a token`,
        );
      const auth = await mintExplainToken(kubeConfig, namespace);
      const path = explainPath(node, device).slice(1);
      const header: k8s.ObservableMiddleware = {
        pre: (request) => {
          request.setHeaderParam(EXPLAIN_TOKEN_HEADER, auth);
          return new k8s.Observable(Promise.resolve(request));
        },
        post: (response) => new k8s.Observable(Promise.resolve(response)),
      };
      try {
        const body = await core.connectGetNamespacedPodProxyWithPath(
          { name: `${holder}:${CONTROLLER_PORT}`, namespace, path },
          { middleware: [header], middlewareMergeStrategy: 'append' },
        );
        return parseResponse(typeof body === 'string' ? body : JSON.stringify(body), who);
      } catch (error) {
        if (error instanceof ExplainError) throw error;
        const api = error instanceof k8s.ApiException ? (error as k8s.ApiException<unknown>) : undefined;
        const body = api === undefined ? undefined : String(api.body ?? '');
        // The pod's own answer carries `{ error: { code, message } }`; the apiserver's a Status.
        if (api !== undefined && body !== undefined && body.includes('"error"'))
          throw new ExplainError(describeAnswer(api.code, body, who));
        // 502/503 from the proxy: the apiserver could not reach the pod, which the shipped
        // default-deny NetworkPolicies cause unless the apiserver's addresses are allowed.
        const unreachable = api !== undefined && (api.code === 502 || api.code === 503);
        throw new ExplainError(
          describeKubeFailure(
            error,
            { verb: 'get', resource: 'pods/proxy', name: holder, namespace },
            server,
          ) +
            (unreachable
              ? ' (the apiserver could not reach the pod: allow it with k8s/network-policies/controller-from-apiserver.example.yaml, or use kubectl port-forward and --controller-url)'
              : ''),
        );
      }
    },
  };
}

function networkReason(error: unknown): string {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 6; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^(E[A-Z_]+|UND_ERR\w*)$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return describeError(error);
}

/** Seconds, for timers: `42 s`, `3 min 5 s`. */
export function formatDuration(ms: number): string {
  const s = Math.ceil(ms / 1000);
  if (s < 120) return `${s} s`;
  const m = Math.floor(s / 60);
  return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
}

function timerLine(timer: ExplainTimer): string {
  const change = timer.from === null ? `→ ${timer.to} (${timer.name})` : `${timer.from} → ${timer.to}`;
  const when = timer.in_ms <= 0 ? 'due now' : `in ${formatDuration(timer.in_ms)}`;
  const clock = timer.clock === 'collected_at' ? 'sample clock' : 'receiver clock';
  return `${change} ${when} (at ${timer.at}, ${clock}) if ${timer.condition}`;
}

function renderDevice(node: ExplainNode, d: ExplainDevice): string[] {
  const lines: string[] = [];
  const reason = d.reason === null ? '' : ` (${d.reason})`;
  const state = d.state === d.status ? '' : `; state machine: ${d.state} since ${d.state_since}`;
  lines.push(`${node.node}/${d.id}: ${d.status.toUpperCase()}${reason} since ${d.status_since}${state}`);
  lines.push(`  key ${d.key}, ${d.model || 'model unknown'}`);
  lines.push(`  decided by: ${d.decided_by}`);
  if (d.active.length === 0) lines.push('  active reasons: none');
  else {
    lines.push('  active reasons:');
    for (const r of d.active)
      lines.push(`    ${r.name} (${r.severity}${r.latched ? ', latched' : ''}): ${r.rule}`);
  }
  const w = d.window;
  const flags = w.high_temp.hot.map((hot) => (hot ? 'H' : '.')).join(' ') || '(no samples)';
  lines.push(
    `  window: last ${w.high_temp.hot.length} of ${w.size} samples, oldest first: ${flags}  ` +
      `(H = above ${w.high_temp.threshold_c} °C; ${w.high_temp.count} of ${w.high_temp.min_samples} needed for high-temp)`,
  );
  for (const e of w.events)
    lines.push(
      `    ${e.name}: event ${e.samples_ago === 0 ? 'in the newest sample' : `${e.samples_ago} samples ago`}`,
    );
  const reading = (v: number | string | null, unit = ''): string => (v === null ? 'n/a' : `${v}${unit}`);
  lines.push(
    `  latest: ${reading(d.temperature_c, ' °C')}, ${reading(d.power_w, ' W')}, ` +
      `ECC ${reading(d.ecc_errors)} (baseline ${reading(w.ecc_baseline)}), link ${reading(d.pcie_link_status)}`,
  );
  if (d.timers.length > 0) {
    lines.push('  timers:');
    for (const t of d.timers) lines.push(`    ${timerLine(t)}`);
  }
  if (d.pods !== null)
    lines.push(
      `  held by: ${d.pods.length === 0 ? 'no pod' : d.pods.join(', ')} (the kubelet, through the agent)`,
    );
  if (d.status === 'degraded' || d.status === 'failed')
    lines.push(`  recovery: ${d.clean_samples} of ${d.recover_after_samples} clean samples in a row`);
  if (d.latched.length > 0) {
    lines.push(`  latched: ${d.latched.join(', ')} (kept until a new boot with reset counters, or a clear)`);
    lines.push(`  clear with: ${d.clear ?? `npu-fault clear ${node.node}/${d.id}`}`);
  }
  return lines;
}

/** Why a node that is not healthy is left out of the published document (CONTRACT §5.3). */
const WITHHELD: Readonly<Record<string, string>> = {
  'ingest-outage': 'an ingest outage: stale nodes holding no failed or degraded device are summarised',
  'size-budget': "cut to fit the document's byte budget",
};

/** The text a person reads. */
export function renderExplanation(response: ExplainResponse): string {
  const node = response.explanation;
  const lines: string[] = [];
  const role = response.leader
    ? `leader, term ${response.term ?? '?'}`
    : `follower; the leader is ${response.leader_identity ?? 'unknown'}`;
  lines.push(`answered by ${response.identity} (${role}) at ${node.now}`);
  const seen = node.last_seen === null ? 'never observed (seeded)' : `last snapshot ${node.last_seen}`;
  lines.push(
    `node ${node.node}: ${seen}, boot ${node.boot_id ?? 'n/a'} seq ${node.seq ?? 'n/a'}, ${node.samples} samples` +
      (node.overlays.length > 0 ? `; overlays: ${node.overlays.join(', ')}` : ''),
  );
  const withheld = WITHHELD[node.withheld ?? ''];
  if (withheld !== undefined)
    lines.push(`  not listed in the published status (${withheld}): readers see it as unknown`);
  for (const r of node.node_reasons)
    lines.push(
      `  node reason ${r.reason}: ${r.rule}${r.message === '' ? '' : `; the agent saw: ${r.message}`}`,
    );
  for (const t of node.timers) lines.push(`  ${timerLine(t)}`);
  for (const d of node.devices) {
    lines.push('');
    lines.push(...renderDevice(node, d));
  }
  return `${lines.join('\n')}\n`;
}

/** `npu-fault explain`: see the module comment. */
export const explain: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  const options = settleCommandLine(EXPLAIN, args, io, toOptions);
  if (isExit(options)) return options.exit;
  const kubeConfig = loadOperatorKubeConfig('explain', options.kube, io);
  if (isExit(kubeConfig)) return kubeConfig.exit;
  const source =
    options.controllerUrl === undefined
      ? proxySource(kubeConfig, options.namespace)
      : urlSource(options.controllerUrl, () => mintExplainToken(kubeConfig, options.namespace));
  return await runExplain(options, { source, io });
};

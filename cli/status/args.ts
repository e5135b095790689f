/** The status command line: its spec (help text included) and the options it settles into. */
import { FAULT_DATA_KEY, STATUS_CONFIGMAP_NAME, STATUS_NAMESPACE } from '../../contracts/index.js';
import {
  booleanOption,
  excerpt,
  stringOption,
  UsageError,
  type CommandSpec,
  type ParsedArgs,
  parseDuration,
} from '../args.js';
import { KUBE_OPTIONS, kubeSourceOf, type KubeSource } from '../kube.js';

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

/** The parsed command line as options; a bad value is a UsageError naming it. */
export function statusOptionsOf(args: ParsedArgs): StatusOptions & { kube: KubeSource } {
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

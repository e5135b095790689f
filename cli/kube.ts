/**
 * What the commands that talk to a cluster share: `--kubeconfig` / `--context` flags, a
 * KubeConfig loaded from them (else $KUBECONFIG, ~/.kube/config, or the in-cluster
 * configuration; the controller and the function load theirs here too, so that the agent,
 * which never talks to the API, does not load client-node at all), and one
 * line for any failed API call that says what was attempted and why it failed: a 403 names
 * the verb and resource the caller's role lacks.
 */
import * as k8s from '@kubernetes/client-node';
import { describeError, K8sApiError } from '../platform/index.js';
import { shareConnections } from '../platform/k8s/index.js';
import { isExit, stringOption, type OptionSpec, type ParsedArgs } from './args.js';
import { EXIT_DATA, type CliIO } from './io.js';

/**
 * The component's KubeConfig: `path` when given, else the in-cluster configuration, else
 * $KUBECONFIG or ~/.kube/config; or one `npu-fault <cmd>: kubeconfig: …` line and exit 1.
 */
export function loadKubeConfig(
  command: string,
  path: string | undefined,
  io: CliIO,
): k8s.KubeConfig | { exit: number } {
  const kubeConfig = new k8s.KubeConfig();
  try {
    if (path !== undefined) kubeConfig.loadFromFile(path);
    else kubeConfig.loadFromDefault();
    // client-node would open a TLS connection per call (platform/k8s/shared-connections.ts).
    return shareConnections(kubeConfig);
  } catch (error) {
    io.stderr(`npu-fault ${command}: kubeconfig: ${describeError(error).split('\n')[0]}\n`);
    return { exit: EXIT_DATA };
  }
}

/** The flags every cluster-facing operator command takes. */
export const KUBE_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  kubeconfig: {
    type: 'string',
    value: '<file>',
    description: 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)',
  },
  context: {
    type: 'string',
    value: '<name>',
    description: "kubeconfig context (default: the file's current)",
  },
};

/** Where the KubeConfig comes from. */
export interface KubeSource {
  kubeconfig: string | undefined;
  context: string | undefined;
}

/** The `--kubeconfig` / `--context` values of a parsed command line. */
export function kubeSourceOf(args: ParsedArgs): KubeSource {
  return { kubeconfig: stringOption(args, 'kubeconfig'), context: stringOption(args, 'context') };
}

/**
 * The KubeConfig of `source`, switched to `source.context` when given; or one
 * `npu-fault <command>: kubeconfig: …` line and exit 1.
 */
export function loadOperatorKubeConfig(
  command: string,
  source: KubeSource,
  io: CliIO,
): k8s.KubeConfig | { exit: number } {
  const kubeConfig = loadKubeConfig(command, source.kubeconfig, io);
  if (isExit(kubeConfig)) return kubeConfig;
  if (source.context !== undefined) {
    if (!kubeConfig.getContextObject(source.context)) {
      io.stderr(`npu-fault ${command}: kubeconfig: no context named '${source.context.slice(0, 100)}'\n`);
      return { exit: EXIT_DATA };
    }
    kubeConfig.setCurrentContext(source.context);
  }
  return kubeConfig;
}

/** The name the kubeconfig's current user goes by, if any. */
export function kubeUserName(kubeConfig: k8s.KubeConfig): string | undefined {
  const name = kubeConfig.getCurrentUser()?.name;
  return name === undefined || name === '' ? undefined : name;
}

/** One API call, as a failure message names it. */
export interface ApiAttempt {
  verb: string;
  /** Plural resource (`nodes`, `configmaps`). */
  resource: string;
  name?: string;
  /** Absent for a cluster-scoped resource. */
  namespace?: string;
}

/** A failed API call, already described in one line for the user. */
export class KubeCommandError extends Error {
  override readonly name = 'KubeCommandError';
}

/** What the attempt was, for messages: `patch nodes "gpu-1"`, `get configmaps "x" in namespace y`. */
export function describeAttempt(attempt: ApiAttempt): string {
  const name = attempt.name === undefined ? '' : ` "${attempt.name}"`;
  const where = attempt.namespace === undefined ? '' : ` in namespace ${attempt.namespace}`;
  return `${attempt.verb} ${attempt.resource}${name}${where}`;
}

/**
 * One line for a failed call: a 403 names the missing permission (verb, resource, scope) and
 * the role that grants it; a 401 says the credentials were refused; another API answer gives
 * its status and message; a network failure what could not be reached.
 */
export function describeKubeFailure(error: unknown, attempt: ApiAttempt, server?: string): string {
  const api = K8sApiError.from(error);
  if (!api) {
    const code = networkCode(error);
    const where = server ? ` at ${server}` : '';
    return `cannot reach the Kubernetes API${where}: ${code ?? describeError(error)}`;
  }
  if (api.apiStatus === 403) {
    const user = /User "([^"]+)"/.exec(api.message)?.[1];
    const scope = attempt.namespace === undefined ? 'cluster-wide' : `in namespace ${attempt.namespace}`;
    const named = attempt.name === undefined ? '' : ` "${attempt.name}"`;
    return (
      `forbidden: ${user ?? 'the kubeconfig user'} may not ${attempt.verb} ${attempt.resource}${named} (${scope}); ` +
      `it needs '${attempt.verb}' on ${attempt.resource}, which the npu-fault-operator role grants (k8s/operator/rbac.yaml)`
    );
  }
  if (api.apiStatus === 401)
    return `unauthorized: the API server refused the kubeconfig's credentials (${describeAttempt(attempt)})`;
  return `${describeAttempt(attempt)}: ${api.message}`;
}

/** The system error code (ECONNREFUSED, ENOTFOUND, …) somewhere in a failure's cause chain. */
function networkCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 6; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Runs one API call; a failure becomes a KubeCommandError with the one line of
 * `describeKubeFailure`, unless `keep(error)` says the caller handles it (a 404, a 409).
 */
export async function callApi<T>(
  attempt: ApiAttempt,
  call: () => Promise<T>,
  options: { server?: string; keep?: (error: unknown) => boolean } = {},
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (options.keep?.(error)) throw error;
    throw new KubeCommandError(describeKubeFailure(error, attempt, options.server), { cause: error });
  }
}

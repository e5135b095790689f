/**
 * `npu-fault clear <node>[/<device>] [--wait] [--timeout 60s]`: asks the controller to clear
 * latched failures through the Node annotation `npu-fault.io/clear` (CONTRACT §3.6, §5.6):
 * `all` for the whole node, or a comma-separated list of device ids or keys.
 *
 * - The node must exist (a 404 is one line naming it).
 * - A request merges with one already on the node: a device list grows, `all` wins; an
 *   invalid value (the controller refused it) is replaced. The write is a merge patch
 *   carrying the node's resourceVersion, so a concurrent change (another clear, or the
 *   controller removing an applied one) is a 409 and the merge is redone from a fresh read.
 * - `--wait` watches the node until the controller removed the annotation, which it does
 *   once the clear is applied and a status document showing it is published.
 *
 * Exit 0 done, 1 the cluster said no (not found, forbidden, timed out), 2 bad usage.
 */
import * as k8s from '@kubernetes/client-node';
import { CLEAR_ANNOTATION, MAX_CLEAR_DEVICE, formatClear, parseClear } from '../contracts/index.js';
import { isConflict, isGone, isNotFound } from '../platform/index.js';
import {
  createKubeListWatchClient,
  requestOptions,
  resourceVersionOf,
  type KubeCollection,
  type RawObject,
} from '../platform/k8s/index.js';
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

/** The clear command line. */
export const CLEAR: CommandSpec = {
  name: 'clear',
  synopsis: '<node>[/<device>] [--wait] [--timeout <duration>]',
  summary: 'clear latched failures (through the Node annotation npu-fault.io/clear)',
  description: `Asks the controller to clear a node's latched failures (a whole node, or one device by
its id, e.g. npu3, or its key) by setting the annotation ${CLEAR_ANNOTATION} on the Node.
A request already on the node is kept: device lists are merged, and a whole-node clear
covers everything. The controller applies it, publishes the result, then removes the
annotation; --wait waits for that.

Needs get and patch on nodes (and watch with --wait): the npu-fault-operator ClusterRole
in k8s/operator/rbac.yaml.`,
  options: {
    ...KUBE_OPTIONS,
    wait: { type: 'boolean', description: 'wait until the controller has applied and published the clear' },
    timeout: {
      type: 'string',
      value: '<duration>',
      description: 'how long --wait waits: 90s, 2m, 500ms, or seconds (default 60s)',
    },
  },
  positionals: { name: '<node>[/<device>]', min: 1, max: 1 },
  footer: `Examples:
  npu-fault clear gpu-node-7            # every device of the node
  npu-fault clear gpu-node-7/npu3 --wait

Exit codes: 0 done, 1 the cluster refused or the wait timed out (one line saying why), 2 bad usage.`,
};

/** How long `--wait` waits by default. */
export const DEFAULT_WAIT_MS = 60_000;
/** Attempts of the read-merge-write before giving up on a node that keeps changing. */
export const WRITE_ATTEMPTS = 5;
/** A DNS-1123 subdomain: what a Node may be called. */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** What to clear: a node, and one device of it or (undefined) every device. */
export interface ClearTarget {
  node: string;
  device: string | undefined;
}

/**
 * Reads `<node>[/<device>]`. The node is a Node name; the device is a display id or key,
 * non-empty, at most 256 characters, without commas (the annotation's separator) or
 * surrounding blanks. `<node>/all` is the whole node, as the annotation reads `all`.
 */
export function parseTarget(text: string): ClearTarget {
  const slash = text.indexOf('/');
  const node = slash === -1 ? text : text.slice(0, slash);
  const device = slash === -1 ? undefined : text.slice(slash + 1);
  if (node === '') throw new UsageError(`missing node name before '/' in '${excerpt(text)}'`);
  if (node.length > 253 || !NODE_NAME.test(node))
    throw new UsageError(`'${excerpt(node)}' is not a Kubernetes node name (lower-case DNS name)`);
  if (device === undefined) return { node, device: undefined };
  if (device === '') throw new UsageError(`missing device after '${excerpt(node)}/'`);
  if (device.length > MAX_CLEAR_DEVICE)
    throw new UsageError(`device is longer than ${MAX_CLEAR_DEVICE} characters`);
  if (device.includes(','))
    throw new UsageError(`device '${excerpt(device)}' contains a comma (one device at a time)`);
  // eslint-disable-next-line no-control-regex
  if (device.trim() !== device || /[\u0000-\u001f\u007f]/.test(device))
    throw new UsageError(`device '${excerpt(device)}' has surrounding blanks or control characters`);
  return { node, device: device === 'all' ? undefined : device };
}

/** The annotation value after merging a request into what the node already carries. */
export interface ClearMerge {
  value: string;
  /** False when the node already asks for this (no write needed). */
  changed: boolean;
  /** The invalid value this one replaces (the controller refused it), if any. */
  replaced?: string;
}

/**
 * Merges a request for `device` (undefined: the whole node) into the annotation's current
 * value: nothing there, or an invalid value, gives the request alone; a whole-node clear
 * (`all` or empty) already there covers everything; a whole-node request replaces a list;
 * a device list grows by the device unless it has it.
 */
export function mergeClear(existing: string | undefined, device: string | undefined): ClearMerge {
  const requested = formatClear(device === undefined ? { all: true } : { all: false, devices: [device] });
  if (existing === undefined) return { value: requested, changed: true };
  const current = parseClear(existing);
  if ('error' in current) return { value: requested, changed: true, replaced: existing };
  if (current.all) return { value: existing, changed: false };
  if (device === undefined) return { value: requested, changed: true };
  if (current.devices.includes(device)) return { value: existing, changed: false };
  return { value: formatClear({ all: false, devices: [...current.devices, device] }), changed: true };
}

/** The clear annotation of a node and the version it was read at. */
export interface NodeClearState {
  resourceVersion: string;
  clear: string | undefined;
}

/** How a wait for the controller ended. */
export type WaitOutcome = 'removed' | 'deleted' | 'timeout';

/**
 * The API calls clear makes. Failures other than the ones named are thrown as
 * KubeCommandError, already one line.
 */
export interface ClearApi {
  /** The node's clear annotation; undefined when there is no such node. */
  read(node: string): Promise<NodeClearState | undefined>;
  /**
   * Sets the annotation if the node is still at `resourceVersion`. Throws the API's error
   * for a 409 (it changed) and a 404 (it is gone), which `isConflict`/`isNotFound` recognise.
   */
  write(node: string, value: string, resourceVersion: string): Promise<NodeClearState>;
  /** Watches from `resourceVersion` until the annotation is gone, the node is, or `signal` aborts. */
  waitRemoved(node: string, resourceVersion: string, signal: AbortSignal): Promise<WaitOutcome>;
}

/** What the command line asked for. */
export interface ClearOptions {
  target: ClearTarget;
  wait: boolean;
  timeoutMs: number;
}

/** What runClear needs besides the API: where to print, and the wait's deadline. */
export interface ClearDeps {
  api: ClearApi;
  io: CliIO;
  /** A signal that aborts after `ms` (AbortSignal.timeout; a test aborts it itself). */
  deadline: (ms: number) => AbortSignal;
}

function toOptions(args: ParsedArgs): ClearOptions & { kube: KubeSource } {
  const wait = booleanOption(args, 'wait');
  const timeout = stringOption(args, 'timeout');
  if (timeout !== undefined && !wait) throw new UsageError('--timeout applies only with --wait');
  return {
    target: parseTarget(args.positionals[0] as string),
    wait,
    timeoutMs: timeout === undefined ? DEFAULT_WAIT_MS : parseDuration(timeout, '--timeout'),
    kube: kubeSourceOf(args),
  };
}

/** `all devices` or `device npu3`. */
function what(device: string | undefined): string {
  return device === undefined ? 'all devices' : `device ${device}`;
}

/** A duration in the unit it was most likely given in. */
function formatDuration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** Sets (or merges) the clear request and, with `wait`, waits for the controller. */
export async function runClear(options: ClearOptions, deps: ClearDeps): Promise<number> {
  const { api, io } = deps;
  const { node, device } = options.target;
  const fail = (line: string): number => {
    io.stderr(`npu-fault clear: ${line}\n`);
    return EXIT_DATA;
  };
  let result: { state: NodeClearState; merge: ClearMerge } | undefined;
  try {
    for (let attempt = 0; attempt < WRITE_ATTEMPTS && !result; attempt++) {
      const state = await api.read(node);
      if (!state) return fail(`node "${node}" not found`);
      const merge = mergeClear(state.clear, device);
      if (!merge.changed) {
        result = { state, merge };
        break;
      }
      try {
        result = { state: await api.write(node, merge.value, state.resourceVersion), merge };
      } catch (error) {
        if (isNotFound(error)) return fail(`node "${node}" not found`);
        if (!isConflict(error)) throw error;
      }
    }
  } catch (error) {
    if (error instanceof KubeCommandError) return fail(error.message);
    throw error;
  }
  if (!result) return fail(`node "${node}" kept changing (${WRITE_ATTEMPTS} conflicting writes); try again`);
  const { merge, state } = result;
  const replaced =
    merge.replaced === undefined ? '' : `; replaced the invalid value "${excerpt(merge.replaced)}"`;
  const lead = merge.changed ? 'clear requested' : 'clear already requested';
  io.stdout(`${lead}: node ${node}, ${what(device)} (${CLEAR_ANNOTATION}=${merge.value})${replaced}\n`);
  if (!options.wait) return 0;
  let outcome: WaitOutcome;
  try {
    outcome = await api.waitRemoved(node, state.resourceVersion, deps.deadline(options.timeoutMs));
  } catch (error) {
    if (error instanceof KubeCommandError) return fail(error.message);
    throw error;
  }
  if (outcome === 'deleted') return fail(`node "${node}" was deleted while waiting for the controller`);
  if (outcome === 'timeout')
    return fail(
      `timed out after ${formatDuration(options.timeoutMs)} waiting for the controller to apply the clear on node ${node} ` +
        `(${CLEAR_ANNOTATION} is still set; is a controller running and leading?)`,
    );
  io.stdout(`cleared: the controller applied the clear on node ${node} and published it\n`);
  return 0;
}

/** The annotation of a Node as the API sent it. */
function clearOf(object: RawObject | k8s.V1Node): string | undefined {
  const annotations = (object.metadata as { annotations?: Record<string, unknown> } | undefined)?.annotations;
  const value = annotations?.[CLEAR_ANNOTATION];
  return typeof value === 'string' ? value : undefined;
}

/** The one Node `name`, for a watch through its name (RBAC-wise a request for that name). */
function nodeCollection(core: k8s.CoreV1Api, name: string): KubeCollection {
  const fieldSelector = `metadata.name=${name}`;
  return {
    path: '/api/v1/nodes',
    fieldSelector,
    listPage: (page, options) =>
      core.listNode({ fieldSelector, limit: page.limit, _continue: page.continue }, options),
  };
}

/** How long one watch request may last before the server ends it (it is then resumed). */
const WATCH_SECONDS = 300;

/** ClearApi on client-node. */
export function kubeClearApi(kubeConfig: k8s.KubeConfig): ClearApi {
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const server = kubeConfig.getCurrentCluster()?.server;
  const read = async (node: string): Promise<NodeClearState | undefined> => {
    try {
      const found = await callApi(
        { verb: 'get', resource: 'nodes', name: node },
        () => core.readNode({ name: node }),
        {
          ...(server ? { server } : {}),
          keep: isNotFound,
        },
      );
      return { resourceVersion: found.metadata?.resourceVersion ?? '', clear: clearOf(found) };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  return {
    read,
    async write(node, value, resourceVersion) {
      const body = { metadata: { resourceVersion, annotations: { [CLEAR_ANNOTATION]: value } } };
      const written = await callApi(
        { verb: 'patch', resource: 'nodes', name: node },
        () => core.patchNode({ name: node, body }, requestOptions({ patch: 'application/merge-patch+json' })),
        { ...(server ? { server } : {}), keep: (error) => isConflict(error) || isNotFound(error) },
      );
      return { resourceVersion: written.metadata?.resourceVersion ?? '', clear: clearOf(written) };
    },
    async waitRemoved(node, resourceVersion, signal) {
      const client = createKubeListWatchClient(kubeConfig, nodeCollection(core, node));
      let version = resourceVersion;
      while (!signal.aborted) {
        const watch = await watchOnce(client, node, version, signal, server);
        if (watch.outcome !== 'expired') {
          if (watch.outcome) return watch.outcome;
          version = watch.version;
          continue; // the server ended the watch: resume where it stopped
        }
        // 410: the resume point is gone; read the node afresh and watch from there.
        const fresh = await read(node);
        if (!fresh) return 'deleted';
        if (fresh.clear === undefined) return 'removed';
        version = fresh.resourceVersion;
      }
      return 'timeout';
    },
  };
}

/** One watch request: how it ended, and the last resourceVersion seen. */
async function watchOnce(
  client: ReturnType<typeof createKubeListWatchClient>,
  node: string,
  from: string,
  signal: AbortSignal,
  server: string | undefined,
): Promise<{ outcome: 'removed' | 'deleted' | 'expired' | undefined; version: string }> {
  let version = from;
  let outcome: 'removed' | 'deleted' | 'expired' | undefined;
  let failure: unknown;
  const stop = new AbortController();
  const relay = (): void => stop.abort();
  signal.addEventListener('abort', relay, { once: true });
  try {
    await callApi(
      { verb: 'watch', resource: 'nodes', name: node },
      () =>
        client.watch(
          {
            resourceVersion: version,
            timeoutSeconds: WATCH_SECONDS,
            allowWatchBookmarks: true,
            idleTimeoutMs: 330_000,
          },
          (event) => {
            if (outcome || failure) return;
            if (event.type === 'ERROR') {
              if (isGone(event.object)) outcome = 'expired';
              else failure = event.object;
            } else {
              version = resourceVersionOf(event.object) ?? version;
              if (event.type === 'DELETED') outcome = 'deleted';
              else if (event.type !== 'BOOKMARK' && clearOf(event.object) === undefined) outcome = 'removed';
            }
            if (outcome || failure) stop.abort();
          },
          stop.signal,
        ),
      { ...(server ? { server } : {}), keep: isGone },
    );
  } catch (error) {
    if (!isGone(error)) throw error;
    outcome = 'expired';
  } finally {
    signal.removeEventListener('abort', relay);
  }
  if (failure !== undefined)
    throw new KubeCommandError(
      describeKubeFailure(failure, { verb: 'watch', resource: 'nodes', name: node }, server),
    );
  return { outcome, version };
}

/** `npu-fault clear`: see the module comment. */
export const clear: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  const options = settleCommandLine(CLEAR, args, io, toOptions);
  if (isExit(options)) return options.exit;
  const kubeConfig = loadOperatorKubeConfig('clear', options.kube, io);
  if (isExit(kubeConfig)) return kubeConfig.exit;
  return await runClear(options, {
    api: kubeClearApi(kubeConfig),
    io,
    deadline: (ms) => AbortSignal.timeout(ms),
  });
};

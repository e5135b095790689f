/**
 * The node-loss baseline: how long Kubernetes itself takes to notice a dead node, to set
 * beside npu-fault's agent-silence detection (`agent_unreachable_s`, 5 s after the last
 * snapshot). A kubelet stand-in heartbeats for a Node as a kubelet does, `stop()` is the node
 * dying, and `waitForNodeNotReady` sees kube-controller-manager's node-lifecycle controller
 * give up on it (the plane must run that controller: StartOptions.nodeLifecycle).
 *
 * What a kubelet does for liveness (Kubernetes v1.34 defaults, pkg/kubelet/apis/config/v1beta1
 * and component-helpers/apimachinery/lease):
 * - it keeps the Lease kube-node-lease/<node> (holderIdentity: the node's name, owned by the
 *   Node, leaseDurationSeconds: nodeLeaseDurationSeconds = 40) and renews its renewTime every
 *   40 s × 0.25 = 10 s (nodeLeaseRenewIntervalFraction; 4 % jitter). That renewal is the
 *   heartbeat. A failed one is retried at once up to 5 times, then after a backoff from 200 ms
 *   doubling to at most 7 s.
 * - it computes its NodeStatus every nodeStatusUpdateFrequency (10 s) but patches it only when
 *   something changed or nodeStatusReportFrequency (5 min) has passed: Ready=True,
 *   reason KubeletReady, with a fresh lastHeartbeatTime.
 *
 * What the node-lifecycle controller does with that (pkg/controller/nodelifecycle): every
 * --node-monitor-period (5 s) it checks each Node; a Node whose Lease renewTime and Ready
 * lastHeartbeatTime it has not seen change for --node-monitor-grace-period (50 s since 1.32,
 * 40 s before) gets Ready (and its other conditions) Unknown, reason NodeStatusUnknown
 * ("Kubelet stopped posting node status."), then the taint node.kubernetes.io/unreachable
 * with effect NoExecute; pods are evicted when their toleration of it runs out (300 s, which
 * the DefaultTolerationSeconds admission plugin gives every pod that has none).
 *
 * So stop → NotReady lies in [grace − renew interval, grace + monitor period] (plus the
 * controller's informer and our watch delays), and last heartbeat → NotReady in
 * [grace, grace + monitor period]: `notReadyWindowMs`.
 */
import * as k8s from '@kubernetes/client-node';
import { K8sApiError, describeError, isAlreadyExists, isNotFound } from '../../platform/index.js';
import { microTime, requestOptions } from '../../platform/k8s/index.js';

/** The kubelet's defaults this stand-in follows unless told otherwise. */
export const KUBELET_HEARTBEAT_DEFAULTS = {
  /** nodeLeaseDurationSeconds. */
  leaseDurationSeconds: 40,
  /** leaseDurationSeconds × nodeLeaseRenewIntervalFraction (0.25). */
  renewIntervalSeconds: 10,
  /** nodeStatusReportFrequency: a status patch at least this often even when nothing changed. */
  statusReportIntervalSeconds: 300,
} as const;

/** kube-controller-manager's --node-monitor-period default (cloud-provider config/v1alpha1). */
export const NODE_MONITOR_PERIOD_SECONDS = 5;

/** kwok manages Nodes carrying this annotation; a stand-in on one would fight it. */
const KWOK_ANNOTATION = 'kwok.x-k8s.io/node';
const NODE_LEASE_NAMESPACE = 'kube-node-lease';
const RETRY_BACKOFF_START_MS = 200;
const RETRY_BACKOFF_MAX_MS = 7_000;

export interface KubeletStandInOptions {
  renewIntervalSeconds?: number;
  leaseDurationSeconds?: number;
  statusReportIntervalSeconds?: number;
  /** Failed heartbeats and the like (stderr by default). */
  log?: (line: string) => void;
}

type HeartbeatTiming = Required<Omit<KubeletStandInOptions, 'log'>>;

/** The options with the kubelet's defaults filled in; throws (one line, naming the field) on nonsense. */
export function heartbeatTiming(options: KubeletStandInOptions = {}): HeartbeatTiming {
  const timing = {
    renewIntervalSeconds: options.renewIntervalSeconds ?? KUBELET_HEARTBEAT_DEFAULTS.renewIntervalSeconds,
    leaseDurationSeconds: options.leaseDurationSeconds ?? KUBELET_HEARTBEAT_DEFAULTS.leaseDurationSeconds,
    statusReportIntervalSeconds:
      options.statusReportIntervalSeconds ?? KUBELET_HEARTBEAT_DEFAULTS.statusReportIntervalSeconds,
  };
  for (const [field, value] of Object.entries(timing))
    if (!Number.isFinite(value) || value <= 0)
      throw new Error(`${field}: expected a positive number, got ${value}`);
  if (!Number.isInteger(timing.leaseDurationSeconds))
    throw new Error(`leaseDurationSeconds: expected whole seconds, got ${timing.leaseDurationSeconds}`);
  if (timing.renewIntervalSeconds >= timing.leaseDurationSeconds)
    throw new Error(
      `renewIntervalSeconds: must be shorter than leaseDurationSeconds (${timing.leaseDurationSeconds}), got ${timing.renewIntervalSeconds}`,
    );
  return timing;
}

/** The Lease a kubelet creates for its node: held by the node, owned by the Node (deleted with it). */
export function nodeLeaseBody(
  node: { name: string; uid: string },
  leaseDurationSeconds: number,
  now: number,
): k8s.V1Lease {
  return {
    metadata: {
      name: node.name,
      namespace: NODE_LEASE_NAMESPACE,
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid }],
    },
    spec: { holderIdentity: node.name, leaseDurationSeconds, renewTime: microTime(now) },
  };
}

/**
 * A merge patch renewing the Lease at `now`. renewTime is MicroTime: written here as the
 * six-digit string the apiserver wants, whatever client-node does with a Date in a patch.
 */
export function leaseRenewPatch(node: string, leaseDurationSeconds: number, now: number): object {
  return {
    spec: { holderIdentity: node, leaseDurationSeconds, renewTime: microTime(now).toISOString() },
  };
}

/** The conditions a healthy kubelet posts besides Ready (status False: no pressure). */
const NO_PRESSURE = [
  ['MemoryPressure', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
  ['DiskPressure', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
  ['PIDPressure', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
] as const;

/**
 * A strategic merge patch of the Node's status (conditions merge by type), as a healthy
 * kubelet posts it at `now`: Ready=True since `readySince`, no pressure since `readySince`.
 */
export function readyStatusPatch(now: number, readySince: number): object {
  const times = {
    lastHeartbeatTime: new Date(now).toISOString(),
    lastTransitionTime: new Date(readySince).toISOString(),
  };
  return {
    status: {
      conditions: [
        ...NO_PRESSURE.map(([type, reason, message]) => ({
          type,
          status: 'False',
          reason,
          message,
          ...times,
        })),
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
          ...times,
        },
      ],
    },
  };
}

/** The Node's Ready condition as status and reason (status `Missing` when it has none). */
export function readyOf(node: k8s.V1Node): { status: string; reason: string; since: number | undefined } {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  if (!ready) return { status: 'Missing', reason: '', since: undefined };
  const since = ready.lastTransitionTime ? new Date(ready.lastTransitionTime).getTime() : Number.NaN;
  return { status: ready.status, reason: ready.reason ?? '', since: Number.isNaN(since) ? undefined : since };
}

/** Where a node-lifecycle controller's NotReady may fall, in ms, by what it is measured from. */
export interface NotReadyWindow {
  /** From the node's death (`stop()`). */
  fromStop: { min: number; max: number };
  /** From the last heartbeat the apiserver acknowledged (`lastHeartbeatAt()`). */
  fromLastHeartbeat: { min: number; max: number };
}

/**
 * The window the controller's logic allows, without informer or watch delays (add slack for
 * those): it marks the node at its first monitor tick after grace has passed since it saw the
 * last heartbeat, and the node died up to one renew interval (with the kubelet's 4 % jitter)
 * after that heartbeat.
 */
export function notReadyWindowMs(params: {
  gracePeriodSeconds: number;
  renewIntervalSeconds: number;
  monitorPeriodSeconds?: number;
}): NotReadyWindow {
  const grace = params.gracePeriodSeconds * 1000;
  const monitor = (params.monitorPeriodSeconds ?? NODE_MONITOR_PERIOD_SECONDS) * 1000;
  const renew = params.renewIntervalSeconds * 1000;
  return {
    fromStop: { min: Math.max(0, grace - renew), max: grace + monitor },
    fromLastHeartbeat: { min: grace, max: grace + monitor },
  };
}

/** A kubelet's liveness signals for one Node, until `stop()`. */
export interface KubeletStandIn {
  readonly node: string;
  /** Epoch ms of the last Lease renewal the apiserver acknowledged (its renewTime). */
  lastHeartbeatAt(): number;
  /**
   * The node dies: no renewal or status patch is sent after this, and one in flight is
   * aborted (it may still have reached the apiserver: a heartbeat sent before death).
   * Returns the epoch ms it stopped. Idempotent; later calls return the first time.
   */
  stop(): number;
}

/**
 * Heartbeats for `node` as its kubelet would: registers the Node if it does not exist (no kwok
 * annotation, so kwok leaves it alone), sets Ready=True, creates the Lease, and from then on
 * renews the Lease every renew interval and re-posts the status every status report interval.
 * Resolves once the node is Ready and the Lease exists.
 */
export async function startKubeletStandIn(
  kc: k8s.KubeConfig,
  node: string,
  options: KubeletStandInOptions = {},
): Promise<KubeletStandIn> {
  const timing = heartbeatTiming(options);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const abort = new AbortController();
  const signal = abort.signal;

  const registered = await registerNode(core, node, signal);
  const current = readyOf(registered);
  const readySince = current.status === 'True' && current.since !== undefined ? current.since : Date.now();
  const postStatus = async (): Promise<void> => {
    await core.patchNodeStatus(
      { name: node, body: readyStatusPatch(Date.now(), readySince) },
      requestOptions({ signal, patch: 'application/strategic-merge-patch+json' }),
    );
  };
  let lastHeartbeat = 0;
  const renewLease = async (): Promise<void> => {
    const now = Date.now();
    try {
      await coordination.patchNamespacedLease(
        {
          name: node,
          namespace: NODE_LEASE_NAMESPACE,
          body: leaseRenewPatch(node, timing.leaseDurationSeconds, now),
        },
        requestOptions({ signal, patch: 'application/merge-patch+json' }),
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await createLease(coordination, registered, timing.leaseDurationSeconds, now, signal);
    }
    lastHeartbeat = now;
  };

  await postStatus();
  await renewLease();

  let stoppedAt: number | undefined;
  const timers = new Set<NodeJS.Timeout>();
  const after = (ms: number, action: () => void): void => {
    if (stoppedAt !== undefined) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      action();
    }, ms);
    timers.add(timer);
  };
  // A failed beat is retried after a doubling backoff (never later than the next regular one).
  const repeat = (what: string, beat: () => Promise<void>, intervalMs: number, backoffMs = 0): void =>
    after(backoffMs || intervalMs, () => {
      beat().then(
        () => repeat(what, beat, intervalMs),
        (error: unknown) => {
          if (stoppedAt !== undefined) return;
          log(
            `[kubelet-stand-in ${node}] ${what} failed: ${describeError(K8sApiError.from(error) ?? error)}`,
          );
          const next = Math.min(
            backoffMs ? backoffMs * 2 : RETRY_BACKOFF_START_MS,
            RETRY_BACKOFF_MAX_MS,
            intervalMs,
          );
          repeat(what, beat, intervalMs, next);
        },
      );
    });
  repeat('lease renewal', renewLease, timing.renewIntervalSeconds * 1000);
  repeat('status report', postStatus, timing.statusReportIntervalSeconds * 1000);

  return {
    node,
    lastHeartbeatAt: () => lastHeartbeat,
    stop: () => {
      if (stoppedAt !== undefined) return stoppedAt;
      stoppedAt = Date.now();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      abort.abort();
      return stoppedAt;
    },
  };
}

/** The Node, created as a kubelet registers it when missing; refuses one kwok manages. */
async function registerNode(core: k8s.CoreV1Api, node: string, signal: AbortSignal): Promise<k8s.V1Node> {
  let found: k8s.V1Node | undefined;
  try {
    found = await core.readNode({ name: node }, requestOptions({ signal }));
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  if (found) {
    if (found.metadata?.annotations?.[KWOK_ANNOTATION] !== undefined)
      throw new Error(
        `node ${node}: annotated ${KWOK_ANNOTATION}, so kwok heartbeats for it; use another node`,
      );
    return found;
  }
  return core.createNode(
    { body: { metadata: { name: node, labels: { 'kubernetes.io/hostname': node } } } },
    requestOptions({ signal }),
  );
}

async function createLease(
  coordination: k8s.CoordinationV1Api,
  node: k8s.V1Node,
  leaseDurationSeconds: number,
  now: number,
  signal: AbortSignal,
): Promise<void> {
  const name = node.metadata?.name ?? '';
  const uid = node.metadata?.uid;
  if (!uid) throw new Error(`node ${name}: the API returned no metadata.uid`);
  try {
    await coordination.createNamespacedLease(
      { namespace: NODE_LEASE_NAMESPACE, body: nodeLeaseBody({ name, uid }, leaseDurationSeconds, now) },
      requestOptions({ signal }),
    );
  } catch (error) {
    // Created in between (a renewal raced it): the next renewal patches it.
    if (!isAlreadyExists(error)) throw error;
  }
}

/** When a watcher saw the Node's Ready condition leave True, and what it became. */
export interface NodeNotReady {
  /** Epoch ms this process saw it. */
  at: number;
  /** Unknown (node-lifecycle controller: no heartbeat), False (kubelet says so) or Missing. */
  status: string;
  reason: string;
}

/**
 * Resolves when `node`'s Ready condition is not True (at once if it already is not); rejects
 * after `timeoutMs`, or if the Node is deleted. Lists then watches from that version, and
 * starts over if the watch ends.
 */
export function waitForNodeNotReady(
  kc: k8s.KubeConfig,
  node: string,
  timeoutMs: number,
): Promise<NodeNotReady> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const watch = new k8s.Watch(kc);
  return new Promise<NodeNotReady>((resolve, reject) => {
    let settled = false;
    let watching: AbortController | undefined;
    const finish = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      watching?.abort();
      outcome();
    };
    const timer = setTimeout(
      () => finish(() => reject(new Error(`node ${node}: still Ready after ${timeoutMs} ms`))),
      timeoutMs,
    );
    const check = (seen: k8s.V1Node): boolean => {
      const ready = readyOf(seen);
      if (ready.status === 'True') return false;
      const at = Date.now();
      finish(() => resolve({ at, status: ready.status, reason: ready.reason }));
      return true;
    };
    const follow = async (): Promise<void> => {
      const current = await core.readNode({ name: node });
      if (settled || check(current)) return;
      const controller = await watch.watch(
        '/api/v1/nodes',
        { fieldSelector: `metadata.name=${node}`, resourceVersion: current.metadata?.resourceVersion },
        (type: string, object: k8s.V1Node) => {
          if (type === 'DELETED')
            finish(() => reject(new Error(`node ${node}: deleted while waiting for NotReady`)));
          else if (type === 'ADDED' || type === 'MODIFIED') check(object);
        },
        () => {
          if (!settled) setTimeout(restart, 100);
        },
      );
      if (settled) controller.abort();
      else watching = controller;
    };
    const restart = (): void => {
      if (settled) return;
      follow().catch((error: unknown) => {
        if (settled) return;
        if (isNotFound(error)) finish(() => reject(new Error(`node ${node}: not found`)));
        else setTimeout(restart, 500);
      });
    };
    restart();
  });
}

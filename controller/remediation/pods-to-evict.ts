/**
 * Which pods of a node a drain evicts, as `kubectl drain --ignore-daemonsets
 * --delete-emptydir-data` would (pure). Left alone: DaemonSet pods (their controller ignores
 * the cordon and would put them straight back), mirror pods (the kubelet owns static pods;
 * the API cannot evict them), pods already terminating and finished pods. Pods with emptyDir
 * volumes are evicted (their scratch data goes with them) and pods without a controller too
 * (kubectl's `--force`): the node is failing, nothing on it is worth keeping.
 *
 * Per device, only the pods holding one of the failed devices are evicted, when the device
 * plugin's allocation can be read (allocation.ts); otherwise the whole node is drained.
 */
import { podsHoldingDevices } from './allocation.js';
import { podKey, type PodSummary } from './pod-client.js';

/**
 * Why a pod is not evicted: `daemonset`, `mirror`, `terminating` (already going: the drain
 * waits for it instead), `finished` (Succeeded or Failed), `other-devices` (per-device drain:
 * it holds none of the failed devices).
 */
export type PodSkipReason = 'daemonset' | 'mirror' | 'terminating' | 'finished' | 'other-devices';

/** A pod left alone, and why. */
export interface SkippedPod {
  /** `namespace/name`. */
  readonly pod: string;
  readonly why: PodSkipReason;
}

/**
 * What to drain: the whole node, or only the pods holding `devices` (resource ids such as
 * `Ascend910-3`) according to the allocation annotations `annotationKeys`.
 */
export type EvictionScope =
  | { readonly kind: 'node' }
  | {
      readonly kind: 'devices';
      readonly devices: readonly string[];
      readonly annotationKeys: readonly string[];
    };

/** The outcome of the selection. */
export interface EvictionSelection {
  /** The scope applied: `devices` only when the allocation was known, else `node`. */
  readonly scope: 'node' | 'devices';
  /** Pods to evict. */
  readonly evict: PodSummary[];
  /** Pods in scope already terminating: not evicted again, but the drain waits for them. */
  readonly waitFor: PodSummary[];
  /** Pods left alone, with why (the terminating ones among them). */
  readonly skipped: SkippedPod[];
}

/** Why `pod` is not evicted on a whole-node drain, or null when it is. The first rule that applies wins. */
export function skipReason(pod: PodSummary): PodSkipReason | null {
  if (pod.mirror) return 'mirror';
  if (pod.daemonSet) return 'daemonset';
  if (pod.phase === 'Succeeded' || pod.phase === 'Failed') return 'finished';
  if (pod.terminating) return 'terminating';
  return null;
}

/** Splits the pods of a node by `scope` (input order kept). */
export function podsToEvict(
  pods: readonly PodSummary[],
  scope: EvictionScope = { kind: 'node' },
): EvictionSelection {
  let holding: ReadonlySet<PodSummary> | undefined;
  if (scope.kind === 'devices') {
    const allocation = podsHoldingDevices(pods, scope.devices, scope.annotationKeys);
    if (allocation.known) holding = new Set(allocation.pods);
  }
  const evict: PodSummary[] = [];
  const waitFor: PodSummary[] = [];
  const skipped: SkippedPod[] = [];
  for (const pod of pods) {
    const why = skipReason(pod) ?? (holding && !holding.has(pod) ? 'other-devices' : null);
    if (why === null) evict.push(pod);
    else skipped.push({ pod: podKey(pod), why });
    if (why === 'terminating' && (!holding || holding.has(pod))) waitFor.push(pod);
  }
  return { scope: holding ? 'devices' : 'node', evict, waitFor, skipped };
}

/**
 * Which pods of a node a drain evicts, as `kubectl drain --ignore-daemonsets
 * --delete-emptydir-data` would (pure). Left alone: DaemonSet pods (their controller ignores
 * the cordon and would put them straight back), mirror pods (the kubelet owns static pods;
 * the API cannot evict them), pods already terminating and finished pods. Pods with emptyDir
 * volumes are evicted (their scratch data goes with them) and pods without a controller too
 * (kubectl's `--force`): the node is failing, nothing on it is worth keeping.
 *
 * Per device, only pods that ask for an accelerator are candidates, and of those the ones the
 * kubelet's PodResources names as holding a failed device (through the agent, CONTRACT §1.9),
 * plus, for a failed Ascend device, the ones whose allocation annotation names it (Volcano may
 * mount another device than the kubelet's pick: allocation.ts); for failed devices whose
 * holders are not known, the ones whose allocation annotation names a failed device, or names
 * none of that kind (allocation.ts: the spec decides whether a pod may hold a device, the
 * holders or the tenant-writable annotation only which). A pod with no readable annotation is
 * evicted itself; it never turns the drain into a whole-node one.
 */
import { holdersVerdict } from './allocation.js';
import { podKey, type PodSummary } from './pod-client.js';

/**
 * Why a pod is not evicted: `daemonset`, `mirror`, `terminating` (already going: the drain
 * waits for it instead), `finished` (Succeeded or Failed); per-device drains only:
 * `other-devices` (its allocation names only other devices), `no-accelerator` (it asks for no
 * accelerator resource, so no device plugin gave it one).
 */
export type PodSkipReason =
  'daemonset' | 'mirror' | 'terminating' | 'finished' | 'other-devices' | 'no-accelerator';

/** A pod left alone, and why. */
export interface SkippedPod {
  /** `namespace/name`. */
  readonly pod: string;
  readonly why: PodSkipReason;
}

/**
 * What to drain: the whole node, or only the pods that may hold `devices` (resource ids such
 * as `Ascend910-3`), located through the allocation annotations `annotationKeys`.
 */
export type EvictionScope =
  | { readonly kind: 'node' }
  | {
      readonly kind: 'devices';
      readonly devices: readonly string[];
      readonly annotationKeys: readonly string[];
      /** Who holds each failed device whose holders are known (resource id → `namespace/name`). */
      readonly holders?: ReadonlyMap<string, readonly string[]>;
    };

/** The outcome of the selection. */
export interface EvictionSelection {
  /** The scope applied (the one asked for). */
  readonly scope: 'node' | 'devices';
  /** Pods to evict. */
  readonly evict: PodSummary[];
  /**
   * Per device: the pods among `evict` (and `waitFor`) evicted because they ask for
   * accelerators without an allocation annotation naming the failed devices' kind.
   */
  readonly unknownAllocation: string[];
  /** Pods in scope already terminating: not evicted again, but the drain waits for them. */
  readonly waitFor: PodSummary[];
  /** Pods left alone, with why (the terminating ones among them). */
  readonly skipped: SkippedPod[];
}

const NO_HOLDERS: ReadonlyMap<string, readonly string[]> = new Map();

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
  const evict: PodSummary[] = [];
  const waitFor: PodSummary[] = [];
  const skipped: SkippedPod[] = [];
  const unknownAllocation: string[] = [];
  for (const pod of pods) {
    const verdict =
      scope.kind === 'devices'
        ? holdersVerdict(pod, scope.devices, scope.holders ?? NO_HOLDERS, scope.annotationKeys)
        : 'holder';
    const outOfScope = verdict === 'other-devices' || verdict === 'no-accelerator';
    const why = skipReason(pod) ?? (outOfScope ? verdict : null);
    if (why === null) evict.push(pod);
    else skipped.push({ pod: podKey(pod), why });
    if (why === 'terminating' && !outOfScope) waitFor.push(pod);
    if (verdict === 'unknown' && (why === null || why === 'terminating')) unknownAllocation.push(podKey(pod));
  }
  return { scope: scope.kind, evict, waitFor, skipped, unknownAllocation };
}

/**
 * Fault → cordon, as a watcher of Nodes sees it: with remediation on (mode cordon), when each
 * of the run's Nodes was first seen both unschedulable and carrying the controller's taint.
 * The remediation settings the run applies (the hot-reloaded ConfigMap) are here too.
 */
import * as k8s from '@kubernetes/client-node';
import { watchObjects } from '../../stack/index.js';
import type { InjectedFault } from './fleet.js';

/** The controller's cordon taint (controller/remediation: `taint: true`). */
export const CORDON_TAINT = 'npu-fault.io/unhealthy';

/**
 * Cordon mode for the run: every node with a failed device is cordoned and tainted. The
 * breaker's limit is raised to half the fleet, so that the run's faults (one a second, each on
 * a random node) measure the path rather than the breaker; nothing is ever uncordoned.
 */
export const REMEDIATION_YAML = `mode: cordon
taint: true
breaker:
  maxUnhealthyPercent: 50
`;

/** Applies REMEDIATION_YAML as the controllers' remediation ConfigMap in `namespace`. */
export async function applyCordonMode(core: k8s.CoreV1Api, namespace: string): Promise<void> {
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'npu-fault-remediation' }, data: { 'remediation.yaml': REMEDIATION_YAML } },
  });
}

/** Whether a Node is cordoned the way the controller cordons: unschedulable and tainted. */
export function isCordoned(node: k8s.V1Node): boolean {
  return node.spec?.unschedulable === true && (node.spec.taints ?? []).some((t) => t.key === CORDON_TAINT);
}

/**
 * Per injected fault, the ms from its start (`startOf`: its injection by default; undefined
 * leaves it out) to its node's cordon, for the faults that were the first on their node (a
 * later one finds the node cordoned already) and whose node was cordoned after it;
 * `cordonedAt` is the first time each node was seen cordoned.
 */
export function cordonLatencies(
  faults: readonly InjectedFault[],
  cordonedAt: ReadonlyMap<string, number>,
  startOf: (fault: InjectedFault) => number | undefined = (fault) => fault.injectedAt,
): number[] {
  const first = new Map<string, InjectedFault>();
  for (const fault of [...faults].sort((a, b) => a.injectedAt - b.injectedAt))
    if (!first.has(fault.node)) first.set(fault.node, fault);
  const out: number[] = [];
  for (const fault of first.values()) {
    const start = startOf(fault);
    const at = cordonedAt.get(fault.node);
    if (start !== undefined && at !== undefined && at >= start) out.push(at - start);
  }
  return out;
}

/** Watches the Nodes labelled `selector` and notes when each is first seen cordoned. */
export function watchCordons(
  kc: k8s.KubeConfig,
  selector: string,
): { cordonedAt: Map<string, number>; stop(): void } {
  const cordonedAt = new Map<string, number>();
  const watch = watchObjects<k8s.V1Node>(kc, '/api/v1/nodes', { labelSelector: selector }, (node, at) => {
    const name = node.metadata?.name;
    if (name && isCordoned(node) && !cordonedAt.has(name)) cordonedAt.set(name, at);
  });
  return { cordonedAt, stop: () => watch.stop() };
}

/**
 * Fault → cordon, as a watcher of Nodes sees it: with remediation on (mode cordon), when each
 * of the run's Nodes was first seen both unschedulable and carrying the controller's taint.
 * The remediation settings the run applies (the hot-reloaded ConfigMap) are here too.
 */
import * as k8s from '@kubernetes/client-node';
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
 * Per injected fault, the ms from its injection to its node's cordon, for the faults that
 * were the first on their node (a later one finds the node cordoned already) and whose node
 * was cordoned after it; `cordonedAt` is the first time each node was seen cordoned.
 */
export function cordonLatencies(
  faults: readonly InjectedFault[],
  cordonedAt: ReadonlyMap<string, number>,
): number[] {
  const first = new Map<string, InjectedFault>();
  for (const fault of [...faults].sort((a, b) => a.injectedAt - b.injectedAt))
    if (!first.has(fault.node)) first.set(fault.node, fault);
  const out: number[] = [];
  for (const fault of first.values()) {
    const at = cordonedAt.get(fault.node);
    if (at !== undefined && at >= fault.injectedAt) out.push(at - fault.injectedAt);
  }
  return out;
}

/** Watches the Nodes labelled `selector` and notes when each is first seen cordoned. */
export class CordonWatcher {
  readonly cordonedAt = new Map<string, number>();
  #abort: AbortController | undefined;
  #stopped = false;

  constructor(
    private readonly kc: k8s.KubeConfig,
    private readonly selector: string,
  ) {}

  start(resume?: string): void {
    if (this.#stopped) return;
    let version = resume;
    new k8s.Watch(this.kc)
      .watch(
        '/api/v1/nodes',
        { labelSelector: this.selector, ...(version ? { resourceVersion: version } : {}) },
        (type: string, node: k8s.V1Node) => {
          const at = Date.now();
          version = type === 'ERROR' ? undefined : (node.metadata?.resourceVersion ?? version);
          const name = node.metadata?.name;
          if (
            (type === 'ADDED' || type === 'MODIFIED') &&
            name &&
            isCordoned(node) &&
            !this.cordonedAt.has(name)
          )
            this.cordonedAt.set(name, at);
        },
        () => {
          if (!this.#stopped) setTimeout(() => this.start(version), 200).unref();
        },
      )
      .then(
        (controller) => {
          this.#abort = controller;
          if (this.#stopped) controller.abort();
        },
        () => setTimeout(() => this.start(version), 500).unref(),
      );
  }

  stop(): void {
    this.#stopped = true;
    this.#abort?.abort();
  }
}

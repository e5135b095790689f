/**
 * An agent's identity on the test control plane, as the DaemonSet would have it: an
 * accelerator Node, the ServiceAccount npu-fault-agent, a pod of it bound to the Node, and
 * pod-bound tokens with audience npu-fault (TokenReview then names the node in
 * `authentication.kubernetes.io/node-name`). Shared by test/setup/ and the pipeline demo.
 */
import * as k8s from '@kubernetes/client-node';

/** What createAgentIdentity made. */
export interface AgentIdentity {
  node: string;
  /** A new pod-bound token of npu-fault-agent for the agent's pod. */
  mintToken(expirationSeconds?: number): Promise<string>;
  /** Deletes the Node (namespaced objects go with the test namespace). */
  dispose(): Promise<void>;
}

/** How the Node is made. */
export interface AgentNodeOptions {
  /** Extended resources in the Node's capacity (default eight huawei.com/Ascend910). */
  capacity?: Record<string, string>;
  /** Annotate the Node for kwok (`kwok.x-k8s.io/node: fake`), which then runs it as a fake kubelet. */
  kwok?: boolean;
  /** Labels of the Node (the demo marks its objects for cleanup). */
  labels?: Record<string, string>;
}

/** Creates the Node `node`, the ServiceAccount and the pod `agent` in `namespace`. */
export async function createAgentIdentity(
  core: k8s.CoreV1Api,
  namespace: string,
  node: string,
  pod = 'agent',
  options: AgentNodeOptions = {},
): Promise<AgentIdentity> {
  await core.createNode({
    body: {
      metadata: {
        name: node,
        labels: options.labels,
        annotations: options.kwok ? { 'kwok.x-k8s.io/node': 'fake' } : undefined,
      },
      status: {
        capacity: options.capacity ?? { 'huawei.com/Ascend910': '8' },
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test' }],
      },
    },
  });
  await core
    .createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'npu-fault-agent' } } })
    .catch((error: unknown) => {
      if ((error as { code?: number }).code !== 409) throw error;
    });
  const created = await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: pod },
      spec: {
        nodeName: node,
        serviceAccountName: 'npu-fault-agent',
        containers: [{ name: 'agent', image: 'agent' }],
      },
    },
  });
  return {
    node,
    async mintToken(expirationSeconds = 600) {
      const minted = await core.createNamespacedServiceAccountToken({
        name: 'npu-fault-agent',
        namespace,
        body: {
          spec: {
            audiences: ['npu-fault'],
            expirationSeconds,
            boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: pod, uid: created.metadata?.uid },
          },
        },
      });
      return minted.status?.token ?? '';
    },
    async dispose() {
      await core.deleteNode({ name: node }).catch(() => undefined);
    },
  };
}

/**
 * The plane's processes as data: for each, its binary, its arguments (built from the plane's
 * ports and files), the line announcing it, its readiness check and what must happen once it
 * is ready. startControlPlane starts them in this order, each once the previous is ready;
 * stopping goes the other way (clients first, etcd last).
 */
import { join } from 'node:path';
import { readVerifiedApiserverCertificate, writeKubeconfig, type PlaneTokens } from './credentials.js';
import { probe } from './processes.js';
import type { ControlPlaneState, PlanePaths } from './state.js';

/**
 * Turns kube-controller-manager's node-lifecycle controller on: it marks a Node's Ready
 * condition Unknown once neither its Lease in kube-node-lease nor its status has been renewed
 * for the grace period, then taints it node.kubernetes.io/unreachable (NoExecute), which
 * evicts pods after their tolerationSeconds. Off by default: the plane's Nodes are kwok's
 * (heartbeats on a 40 s Lease) or have no kubelet at all, and tests must not see them evicted.
 */
export interface NodeLifecycleOptions {
  /**
   * --node-monitor-grace-period in seconds. Unset: the upstream default, 50 s since
   * Kubernetes 1.32 (40 s before; kubernetes/kubernetes#126287), so on every supported plane
   * (1.34 to 1.37, hack/build-control-plane.sh).
   */
  gracePeriodSeconds?: number;
}

/** Everything a component's arguments and checks may refer to while the plane starts. */
export interface Plane {
  /** The plane's state; the apiserver fills in `caPem` once it is ready. */
  state: ControlPlaneState;
  paths: PlanePaths;
  tokens: PlaneTokens;
  /** Set: the node-lifecycle controller runs (see NodeLifecycleOptions); unset: it is off. */
  nodeLifecycle?: NodeLifecycleOptions;
  /** The minor of the Kubernetes release the plane runs (NPU_FAULT_K8S_VERSION): flags differ. */
  kubernetesMinor: number;
}

/** One process of the plane. */
export interface ComponentSpec {
  /** The binary in the bin dir; it also names the log file, the pid in state.json and errors. */
  name: string;
  /** The progress line printed before it starts. */
  announce(plane: Plane): string;
  args(plane: Plane): string[];
  /** One look at whether it is ready: true, or what was seen instead (for the error). */
  checkReady(plane: Plane): Promise<true | string>;
  /** Runs once it is ready, before the next component starts. */
  afterReady?(plane: Plane): Promise<void>;
}

const loopbackUrl = (port: number): string => `http://127.0.0.1:${port}`;

const etcd: ComponentSpec = {
  name: 'etcd',
  announce: ({ state }) => `etcd on 127.0.0.1:${state.ports.etcd} (data ${state.etcdDataDir})`,
  args: ({ state: { ports, etcdDataDir } }) => [
    '--name=npu-fault',
    `--data-dir=${etcdDataDir}`,
    `--listen-client-urls=${loopbackUrl(ports.etcd)}`,
    `--advertise-client-urls=${loopbackUrl(ports.etcd)}`,
    `--listen-peer-urls=${loopbackUrl(ports.etcdPeer)}`,
    `--initial-advertise-peer-urls=${loopbackUrl(ports.etcdPeer)}`,
    `--initial-cluster=npu-fault=${loopbackUrl(ports.etcdPeer)}`,
    // Test data is thrown away at `down`: durability only costs time.
    '--unsafe-no-fsync',
    '--log-level=warn',
    '--quota-backend-bytes=4294967296',
  ],
  checkReady: async ({ state }) => {
    const r = await probe(`${loopbackUrl(state.ports.etcd)}/health`);
    return r.status === 200 && r.body.includes('true') ? true : `${r.status} ${r.body}`;
  },
};

const kubeApiserver: ComponentSpec = {
  name: 'kube-apiserver',
  announce: ({ state }) => `kube-apiserver on ${state.server}`,
  args: ({ state: { ports }, paths }) => [
    `--etcd-servers=${loopbackUrl(ports.etcd)}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${ports.apiserver}`,
    // Without a certificate of its own it generates a self-signed one here.
    `--cert-dir=${paths.apiserverCertDir}`,
    `--token-auth-file=${paths.tokenFile}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${paths.serviceAccountPublicKey}`,
    `--service-account-signing-key-file=${paths.serviceAccountKey}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--allow-privileged=true',
    '--profiling=false',
    '--endpoint-reconciler-type=none',
    '--enable-priority-and-fairness=false',
  ],
  checkReady: async ({ state, tokens }) => {
    const r = await probe(`${state.server}/readyz`, { token: tokens.admin, caPem: undefined });
    return r.status === 200 ? true : `${r.status} ${r.body.slice(0, 200)}`;
  },
  // Its certificate exists only now: the kubeconfigs that trust it can be written.
  afterReady: async ({ state, paths, tokens }) => {
    state.caPem = await readVerifiedApiserverCertificate(paths.apiserverCert, state.server, tokens.admin);
    const cluster = { server: state.server, caPem: state.caPem };
    await writeKubeconfig(paths.adminKubeconfig, { ...cluster, user: 'admin', token: tokens.admin });
    await writeKubeconfig(paths.controllerManagerKubeconfig, {
      ...cluster,
      user: 'kube-controller-manager',
      token: tokens.controllerManager,
    });
  },
};

/** Throws (one line, naming the field) unless the options are usable; startControlPlane checks before spawning anything. */
export function checkNodeLifecycleOptions(options: NodeLifecycleOptions): void {
  const seconds = options.gracePeriodSeconds;
  if (seconds !== undefined && (!Number.isInteger(seconds) || seconds <= 0))
    throw new Error(`nodeLifecycle.gracePeriodSeconds: expected a positive whole number, got ${seconds}`);
}

function gracePeriodFlags(options: NodeLifecycleOptions | undefined): string[] {
  if (options?.gracePeriodSeconds === undefined) return [];
  checkNodeLifecycleOptions(options);
  return [`--node-monitor-grace-period=${options.gracePeriodSeconds}s`];
}

/**
 * The controllers to run: all but node IPAM and cloud nodes (no CIDRs, no cloud), and node
 * lifecycle unless asked. kube-controller-manager 1.37 no longer has the cloud node lifecycle
 * controller (it lives in cloud-controller-manager alone) and refuses to start when a
 * --controllers entry names a controller it does not know, so it is only turned off before.
 */
function controllersFlag(nodeLifecycle: NodeLifecycleOptions | undefined, kubernetesMinor: number): string {
  const off = ['-node-ipam-controller'];
  if (kubernetesMinor < 37) off.push('-cloud-node-lifecycle-controller');
  if (!nodeLifecycle) off.unshift('-node-lifecycle-controller');
  return `--controllers=*,${off.join(',')}`;
}

const kubeControllerManager: ComponentSpec = {
  name: 'kube-controller-manager',
  announce: ({ nodeLifecycle }) => {
    if (!nodeLifecycle) return 'kube-controller-manager (node-lifecycle controller off)';
    const grace = nodeLifecycle.gracePeriodSeconds;
    return `kube-controller-manager (node-lifecycle controller on, grace ${grace === undefined ? 'default' : `${grace}s`})`;
  },
  args: ({ paths, nodeLifecycle, kubernetesMinor }) => [
    `--kubeconfig=${paths.controllerManagerKubeconfig}`,
    controllersFlag(nodeLifecycle, kubernetesMinor),
    ...gracePeriodFlags(nodeLifecycle),
    '--leader-elect=false',
    '--secure-port=0',
    `--service-account-private-key-file=${paths.serviceAccountKey}`,
    `--root-ca-file=${paths.apiserverCert}`,
    '--use-service-account-credentials=true', // each controller acts under its own RBAC
    '--concurrent-gc-syncs=5',
  ],
  // The default ServiceAccount appears once its controllers run.
  checkReady: async ({ state, tokens }) => {
    const r = await probe(`${state.server}/api/v1/namespaces/default/serviceaccounts/default`, {
      token: tokens.admin,
      caPem: state.caPem,
    });
    return r.status === 200 ? true : `default ServiceAccount: ${r.status}`;
  },
};

const kwok: ComponentSpec = {
  name: 'kwok',
  announce: ({ state }) =>
    `kwok (nodes annotated kwok.x-k8s.io/node=fake), server 127.0.0.1:${state.ports.kwok}`,
  args: ({ state: { ports, binDir }, paths }) => [
    `--kubeconfig=${paths.adminKubeconfig}`,
    // kwok's fast node and pod stages, written by build-control-plane.sh.
    `--config=${join(binDir, 'kwok-stages.yaml')}`,
    '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
    `--server-address=127.0.0.1:${ports.kwok}`,
    '--cidr=10.244.0.0/16',
    '--node-ip=127.0.0.1',
  ],
  checkReady: async ({ state }) => {
    const r = await probe(`${loopbackUrl(state.ports.kwok)}/healthz`);
    return r.status === 200 ? true : `${r.status} ${r.body.slice(0, 100)}`;
  },
};

/** The plane's processes in start order: each needs the one before it to be ready. */
export const COMPONENTS: readonly ComponentSpec[] = [etcd, kubeApiserver, kubeControllerManager, kwok];

/**
 * A real Kubernetes control plane on loopback for tests and local runs: etcd,
 * kube-apiserver, kube-controller-manager and kwok (fake kubelets), built from Go modules by
 * hack/build-control-plane.sh and cached outside the repository.
 *
 * `startControlPlane` spawns the processes of control-plane/components.ts one after another,
 * each once the one before is ready, then leaves `<stateDir>/kubeconfig` and
 * `<stateDir>/state.json`. `stopControlPlane` kills them and removes all state, etcd's data
 * included; `killControlPlaneSync` does the same from an exit handler.
 *
 * This file is the only door: the parts live in control-plane/ (state directory and ports,
 * processes and their readiness, credentials, the component table, the binaries).
 */
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { buildControlPlane, planeVersions } from './control-plane/binaries.js';
import {
  COMPONENTS,
  checkNodeLifecycleOptions,
  type NodeLifecycleOptions,
  type Plane,
} from './control-plane/components.js';
import { newPlaneTokens, writeAuthFiles } from './control-plane/credentials.js';
import { isFromBinDir, spawnLogged, stopProcess, waitUntilReady } from './control-plane/processes.js';
import {
  etcdDataParent,
  freeLoopbackPorts,
  logFileOf,
  planePaths,
  readControlPlaneState,
  readControlPlaneStateSync,
  writeControlPlaneState,
  type ControlPlaneState,
} from './control-plane/state.js';

export { buildControlPlane, kubectl, planeVersions, type PlaneVersions } from './control-plane/binaries.js';
export type { NodeLifecycleOptions } from './control-plane/components.js';
export { isOrphaned, readControlPlaneState, type ControlPlaneState } from './control-plane/state.js';

export interface StartOptions {
  /** Where certs, tokens, logs and the kubeconfig go; created if missing. */
  stateDir: string;
  /**
   * Start the processes in their own process groups, so they outlive this process
   * (`npm run cluster:up`). Tests leave it false: a Ctrl-C then reaches them too.
   */
  detached?: boolean;
  /** Progress lines (stderr by default). */
  log?: (line: string) => void;
  /** Give up waiting for readiness after this long. */
  timeoutMs?: number;
  /**
   * Run kube-controller-manager's node-lifecycle controller (Nodes go Ready=Unknown when
   * their kubelet stops heartbeating); off when unset. Only for a plane of its own: it would
   * mark every Node without a heartbeat, the shared test plane's included.
   */
  nodeLifecycle?: NodeLifecycleOptions;
}

const DEFAULT_READINESS_TIMEOUT_MS = 120_000;
const START_ATTEMPTS = 3;

/**
 * Starts etcd, kube-apiserver, kube-controller-manager and kwok; resolves once all are ready.
 * If any step fails, whatever was already started is stopped again (no leaked processes).
 */
export async function startControlPlane(options: StartOptions): Promise<ControlPlaneState> {
  if (options.nodeLifecycle) checkNodeLifecycleOptions(options.nodeLifecycle);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      await stopControlPlane(options.stateDir).catch(() => undefined);
      // Free ports are picked before the processes bind them; another process may take one
      // in between. That is worth another try with fresh ports, anything else is not.
      const portTaken = error instanceof Error && /address already in use/i.test(error.message);
      if (!portTaken || attempt >= START_ATTEMPTS) throw error;
    }
  }
}

async function startOnce(options: StartOptions): Promise<ControlPlaneState> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const paths = planePaths(options.stateDir);
  await stopControlPlane(paths.stateDir).catch(() => undefined);
  const binDir = await buildControlPlane(log);
  // Which release runs is a setting (NPU_FAULT_K8S_VERSION): every log says which it was.
  const versions = await planeVersions();
  log(
    `[control-plane] Kubernetes ${versions.kubernetes}, etcd ${versions.etcd}, kwok ${versions.kwok}` +
      ` (NPU_FAULT_K8S_VERSION=${process.env.NPU_FAULT_K8S_VERSION ?? 'newest'})`,
  );
  // The readiness deadline starts after the (possibly cold, minutes-long) build.
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS);
  await mkdir(paths.logDir, { recursive: true });
  await mkdir(paths.certDir, { recursive: true });

  const ports = await freeLoopbackPorts(['etcd', 'etcdPeer', 'apiserver', 'kwok']);
  const tokens = newPlaneTokens();
  const state: ControlPlaneState = {
    stateDir: paths.stateDir,
    kubeconfig: paths.adminKubeconfig,
    server: `https://127.0.0.1:${ports.apiserver}`,
    adminToken: tokens.admin,
    caPem: '', // the apiserver generates its certificate when it starts
    etcdDataDir: await mkdtemp(join(etcdDataParent(), 'npu-fault-etcd-')),
    pids: {},
    ports,
    binDir,
    ownerPid: process.pid,
  };
  await writeControlPlaneState(state); // from here on, stopControlPlane can find and remove everything
  await writeAuthFiles(paths, tokens);

  const plane: Plane = {
    state,
    paths,
    tokens,
    nodeLifecycle: options.nodeLifecycle,
    kubernetesMinor: kubernetesMinor(versions.kubernetes),
  };
  for (const component of COMPONENTS) {
    log(`[control-plane] ${component.announce(plane)}`);
    const logFile = logFileOf(paths, component.name);
    const binary = join(binDir, component.name);
    const pid = await spawnLogged(binary, component.args(plane), logFile, options.detached ?? false);
    state.pids[component.name] = pid;
    await writeControlPlaneState(state);
    await waitUntilReady(component.name, () => component.checkReady(plane), { deadline, pid, logFile });
    await component.afterReady?.(plane);
  }
  log(`[control-plane] ready: KUBECONFIG=${state.kubeconfig}`);
  return state;
}

/** 37 for "v1.37.2": the component table's flags depend on it. */
function kubernetesMinor(release: string): number {
  const minor = /^v1\.(\d+)\./.exec(release)?.[1];
  if (minor === undefined) throw new Error(`not a Kubernetes release: ${release}`);
  return Number(minor);
}

/**
 * The recorded pids in stop order: the reverse of start order (state.json records them as
 * they start), so clients go before etcd.
 */
function pidsInStopOrder(state: ControlPlaneState): number[] {
  return Object.values(state.pids).reverse();
}

/** Stops every process of the control plane in `stateDir` and removes its state. Idempotent. */
export async function stopControlPlane(stateDir: string): Promise<void> {
  const state = await readControlPlaneState(stateDir);
  if (state) {
    // Each pid is checked just before it is signalled: stopping the ones before takes time.
    for (const pid of pidsInStopOrder(state)) if (isFromBinDir(pid, state.binDir)) await stopProcess(pid);
    await rm(state.etcdDataDir, { recursive: true, force: true });
  }
  await rm(resolve(stateDir), { recursive: true, force: true });
}

/**
 * Last-resort cleanup for a process that is exiting (a Ctrl-C or SIGTERM of the test
 * runner, when no async teardown can run): SIGKILLs the control plane of `stateDir` and
 * removes its state, synchronously.
 */
export function killControlPlaneSync(stateDir: string): void {
  const state = readControlPlaneStateSync(stateDir);
  if (!state) return;
  for (const pid of pidsInStopOrder(state)) if (isFromBinDir(pid, state.binDir)) process.kill(pid, 'SIGKILL');
  rmSync(state.etcdDataDir, { recursive: true, force: true });
  rmSync(resolve(stateDir), { recursive: true, force: true });
}

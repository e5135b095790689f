/**
 * Jest global setup of the integration project: one real control plane per test run
 * (hack/control-plane.ts), shared by every integration test file. Each file gets its own
 * namespace through test/setup/cluster.ts.
 *
 * Set NPU_FAULT_USE_EXISTING_CLUSTER=true to run against the cluster of $KUBECONFIG instead
 * (it must grant cluster-admin; test namespaces are created and deleted there).
 *
 * NPU_FAULT_K8S_VERSION=oldest|newest|v1.x.y selects the plane's release (newest by default;
 * hack/build-control-plane.sh has the table); the tests learn it from
 * NPU_FAULT_TEST_K8S_VERSION.
 */
import { mkdtemp, readdir } from 'node:fs/promises';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  buildControlPlane,
  isOrphaned,
  planeVersions,
  killControlPlaneSync,
  startControlPlane,
  stopControlPlane,
} from '../../hack/control-plane.js';

const PREFIX = 'npu-fault-test-plane-';

/** Stops control planes that earlier runs left behind (a run killed before its teardown). */
async function removeLeftovers(): Promise<void> {
  for (const entry of await readdir(tmpdir())) {
    const dir = join(tmpdir(), entry);
    // Only orphans: another test run on this machine may own a plane that is still in use.
    if (entry.startsWith(PREFIX) && (await isOrphaned(dir)))
      await stopControlPlane(dir).catch(() => undefined);
  }
}

/**
 * Jest runs no teardown when it is interrupted; kill the plane synchronously on the way out
 * so no etcd keeps holding tmpfs memory. The normal path is the async global teardown.
 */
function cleanUpOnExit(stateDir: string): void {
  process.once('exit', () => killControlPlaneSync(stateDir));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killControlPlaneSync(stateDir);
      process.exit(128 + constants.signals[signal]);
    });
  }
}

export default async function globalSetup(): Promise<void> {
  if (process.env.NPU_FAULT_USE_EXISTING_CLUSTER === 'true') {
    if (!process.env.KUBECONFIG) throw new Error('NPU_FAULT_USE_EXISTING_CLUSTER=true needs KUBECONFIG');
    process.env.NPU_FAULT_TEST_KUBECONFIG = process.env.KUBECONFIG;
    // kubectl (for kustomize and dry runs) still comes from the local build cache.
    process.env.NPU_FAULT_TEST_BIN_DIR = await buildControlPlane((l) => process.stderr.write(`${l}\n`));
    return;
  }
  await removeLeftovers();
  const stateDir = await mkdtemp(join(tmpdir(), PREFIX));
  cleanUpOnExit(stateDir);
  const started = Date.now();
  const state = await startControlPlane({ stateDir, log: (l) => process.stderr.write(`${l}\n`) });
  process.stderr.write(`[control-plane] up in ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
  process.env.NPU_FAULT_TEST_STATE_DIR = stateDir;
  process.env.NPU_FAULT_TEST_KUBECONFIG = state.kubeconfig;
  process.env.NPU_FAULT_TEST_BIN_DIR = state.binDir;
  process.env.NPU_FAULT_TEST_K8S_VERSION = (await planeVersions()).kubernetes;
}

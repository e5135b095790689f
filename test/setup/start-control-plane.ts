/**
 * Jest global setup of the integration project: one real control plane per test run
 * (hack/control-plane.ts), shared by every integration test file. Each file gets its own
 * namespace through test/setup/cluster.ts.
 *
 * Set NPU_FAULT_USE_EXISTING_CLUSTER=true to run against the cluster of $KUBECONFIG instead
 * (it must grant cluster-admin; test namespaces are created and deleted there).
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildControlPlane, startControlPlane } from '../../hack/control-plane.js';

export default async function globalSetup(): Promise<void> {
  if (process.env.NPU_FAULT_USE_EXISTING_CLUSTER === 'true') {
    if (!process.env.KUBECONFIG) throw new Error('NPU_FAULT_USE_EXISTING_CLUSTER=true needs KUBECONFIG');
    process.env.NPU_FAULT_TEST_KUBECONFIG = process.env.KUBECONFIG;
    // kubectl (for kustomize and dry runs) still comes from the local build cache.
    process.env.NPU_FAULT_TEST_BIN_DIR = await buildControlPlane((l) => process.stderr.write(`${l}\n`));
    return;
  }
  const stateDir = await mkdtemp(join(tmpdir(), 'npu-fault-test-plane-'));
  const started = Date.now();
  const state = await startControlPlane({ stateDir, log: (l) => process.stderr.write(`${l}\n`) });
  process.stderr.write(`[control-plane] up in ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
  process.env.NPU_FAULT_TEST_STATE_DIR = stateDir;
  process.env.NPU_FAULT_TEST_KUBECONFIG = state.kubeconfig;
  process.env.NPU_FAULT_TEST_BIN_DIR = state.binDir;
}

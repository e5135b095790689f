/** Jest global teardown: stops the control plane global-setup started (never an existing cluster). */
import { stopControlPlane } from '../../hack/control-plane.js';

export default async function globalTeardown(): Promise<void> {
  const stateDir = process.env.NPU_FAULT_TEST_STATE_DIR;
  if (stateDir && process.env.NPU_FAULT_KEEP_CLUSTER !== 'true') await stopControlPlane(stateDir);
}

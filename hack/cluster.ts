/**
 * `npm run cluster:up` / `npm run cluster:down`: a local control plane for hands-on work.
 * State (kubeconfig, logs, certs) lives in .cluster/ at the repository root, or in
 * $NPU_FAULT_CLUSTER_DIR.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readControlPlaneState, startControlPlane, stopControlPlane } from './control-plane.js';

const stateDir = resolve(
  process.env.NPU_FAULT_CLUSTER_DIR ?? join(dirname(fileURLToPath(import.meta.url)), '..', '.cluster'),
);

async function main(command: string | undefined): Promise<number> {
  switch (command) {
    case 'up': {
      const started = Date.now();
      const state = await startControlPlane({ stateDir, detached: true });
      process.stdout.write(
        `control plane up in ${((Date.now() - started) / 1000).toFixed(1)}s\n` +
          `export KUBECONFIG=${state.kubeconfig}\n` +
          `kubectl: ${join(state.binDir, 'kubectl')}\n` +
          `logs: ${join(stateDir, 'logs')}\n`,
      );
      return 0;
    }
    case 'down':
      await stopControlPlane(stateDir);
      process.stdout.write('control plane stopped, state removed\n');
      return 0;
    case 'status': {
      const state = await readControlPlaneState(stateDir);
      process.stdout.write(state ? `running: KUBECONFIG=${state.kubeconfig}\n` : 'not running\n');
      return state ? 0 : 1;
    }
    default:
      process.stderr.write('usage: hack/cluster.ts up|down|status\n');
      return 2;
  }
}

main(process.argv[2]).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);

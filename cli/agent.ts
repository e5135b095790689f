/**
 * `npu-fault agent`: runs the node agent until SIGTERM or SIGINT. In the DaemonSet its
 * settings come from the environment (NPU_FAULT_NODE from spec.nodeName, the function's URL,
 * the projected token's path); out of a cluster, `--node`, `--function-url`, `--token-file`.
 */
import { createNodeAgent, agentConfigSchema } from '../agent/index.js';
import { createLogger, createRegistry, describeError, systemClock } from '../platform/index.js';
import { isExit } from './args.js';
import { componentSpec, loadComponentConfig, runUntilSignalled } from './component.js';
import { EXIT_DATA, type CliIO, type Subcommand } from './io.js';

/** The agent's command line (built from its config schema). */
export const AGENT = componentSpec(
  'agent',
  'run the node agent (samples the accelerators, pushes snapshots, serves the node’s status to its pods)',
  `Runs the node agent: about once a second it reads the node's accelerators (hdc, npu-smi or
nvidia-smi; "auto" picks by the PCI devices present), follows the kernel log for XIDs, PCIe AER
and device removal (sending a snapshot at once when one appears), and POSTs hdc.health/v1
snapshots to the ingest function with its pod-bound token. Pods on the node read the node's
published status at :8081/v1/fault and /v1/fault/stream (Server-Sent Events).

A simulated node with a fault-injection API (POST /v1/sim/faults) for demos and tests; the
function must run with --allow-simulated-collectors. The fault API asks for the bearer token in
--sim-fault-token-file, which is required unless --listen is a loopback address:
  npx npu-fault agent --collector sim --sim-enabled --sim-kind 910B --node node-a \\
    --function-url http://127.0.0.1:8090 --token-file ./token --listen 127.0.0.1:8081 \\
    --sim-fault-token-file ./fault-token
  curl -H "Authorization: Bearer $(cat fault-token)" -H 'content-type: application/json' \\
    -d '{"kind":"offline","device":"npu3"}' 127.0.0.1:8081/v1/sim/faults`,
  agentConfigSchema,
  'Exit codes: 0 stopped cleanly, 1 a part failed or bad input, 2 bad configuration.',
);

/** Runs the agent until a termination signal. */
export const agent: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  const loaded = loadComponentConfig(AGENT, agentConfigSchema, args, io, process.env);
  if (isExit(loaded)) return loaded.exit;
  const config = loaded;
  const log = createLogger({ level: config.logLevel, component: 'agent' });
  let built;
  try {
    // Event-loop lag sampled 10 times a second, not 100: the agent's CPU budget is 2% of a core.
    const registry = createRegistry('agent', { eventLoopLagResolutionMs: 100 });
    built = await createNodeAgent({ config, clock: systemClock, log, registry });
  } catch (error) {
    io.stderr(`npu-fault agent: ${describeError(error).split('\n')[0]}\n`);
    return EXIT_DATA;
  }
  log.info({ node: config.node, collector: built.collector, function: config.functionUrl }, 'starting');
  return await runUntilSignalled(built.runnables, { gracePeriodMs: config.shutdownGraceSeconds * 1000, log });
};

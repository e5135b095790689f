/**
 * `npu-fault function`: runs one ingest function until SIGTERM or SIGINT, then finishes the
 * requests in flight and exits. In a pod it uses the in-cluster configuration and listens on
 * `$PORT` (the Knative convention) unless `--listen` says otherwise; outside, `--kubeconfig`
 * and `--controllers <identity>=<url>,…` or the cluster's EndpointSlices.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createIngestFunction, functionConfigSchema } from '../functions/index.js';
import { createLogger, createRegistry, describeError, systemClock } from '../platform/index.js';
import { isExit } from './args.js';
import { componentSpec, loadComponentConfig, runUntilSignalled } from './component.js';
import { loadKubeConfig } from './kube.js';
import { EXIT_USAGE, type CliIO, type Subcommand } from './io.js';

/** The namespace of the pod's ServiceAccount, when running in one. */
const POD_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The function's command line (built from its config schema). */
export const FUNCTION = componentSpec(
  'function',
  'run an ingest function (validates agents’ snapshots, forwards them to the controllers)',
  `Runs one ingest function: agents POST hdc.health/v1 snapshots to /v1/snapshots (one, a
batch, or a CloudEvent) with a pod-bound token; it checks the token (TokenReview, bound to the
snapshot's node), validates, and sends every observation to every ready controller replica,
answering with the leader's answer once the leader accepted it (503 + Retry-After otherwise).
/healthz, /readyz and /metrics are on the same port. Snapshots of the simulated collector
("sim", \`npu-fault agent --collector sim\`) are refused (422) unless --allow-simulated-collectors.

Locally, with two controllers running:
  npx npu-fault function --kubeconfig <file> --listen 127.0.0.1:8090 --controllers c1=http://127.0.0.1:8080,c2=http://127.0.0.1:8081`,
  functionConfigSchema,
  'Exit codes: 0 stopped cleanly, 1 a part failed or bad input, 2 bad configuration.',
);

/** Runs the function until a termination signal. */
export const ingestFunction: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  // In a pod, the namespace defaults to the pod's own (flags and NPU_FAULT_NAMESPACE win).
  const env = { ...process.env };
  if (env.NPU_FAULT_NAMESPACE === undefined && existsSync(POD_NAMESPACE_FILE))
    env.NPU_FAULT_NAMESPACE = readFileSync(POD_NAMESPACE_FILE, 'utf8').trim();
  const loaded = loadComponentConfig(FUNCTION, functionConfigSchema, args, io, env);
  if (isExit(loaded)) return loaded.exit;
  const config = loaded;
  let listen = config.listen;
  if (listen === undefined) {
    const port = Number(env.PORT ?? 8080);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      io.stderr(`npu-fault function: PORT: expected a port number, got "${env.PORT}"\n`);
      return EXIT_USAGE;
    }
    listen = { host: undefined, port };
  }
  const log = createLogger({ level: config.logLevel, component: 'function' });
  const kubeConfig = loadKubeConfig('function', config.kubeconfig, io);
  if (isExit(kubeConfig)) return kubeConfig.exit;
  let fn;
  try {
    fn = createIngestFunction({
      config,
      listen,
      kubeConfig,
      clock: systemClock,
      log,
      registry: createRegistry('function'),
    });
  } catch (error) {
    io.stderr(`npu-fault function: ${describeError(error).split('\n')[0]}\n`);
    return EXIT_USAGE;
  }
  log.info({ namespace: config.namespace, controllers: config.controllers }, 'starting');
  return await runUntilSignalled(fn.runnables, { gracePeriodMs: config.shutdownGraceSeconds * 1000, log });
};

/**
 * `npu-fault controller`: runs one controller replica (controller/app.ts) until SIGTERM or
 * SIGINT, then stops every part within the grace period, releasing the Lease.
 *
 * In a pod it uses the in-cluster configuration; outside, `--kubeconfig <file>` (or
 * $KUBECONFIG / ~/.kube/config), the way controller-runtime managers run locally.
 */
import { readFileSync } from 'node:fs';
import { DEFAULT_RULES, type Rules } from '../contracts/index.js';
import { parseRules, RulesError } from '../core/rules/index.js';
import {
  controllerConfigSchema,
  createController,
  createFileJournal,
  identityOf,
} from '../controller/index.js';
import { createLogger, createRegistry, describeError, systemClock } from '../platform/index.js';
import { isExit } from './args.js';
import { componentSpec, loadComponentConfig, runUntilSignalled } from './component.js';
import { loadKubeConfig } from './kube.js';
import { EXIT_DATA, type CliIO, type Subcommand } from './io.js';

/** The controller's command line (built from its config schema). */
export const CONTROLLER = componentSpec(
  'controller',
  'run a controller replica (leader election, engine, published ConfigMap, Node status)',
  `Runs one controller replica: it accepts observations from the ingest functions on --listen
(POST /v1/observations), runs the detection engine on them (every replica: hot standby), and,
while it holds the Lease, publishes the status ConfigMap, its mirrors, the NPUHealthy Node
condition and Events. /metrics, /healthz and /readyz are on --metrics-listen.

Locally, against \`npm run cluster:up\`:
  npx npu-fault controller --kubeconfig <file> --identity me --listen 127.0.0.1:8080 --metrics-listen 127.0.0.1:9090`,
  controllerConfigSchema,
  'Exit codes: 0 stopped cleanly, 1 a part failed or bad input (rules file), 2 bad configuration.',
);

/** Runs the controller until a termination signal. */
export const controller: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  const loaded = loadComponentConfig(CONTROLLER, controllerConfigSchema, args, io, process.env);
  if (isExit(loaded)) return loaded.exit;
  const config = loaded;
  let fallbackRules: Rules = DEFAULT_RULES;
  if (config.rules !== undefined) {
    try {
      fallbackRules = parseRules(readFileSync(config.rules, 'utf8'));
    } catch (error) {
      const why = error instanceof RulesError ? error.message : describeError(error);
      io.stderr(`npu-fault controller: ${config.rules}: ${why.split('\n')[0]}\n`);
      return EXIT_DATA;
    }
  }
  const identity = identityOf(config, process.env);
  const log = createLogger({ level: config.logLevel, component: 'controller' }).child({ identity });
  const kubeConfig = loadKubeConfig('controller', config.kubeconfig, io);
  if (isExit(kubeConfig)) return kubeConfig.exit;
  const journal =
    config.recordObservations !== undefined
      ? createFileJournal(config.recordObservations, log, { maxBytes: config.recordObservationsMaxBytes })
      : undefined;
  const app = createController({
    config,
    identity,
    kubeConfig,
    clock: systemClock,
    log,
    registry: createRegistry('controller'),
    fallbackRules,
    ...(journal ? { journal } : {}),
  });
  log.info({ namespace: config.namespace, lease: config.lease }, 'starting');
  return await runUntilSignalled(
    { groups: app.groups },
    {
      gracePeriodMs: config.shutdownGraceSeconds * 1000,
      log,
      ...(journal ? { afterStop: () => journal.close() } : {}),
    },
  );
};

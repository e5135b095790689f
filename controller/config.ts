/**
 * The controller's configuration: flags > NPU_FAULT_* environment > a YAML/JSON file (--config)
 * > these defaults (platform/config.ts). Every field's flag and variable come from its path:
 * `lease.durationSeconds` is `--lease-duration-seconds` and `NPU_FAULT_LEASE_DURATION_SECONDS`.
 */
import { hostname } from 'node:os';
import { z } from 'zod';
import { CONTROLLER_TOKEN_AUDIENCE, STATUS_NAMESPACE } from '../contracts/index.js';
import { listenAddressSchema, logLevelSchema, type DeepReadonly } from '../platform/index.js';
import { mindClusterConfigSchema } from './mindcluster/index.js';
import { leaderElectionConfigSchema } from './leader-election/index.js';
import { mirrorsConfigSchema, publisherConfigSchema } from './publisher/index.js';
import { remediationConfigSchema } from './remediation/index.js';
import { nodeWatchConfigSchema } from './watch/index.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The controller's settings. */
export const controllerConfigSchema = z.strictObject({
  kubeconfig: z
    .string()
    .min(1)
    .optional()
    .describe('kubeconfig file (default: in-cluster config, else $KUBECONFIG or ~/.kube/config)'),
  identity: z
    .string()
    .min(1)
    .max(253)
    .optional()
    .describe(
      "this replica's identity in the Lease and in the document (default: $POD_NAME, else the hostname)",
    ),
  namespace: z
    .string()
    .regex(DNS_LABEL, 'must be a DNS label (a namespace name)')
    .default(STATUS_NAMESPACE)
    .describe('namespace of the status and rules ConfigMaps'),
  deviceTaintsGrant: z
    .string()
    .max(253)
    .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a ClusterRole name')
    .default('npu-fault-controller-device-taints')
    .describe(
      'the ClusterRole granting device taints (k8s/controller/device-taints): the DeviceTaintRules written are its dependents, deleted with it',
    ),
  listen: listenAddressSchema.prefault(':8080').describe('observations endpoint (POST /v1/observations)'),
  maxConnections: z
    .number()
    .int()
    .positive()
    .default(1024)
    .describe('most connections open at once on the observations port; more are closed'),
  tls: z
    .strictObject({
      certFile: z
        .string()
        .min(1)
        .optional()
        .describe(
          'serve the observations port over HTTPS with this PEM certificate (a mounted Secret, e.g. from cert-manager; re-read every minute)',
        ),
      keyFile: z.string().min(1).optional().describe("the certificate's PEM private key"),
    })
    .refine((tls) => (tls.certFile === undefined) === (tls.keyFile === undefined), {
      message: 'certFile and keyFile go together',
      path: ['keyFile'],
    }),
  metricsListen: listenAddressSchema.prefault(':9090').describe('/metrics, /healthz and /readyz'),
  logLevel: logLevelSchema.default('info').describe('log level'),
  rules: z
    .string()
    .min(1)
    .optional()
    .describe('rules file used when the rules ConfigMap is absent (default: built-in rules)'),
  recordObservations: z
    .string()
    .min(1)
    .optional()
    .describe('append every accepted snapshot to this file (JSON lines, replayable with `npu-fault replay`)'),
  recordObservationsMaxBytes: z
    .number()
    .int()
    .positive()
    .default(1024 ** 3)
    .describe('stop recording observations past this many bytes'),
  tickMs: z
    .number()
    .int()
    .min(10)
    .max(5000)
    .default(200)
    .describe('how often overlay deadlines are checked (ms)'),
  shutdownGraceSeconds: z
    .number()
    .positive()
    .default(15)
    .describe(
      'on SIGTERM, how long parts may take to stop (more than the renew deadline: the Lease is released)',
    ),
  lease: leaderElectionConfigSchema,
  auth: z.strictObject({
    allowedUsers: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'identities (TokenReview usernames) allowed to post observations (default: the ServiceAccount npu-fault-function of --namespace)',
      ),
    audiences: z
      .array(z.string().min(1))
      .default([CONTROLLER_TOKEN_AUDIENCE])
      .describe(
        "audiences the ingest function's token must carry on POST /v1/observations (the function mounts a projected token of this audience)",
      ),
    cacheSeconds: z.number().positive().default(60).describe('how long a token review is trusted'),
  }),
  nodes: nodeWatchConfigSchema.extend({
    statusResyncSeconds: z
      .number()
      .positive()
      .default(30)
      .describe("how often every Node's NPUHealthy condition and latched record are re-checked"),
  }),
  publish: publisherConfigSchema,
  mirrors: mirrorsConfigSchema.extend({
    enabled: z.boolean().default(true).describe('mirror the status ConfigMap into labelled namespaces'),
  }),
  /** Self-healing (off by default); the ConfigMap npu-fault-remediation overrides it while present. */
  remediation: remediationConfigSchema,
  /** MindCluster's device-info ConfigMaps as observations (off by default; docs/mindcluster.md). */
  mindcluster: mindClusterConfigSchema,
});

/** The controller's settings after defaults. */
export type ControllerConfig = DeepReadonly<z.output<typeof controllerConfigSchema>>;

/** This replica's identity: the configured one, else $POD_NAME, else the hostname. */
export function identityOf(
  config: ControllerConfig,
  env: Readonly<Record<string, string | undefined>>,
): string {
  return config.identity ?? (env.POD_NAME || hostname());
}

/**
 * The ingest function's configuration: flags > NPU_FAULT_* environment > a YAML/JSON file
 * (--config) > these defaults (platform/config.ts). In a Knative Service the port comes from
 * `$PORT` (cli/function.ts reads it when no listen address is given).
 */
import { z } from 'zod';
import { DEFAULT_MAX_DEVICES_PER_NODE, MAX_DEVICES_PER_NODE, STATUS_NAMESPACE } from '../contracts/index.js';
import { listenAddressSchema, logLevelSchema, type DeepReadonly } from '../platform/index.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The function's settings. */
export const functionConfigSchema = z.strictObject({
  kubeconfig: z
    .string()
    .min(1)
    .optional()
    .describe('kubeconfig file (default: in-cluster config, else $KUBECONFIG or ~/.kube/config)'),
  namespace: z
    .string()
    .regex(DNS_LABEL, 'must be a DNS label (a namespace name)')
    .default(STATUS_NAMESPACE)
    .describe("the controllers' namespace (their Service, EndpointSlices and Lease)"),
  listen: listenAddressSchema
    .optional()
    .describe('POST /v1/snapshots, /healthz, /readyz, /metrics (default :$PORT, else :8080)'),
  logLevel: logLevelSchema.default('info').describe('log level'),
  controllers: z
    .array(z.string().min(1))
    .default([])
    .describe(
      'static controller replicas as <identity>=<url> (default: discover them through EndpointSlices)',
    ),
  controllerService: z
    .string()
    .regex(DNS_LABEL, 'must be a DNS label (a Service name)')
    .default('npu-fault-controller')
    .describe("the controllers' headless Service, whose EndpointSlices name the replicas"),
  lease: z
    .string()
    .min(1)
    .default('npu-fault-controller')
    .describe("the controllers' Lease, whose holder is the leader"),
  tokenFile: z
    .string()
    .min(1)
    .optional()
    .describe(
      "this function's ServiceAccount token, re-read per request (default: the kubeconfig user's token)",
    ),
  shutdownGraceSeconds: z
    .number()
    .positive()
    .default(15)
    .describe('on SIGTERM, how long requests in flight may take'),
  allowSimulatedCollectors: z
    .boolean()
    .default(false)
    .describe(
      'accept snapshots of the simulated collector (collector "sim": demos and tests); off, they are refused with 422',
    ),
  auth: z.strictObject({
    allowedUsers: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'agent identities allowed to post (default: the ServiceAccount npu-fault-agent of --namespace)',
      ),
    audiences: z
      .array(z.string().min(1))
      .default(['npu-fault'])
      .describe('audiences an agent token must carry'),
    cacheSeconds: z.number().positive().default(60).describe('how long a token review is trusted'),
    maxConcurrentReviews: z
      .number()
      .int()
      .positive()
      .default(16)
      .describe('most TokenReviews of unknown tokens in flight at once'),
    maxQueuedReviews: z
      .number()
      .int()
      .nonnegative()
      .default(64)
      .describe('most waiting for one of those; beyond, 503 with Retry-After at once'),
  }),
  limits: z.strictObject({
    maxBodyBytes: z
      .number()
      .int()
      .positive()
      .default(1024 * 1024)
      .describe('largest request body'),
    maxBatch: z
      .number()
      .int()
      .positive()
      .max(1000)
      .default(500)
      .describe("most snapshots in one request (at most 1,000, the controllers' limit)"),
    maxConnections: z
      .number()
      .int()
      .positive()
      .default(4096)
      .describe("most connections open at once (agents' keep-alive connections included); more are closed"),
    maxDevicesPerNode: z
      .number()
      .int()
      .min(1)
      .max(MAX_DEVICES_PER_NODE)
      .default(DEFAULT_MAX_DEVICES_PER_NODE)
      .describe(
        "most devices (chips) one snapshot may list, 422 beyond: keep it equal to the controllers' rules max_devices_per_node",
      ),
  }),
  forward: z.strictObject({
    batchWindowMs: z
      .number()
      .nonnegative()
      .default(20)
      .describe('snapshots arriving within this are sent together'),
    flushWhenIdle: z
      .boolean()
      .default(true)
      .describe(
        'send at once when the leader has nothing in flight (lowest latency; more requests under load)',
      ),
    leaderIntervalMs: z
      .number()
      .nonnegative()
      .default(20)
      .describe(
        'with flush-when-idle, least time between two batches (fewer, larger requests to the leader under load)',
      ),
    followerWindowMs: z
      .number()
      .nonnegative()
      .default(20)
      .describe(
        "longest a batch waits to share a follower's request with later ones (no caller waits on a follower)",
      ),
    leaderTimeoutMs: z
      .number()
      .positive()
      .default(2000)
      .describe('answer 503 when no leader accepted within this'),
    maxQueuedBatches: z
      .number()
      .int()
      .positive()
      .default(100)
      .describe('batches waiting per replica before the oldest is dropped'),
  }),
});

/** The function's settings after defaults. */
export type FunctionConfig = DeepReadonly<z.output<typeof functionConfigSchema>>;

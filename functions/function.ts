/**
 * The ingest function, assembled: the agent-facing app (functions/app/) in front of the
 * forwarder (functions/forwarder/), on one port that also serves /healthz, /readyz and
 * /metrics (Knative gives a Service one port). Stateless: its only state is caches (token
 * reviews, the replicas and the leader it follows), so it scales and restarts freely.
 */
import * as k8s from '@kubernetes/client-node';
import {
  createHttpServer,
  tokenFromFile,
  type Clock,
  type HttpServer,
  type Logger,
  type Registry,
  type Runnable,
} from '../platform/index.js';
import {
  createKubeListWatchClient,
  createIssuerKeyCache,
  createLocalTokenCheck,
  createTokenReviewMetrics,
  createTokenReviewer,
  kubeIssuerKeys,
  kubeTokenReview,
  type TokenReviewer,
} from '../platform/k8s/index.js';
import { createFunctionApp, agentUser } from './app/index.js';
import type { FunctionConfig } from './config.js';
import {
  createEndpointSliceReplicaSource,
  createForwarder,
  createLeaseLeaderSource,
  createStaticReplicaSource,
  endpointSlicesCollection,
  leaseCollection,
  parseControllers,
  type RunningForwarder,
} from './forwarder/index.js';

/** What the function is built from (cli/function.ts builds these from the command line). */
export interface FunctionDeps {
  config: FunctionConfig;
  /** Where to listen (the config's, else $PORT, else 8080). */
  listen: { host?: string | undefined; port: number };
  kubeConfig: k8s.KubeConfig;
  clock: Clock;
  log: Logger;
  registry: Registry;
}

/** The assembled function. */
export interface IngestFunction {
  runnables: Runnable[];
  server: HttpServer;
  forwarder: RunningForwarder;
}

/** Builds every part; run `runnables` with runAll. */
export function createIngestFunction(deps: FunctionDeps): IngestFunction {
  const { config, kubeConfig, clock, log, registry } = deps;
  const replicas =
    config.controllers.length > 0
      ? createStaticReplicaSource(parseControllers(config.controllers.join(',')))
      : createEndpointSliceReplicaSource(
          {
            client: createKubeListWatchClient(
              kubeConfig,
              endpointSlicesCollection(
                kubeConfig.makeApiClient(k8s.DiscoveryV1Api),
                config.namespace,
                config.controllerService,
              ),
            ),
            clock,
            log: log.child({ part: 'endpointslices' }),
            registry,
          },
          // With appProtocol https on the Service's port, the replicas' certificate is the Service's.
          { serverName: `${config.controllerService}.${config.namespace}.svc` },
        );
  // Out of a cluster with a static list the Lease is still the authority on who leads, when
  // it can be read; answers of the replicas fill in otherwise (forwarder/leader-tracker.ts).
  const lease = createLeaseLeaderSource({
    client: createKubeListWatchClient(
      kubeConfig,
      leaseCollection(kubeConfig.makeApiClient(k8s.CoordinationV1Api), config.namespace, config.lease),
    ),
    clock,
    log: log.child({ part: 'lease' }),
    registry,
  });
  // The forwarder runs its replica and leader sources itself (forwarder.ts start()).
  const forwarder = createForwarder(
    {
      replicas,
      lease,
      token: tokenSource(config.tokenFile, kubeConfig, clock),
      clock,
      log: log.child({ part: 'forwarder' }),
      registry,
    },
    {
      batchWindowMs: config.forward.batchWindowMs,
      flushWhenIdle: config.forward.flushWhenIdle,
      leaderIntervalMs: config.forward.leaderIntervalMs,
      followerWindowMs: config.forward.followerWindowMs,
      leaderTimeoutMs: config.forward.leaderTimeoutMs,
      maxQueuedBatches: config.forward.maxQueuedBatches,
    },
  );
  const allowedUsers =
    config.auth.allowedUsers.length > 0 ? config.auth.allowedUsers : [agentUser(config.namespace)];
  // A token not cached is first checked against the apiserver's published keys: garbage,
  // another audience or account, or a token bound to no node is refused without a review, so
  // a flood of them never takes a review an agent needs (platform/k8s/local-token-check.ts).
  // Those that pass cost the apiserver at most maxConcurrentReviews requests at a time.
  const reviewMetrics = createTokenReviewMetrics(registry, () => reviewer, 'function');
  const reviewer: TokenReviewer = createTokenReviewer({
    review: kubeTokenReview(kubeConfig.makeApiClient(k8s.AuthenticationV1Api)),
    clock,
    ttlMs: config.auth.cacheSeconds * 1000,
    audiences: config.auth.audiences,
    maxConcurrent: config.auth.maxConcurrentReviews,
    maxQueued: config.auth.maxQueuedReviews,
    onOutcome: reviewMetrics.onOutcome,
    localCheck: createLocalTokenCheck({
      keys: createIssuerKeyCache({
        fetchKeys: kubeIssuerKeys(kubeConfig),
        clock,
        onKeysRead: reviewMetrics.onKeysRead,
      }),
      audiences: config.auth.audiences,
      subjects: allowedUsers,
      requireNode: true,
      clock,
    }),
  });
  const handler = createFunctionApp(
    { authenticate: reviewer.authenticate, forwarder, clock, log, registry },
    {
      allowedUsers,
      agentNamespace: config.namespace,
      maxBatch: config.limits.maxBatch,
      maxBodyBytes: config.limits.maxBodyBytes,
      maxDevicesPerNode: config.limits.maxDevicesPerNode,
      allowSimulatedCollectors: config.allowSimulatedCollectors,
    },
  );
  const server = createHttpServer({
    name: 'http',
    ...(deps.listen.host ? { host: deps.listen.host } : {}),
    port: deps.listen.port,
    log,
    registry,
    handler,
    limits: { maxConnections: config.limits.maxConnections },
  });
  server.addReadyCheck('controllers', () => forwarder.ready() || 'no controller replica or no leader known');
  // On SIGTERM the server first finishes the requests in flight (they still need the
  // forwarder), then the forwarder sends what is open and stops.
  const forwarderStop = new AbortController();
  const serving: Runnable = {
    name: server.name,
    async start(signal) {
      try {
        await server.start(signal);
      } finally {
        forwarderStop.abort(signal.reason);
      }
    },
  };
  const forwarding: Runnable = {
    name: forwarder.name,
    start: () => forwarder.start(forwarderStop.signal),
  };
  return { runnables: [serving, forwarding], server, forwarder };
}

/**
 * Where the function's own bearer token comes from: `--token-file`; in a pod, the projected
 * ServiceAccount token the in-cluster configuration names (read again once a minute: it
 * rotates); else the kubeconfig user's token.
 */
export function tokenSource(
  tokenFile: string | undefined,
  kubeConfig: k8s.KubeConfig,
  clock: Clock,
): () => string | Promise<string> {
  if (tokenFile !== undefined) return tokenFromFile(tokenFile, clock);
  const user = kubeConfig.getCurrentUser();
  const projected = (user?.authProvider as { config?: { tokenFile?: unknown } } | undefined)?.config
    ?.tokenFile;
  if (typeof projected === 'string' && projected !== '') return tokenFromFile(projected, clock);
  const token = user?.token;
  if (!token) throw new Error('no token: give --token-file, or a kubeconfig whose user has a token');
  return () => token;
}

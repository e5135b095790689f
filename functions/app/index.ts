/**
 * The ingest endpoint, `POST /v1/snapshots`: the one door into functions/app/.
 *
 * ```ts
 * const reviewer = createTokenReviewer({
 *   review: kubeTokenReview(kc.makeApiClient(k8s.AuthenticationV1Api)),
 *   audiences: ['npu-fault'],
 *   clock,
 * });
 * const handler = createFunctionApp(
 *   { authenticate: reviewer.authenticate, forwarder, clock, log, registry },
 *   { agentNamespace: 'ai-infra' },
 * );
 * createHttpServer({ name: 'function', port, log, registry, handler });
 * ```
 *
 * The wire contract (request and response schemas) is contracts/ingest.ts; testing.ts has a
 * fake Forwarder and request builders for tests.
 */
export {
  DEFAULT_AGENT_NAMESPACE,
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_MAX_BODY_BYTES,
  MAX_FORWARDED_RAW_BYTES,
  createFunctionApp,
  type ForwardResult,
  type Forwarder,
  type FunctionAppDeps,
  type FunctionAppOptions,
  type ObservationItems,
} from './app.js';
export { AGENT_SERVICE_ACCOUNT, NODE_NAME_EXTRA, agentUser } from './node-binding.js';

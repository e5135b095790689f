/**
 * The runtime skeleton every long-running component (agent, ingest function, controller) is
 * built from, and the only door other folders import platform/ through (Kubernetes helpers:
 * `platform/k8s/index.js`).
 *
 * - runnable: `Runnable`, `runAll` (start all, stop all, grace period, exit code), `onTerminationSignals`
 * - start-groups: `runGroups` (start groups in order once each is ready, stop in reverse); leader-only:
 *   `createLeaderOnly` (work started with each lease term, stopped when it ends)
 * - http-server: `/healthz`, `/readyz` with named checks, `/metrics`, an application handler
 * - config: `loadConfig` (flags > env > file > defaults), `ConfigError`, parseArgs helpers
 * - logger: pino JSON lines with secrets redacted; metrics: a private Registry per component
 * - clock: `Clock`, `systemClock`, `FakeClock`; errors: `AppError` family, Kubernetes API errors
 */
export { ABORTED, errorCode, rejectOnAbort, untilAborted } from './abort.js';
export { FakeClock, systemClock, type Cancel, type Clock } from './clock.js';
export { TOKEN_FILE_MAX_AGE_MS, tokenFromFile } from './token-file.js';
export {
  ConfigError,
  ENV_PREFIX,
  configFlagOptions,
  configFlags,
  describeConfig,
  loadConfig,
  parseConfigSection,
  type ConfigField,
  type ConfigFile,
  type ConfigFlags,
  type DeepReadonly,
  type FieldKind,
  type LoadConfigOptions,
} from './config.js';
export { parseConfigFile, type ParsedConfigFile } from './config-file.js';
export {
  AppError,
  HttpError,
  K8sApiError,
  TerminalError,
  describeError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isNotFound,
  isTerminal,
  isTooManyRequests,
  k8sStatusOf,
  toHttpResponse,
  type HttpErrorResponse,
} from './errors.js';
export {
  DEFAULT_LISTENER_LIMITS,
  createHttpServer,
  listenAddressSchema,
  listenerLimits,
  type HttpServer,
  type HttpServerOptions,
  type ListenerLimits,
  type ListenAddress,
  type ReadyCheck,
  type RequestHandler,
} from './http-server.js';
export { AnswerTooLargeError, readResponseText } from './bounded-read.js';
export {
  RequestBodyError,
  hasRequestBody,
  jsonRequestOf,
  parseJsonRequestBody,
  readRequestBody,
  requestCharset,
  type RawRequestBody,
} from './json-request-body.js';
export { requestPath } from './request-path.js';
export { postEndpoint, writeJsonAnswer, type PostEndpointMetrics } from './post-endpoint.js';
export { LinkedSet } from './linked-set.js';
export { nodeHttp, nodeHttps } from './node-http.js';
export {
  LOG_LEVELS,
  REDACTED,
  createLogger,
  isSecretKey,
  logLevelSchema,
  type LogLevel,
  type Logger,
  type LoggerOptions,
} from './logger.js';
export { Registry, createRegistry, metricPrefix } from './metrics.js';
export {
  createHeapTrimmer,
  v8FullCollection,
  v8MinorCollection,
  type FullCollection,
  type HeapTrimDeps,
} from './heap-trim.js';
export {
  errorDetail,
  httpFailureOf,
  sendHttpFailure,
  writeHttpFailure,
  wwwAuthenticate,
  type HttpFailure,
} from './http-failures.js';
export {
  describeZodIssue,
  findPollutingKey,
  isPlainObject,
  jsonPointer,
  kindOf,
  mayHoldPollutingKey,
} from './json-body.js';
export {
  onTerminationSignals,
  runAll,
  type RunOptions,
  type RunResult,
  type Runnable,
  type RunnableOutcome,
  type SignalSource,
} from './runnable.js';
export { runGroups, type GroupOutcome, type GroupsResult, type StartGroup } from './start-groups.js';
export { createLeaderOnly, type LeaderOnly, type LeaderOnlyOptions, type LeaderTerm } from './leader-only.js';

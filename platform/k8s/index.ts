/** The Kubernetes helpers of platform/: the one door other folders import them through. */
export { MicroTime, microTime } from './micro-time.js';
export { requestOptions, type PatchContentType } from './request-options.js';
export { shareConnections } from './shared-connections.js';
export {
  TOKEN_REVIEW_DEFAULTS,
  TokenReviewUnavailableError,
  UnauthenticatedError,
  bearerToken,
  createTokenReviewer,
  kubeTokenReview,
  type AuthenticatedUser,
  type ReviewToken,
  type TokenReviewOutcome,
  type TokenReviewStatus,
  type TokenReviewer,
  type TokenReviewerOptions,
} from './token-review.js';
export {
  LOCAL_TOKEN_CHECK_DEFAULTS,
  createIssuerKeyCache,
  createLocalTokenCheck,
  kubeIssuerKeys,
  type FetchIssuerKeys,
  type IssuerKeyCache,
  type IssuerKeyCacheOptions,
  type IssuerKeySet,
  type IssuerKeys,
  type LocalTokenCheck,
  type LocalTokenCheckOptions,
  type LocalVerdict,
} from './local-token-check.js';
export { createTokenReviewMetrics, type TokenReviewMetrics } from './token-review-metrics.js';
export {
  LIST_PAGE_SIZE,
  RESTART_REASONS,
  WATCH_DEFAULTS,
  configMapCollection,
  createKubeListWatchClient,
  createWatchLoop,
  namespacesCollection,
  nodesCollection,
  objectKey,
  resourceVersionOf,
  type KubeCollection,
  type ListPage,
  type ListWatchClient,
  type RawObject,
  type RestartReason,
  type WatchEvent,
  type WatchEventType,
  type WatchHandlers,
  type WatchLoop,
  type WatchLoopDeps,
  type WatchLoopOptions,
  type WatchRequest,
} from './watch/index.js';

/** The Kubernetes helpers of platform/: the one door other folders import them through. */
export { MicroTime, microTime } from './micro-time.js';
export { requestOptions, type PatchContentType } from './request-options.js';
export {
  TOKEN_REVIEW_DEFAULTS,
  TokenReviewUnavailableError,
  UnauthenticatedError,
  bearerToken,
  createTokenReviewer,
  kubeTokenReview,
  type AuthenticatedUser,
  type ReviewToken,
  type TokenReviewStatus,
  type TokenReviewer,
  type TokenReviewerOptions,
} from './token-review.js';

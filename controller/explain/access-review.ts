/**
 * Authorisation through the SubjectAccessReview API (authorization.k8s.io/v1): asks the
 * apiserver whether an authenticated user may perform a verb on a resource, so the
 * endpoint obeys the same RBAC as the rest of the cluster. The controller needs `create` on
 * `subjectaccessreviews` (k8s/controller/rbac.yaml).
 */
import * as k8s from '@kubernetes/client-node';
import { AppError, describeError } from '../../platform/index.js';
import { requestOptions, type AuthenticatedUser } from '../../platform/k8s/index.js';

/** What is asked: a namespaced resource request. */
export interface AccessAttributes {
  group: string;
  resource: string;
  verb: string;
  namespace: string;
  name?: string;
}

/** True when `user` may do `attributes`; throws a 503 AppError when the apiserver cannot say. */
export type AccessCheck = (user: AuthenticatedUser, attributes: AccessAttributes) => Promise<boolean>;

/** AccessCheck on a real apiserver; a review not answered within `timeoutMs` is a 503. */
export function kubeAccessReview(api: k8s.AuthorizationV1Api, timeoutMs = 5000): AccessCheck {
  return async (user, attributes) => {
    try {
      const review = await api.createSubjectAccessReview(
        {
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: user.username,
              uid: user.uid,
              groups: [...user.groups],
              extra: Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]])),
              resourceAttributes: { ...attributes },
            },
          },
        },
        requestOptions({ signal: AbortSignal.timeout(timeoutMs) }),
      );
      return review.status?.allowed === true && review.status.denied !== true;
    } catch (error) {
      throw new AppError('access_review_unavailable', `SubjectAccessReview failed: ${describeError(error)}`, {
        status: 503,
        cause: error,
      });
    }
  };
}

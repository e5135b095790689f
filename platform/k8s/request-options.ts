/**
 * Per-request options for client-node 2.x calls: cancellation (an AbortSignal, which
 * client-node's generated APIs do not take directly) and the Content-Type of a patch.
 */
import * as k8s from '@kubernetes/client-node';

/** How a patch body is to be read by the apiserver. */
export type PatchContentType =
  'application/merge-patch+json' | 'application/strategic-merge-patch+json' | 'application/json-patch+json';

/** Options of one request: cancelled when `signal` aborts; `patch` sets the patch's Content-Type. */
export function requestOptions(options: {
  signal?: AbortSignal;
  patch?: PatchContentType;
}): k8s.ConfigurationOptions {
  const { signal, patch } = options;
  const middleware: k8s.ObservableMiddleware = {
    pre: (request) => {
      if (signal) request.setSignal(signal);
      if (patch) request.setHeaderParam('Content-Type', patch);
      return new k8s.Observable(Promise.resolve(request));
    },
    post: (response) => new k8s.Observable(Promise.resolve(response)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

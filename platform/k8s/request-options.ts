/**
 * Per-request options for client-node 2.x calls: cancellation (an AbortSignal, which
 * client-node's generated APIs do not take directly) and the Content-Type of a patch.
 */
import * as k8s from '@kubernetes/client-node';

/** How a patch body is to be read by the apiserver. */
export type PatchContentType =
  'application/merge-patch+json' | 'application/strategic-merge-patch+json' | 'application/json-patch+json';

/** The answer a caller that discards it gets instead: an empty object, read in no time. */
const EMPTY_ANSWER: k8s.ResponseBody = {
  text: () => Promise.resolve('{}'),
  binary: () => Promise.resolve(Buffer.from('{}')),
  stream: () => null,
};

/**
 * Options of one request: cancelled when `signal` aborts; `patch` sets the patch's
 * Content-Type; `discardAnswer`: a successful answer's body is read off the connection but
 * not parsed, and the call resolves with an empty object. For writes whose answer nobody
 * reads: client-node would parse and type-walk the whole object (a patched Node, a few KiB,
 * costs more CPU than the request itself). Errors are parsed as before.
 */
export function requestOptions(options: {
  signal?: AbortSignal;
  patch?: PatchContentType;
  discardAnswer?: boolean;
}): k8s.ConfigurationOptions {
  const { signal, patch, discardAnswer } = options;
  const middleware: k8s.ObservableMiddleware = {
    pre: (request) => {
      if (signal) request.setSignal(signal);
      if (patch) request.setHeaderParam('Content-Type', patch);
      return new k8s.Observable(Promise.resolve(request));
    },
    post: (response) => {
      const ok = response.httpStatusCode >= 200 && response.httpStatusCode < 300;
      if (!discardAnswer || !ok) return new k8s.Observable(Promise.resolve(response));
      return new k8s.Observable(
        // Read to the end (as text: client-node's binary() is broken on undici), so the
        // connection is free for the next request.
        response.body
          .text()
          .then(() => new k8s.ResponseContext(response.httpStatusCode, response.headers, EMPTY_ANSWER)),
      );
    },
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

/**
 * The gRPC channel behind client.ts, loaded at its first call: @grpc/grpc-js with the kubelet's
 * proto (api.proto, compiled in descriptor.ts).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PodResourcesError, type PodResourcesClient, type PodResourcesClientOptions } from './client.js';
import { PODRESOURCES_DESCRIPTOR } from './descriptor.js';

/** The proto as proto-loader gives it: field names as in the proto, absent lists as []. */
export const PODRESOURCES_PACKAGE = protoLoader.fromJSON(PODRESOURCES_DESCRIPTOR, {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
});

/** The PodResourcesLister service, as the client and the fake server (testing.ts) share it. */
export const PODRESOURCES_SERVICE = PODRESOURCES_PACKAGE['v1.PodResourcesLister'] as grpc.ServiceDefinition;

/** A channel to the socket `options.socket` (grpc-js dials at the first call). */
export function openPodResourcesChannel(options: PodResourcesClientOptions): PodResourcesClient {
  const Client = grpc.makeGenericClientConstructor(PODRESOURCES_SERVICE, 'PodResourcesLister');
  const client = new Client(`unix://${options.socket}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': options.maxMessageBytes,
    'grpc.initial_reconnect_backoff_ms': 500,
    'grpc.max_reconnect_backoff_ms': 5000,
    // One attempt per read: the reader's next period is the retry.
    'grpc.enable_retries': 0,
  });
  const list = PODRESOURCES_SERVICE.List;
  if (list === undefined) throw new Error('PodResourcesLister has no List in the vendored proto');
  return {
    list: (signal) =>
      new Promise((resolve, reject) => {
        if (signal?.aborted) {
          reject(new PodResourcesError('error', 'aborted'));
          return;
        }
        const call = client.makeUnaryRequest(
          list.path,
          list.requestSerialize,
          list.responseDeserialize,
          {},
          new grpc.Metadata(),
          { deadline: Date.now() + options.timeoutMs },
          (error, value) => {
            signal?.removeEventListener('abort', cancel);
            if (error) reject(failure(error, options));
            else resolve(value);
          },
        );
        const cancel = (): void => call.cancel();
        signal?.addEventListener('abort', cancel, { once: true });
      }),
    close: () => client.close(),
  };
}

/** A gRPC error as a one-line PodResourcesError. */
function failure(error: grpc.ServiceError, options: PodResourcesClientOptions): PodResourcesError {
  const details = (error.details || error.message).split('\n')[0]?.slice(0, 200) ?? '';
  switch (error.code) {
    case grpc.status.UNAVAILABLE:
      return new PodResourcesError('unavailable', `kubelet socket ${options.socket} unavailable: ${details}`);
    case grpc.status.DEADLINE_EXCEEDED:
      return new PodResourcesError(
        'timeout',
        `no answer from ${options.socket} within ${options.timeoutMs} ms`,
      );
    case grpc.status.RESOURCE_EXHAUSTED:
      return new PodResourcesError('too-large', `answer over ${options.maxMessageBytes} bytes: ${details}`);
    case grpc.status.INTERNAL:
      // grpc-js reports an answer it cannot decode as INTERNAL.
      return new PodResourcesError('malformed', `answer not a ListPodResourcesResponse: ${details}`);
    default:
      return new PodResourcesError(
        'error',
        `List failed (${grpc.status[error.code] ?? error.code}): ${details}`,
      );
  }
}

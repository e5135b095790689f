/**
 * The kubelet's PodResources API over its unix socket (`/var/lib/kubelet/pod-resources/
 * kubelet.sock`), through @grpc/grpc-js and the kubelet's own proto (grpc-channel.ts). One
 * call, `List`, with a deadline per call and a bounded answer. The channel reconnects by itself
 * (grpc-js, backoff capped at 5 s); a call while the socket is absent or the kubelet restarts
 * fails at once as `unavailable`, it never waits for the socket.
 *
 * grpc-js and the proto are loaded at the first call (about 19 MiB of RSS in a jitless Node):
 * an agent that never reads the socket (simulated, or `podResources.enabled: false`) never pays.
 */
/** How a failed call failed (the reads metric's `result`). */
export type ListFailure = 'unavailable' | 'timeout' | 'too-large' | 'malformed' | 'error';

/** A failed `List`, with why in one line. */
export class PodResourcesError extends Error {
  constructor(
    readonly result: ListFailure,
    message: string,
  ) {
    super(message);
    this.name = 'PodResourcesError';
  }
}

/** What the client is given. */
export interface PodResourcesClientOptions {
  /** The kubelet's socket (a path). */
  readonly socket: string;
  /** One call may take this long. */
  readonly timeoutMs: number;
  /** The largest answer read; a larger one fails as `too-large`. */
  readonly maxMessageBytes: number;
}

/** The client: `list` resolves the decoded ListPodResourcesResponse (to be checked by holders.ts). */
export interface PodResourcesClient {
  list(signal?: AbortSignal): Promise<unknown>;
  close(): void;
}

/** A client of the socket `options.socket` (nothing is loaded or dialled until the first call). */
export function createPodResourcesClient(options: PodResourcesClientOptions): PodResourcesClient {
  let channel: Promise<PodResourcesClient> | undefined;
  let closed = false;
  const open = (): Promise<PodResourcesClient> =>
    (channel ??= import('./grpc-channel.js').then(({ openPodResourcesChannel }) => {
      const opened = openPodResourcesChannel(options);
      if (closed) opened.close();
      return opened;
    }));
  return {
    list: async (signal) => (await open()).list(signal),
    close: () => {
      closed = true;
      void channel?.then((opened) => opened.close());
    },
  };
}

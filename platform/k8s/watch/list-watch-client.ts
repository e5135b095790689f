/**
 * The narrow view of the Kubernetes API one list+watch loop needs: list one collection (all
 * its pages, at one resourceVersion) and watch it from a resourceVersion. The collection
 * (path, selectors) is fixed when the client is built, so the loop never names it.
 * `kube-list-watch-client.ts` implements it on client-node; `fake-list-watch-client.ts` in
 * memory, for tests.
 */

/** An object as the API sends it; every field is read defensively (the API is a boundary). */
export interface RawObject {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly resourceVersion?: string;
    readonly [field: string]: unknown;
  };
  readonly [field: string]: unknown;
}

/** The event types of a Kubernetes watch. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/**
 * One watch event. For ERROR the object is a Status (`{ kind: 'Status', code: 410, reason:
 * 'Expired', … }`); for BOOKMARK it carries only `metadata.resourceVersion`.
 */
export interface WatchEvent {
  readonly type: WatchEventType | (string & {});
  readonly object: RawObject;
}

/** What a watch asks the server for. */
export interface WatchRequest {
  /** Resume after this resourceVersion (the list's, then the last event's). */
  readonly resourceVersion: string;
  /** The server ends the watch after this many seconds (jittered by the caller, as client-go does). */
  readonly timeoutSeconds: number;
  /** Ask for BOOKMARK events (the apiserver sends one about every minute: a quiet watch's heartbeat). */
  readonly allowWatchBookmarks: boolean;
  /**
   * A client-side backstop: the connection is dropped after this long without data. The
   * loop's own watchdog, shorter, normally acts first.
   */
  readonly idleTimeoutMs: number;
}

/**
 * List and watch of one collection. Failures are thrown as K8sApiError when the API
 * answered (so `isGone`, `isForbidden` work), as they came otherwise.
 */
export interface ListWatchClient {
  /** Names the collection in logs (`/api/v1/nodes`, with its selectors). */
  readonly description: string;
  /**
   * Lists every page of the collection, handing each page's items to `onPage` as it comes
   * (so at most one page of whole objects is held), and returns the resourceVersion the list
   * is consistent at.
   */
  list(
    onPage: (items: readonly RawObject[]) => void,
    signal: AbortSignal,
  ): Promise<{ resourceVersion: string }>;
  /**
   * Watches from `request.resourceVersion`, calling `onEvent` for each event in order.
   * Resolves when the server ends the stream or `signal` aborts (then no further event is
   * delivered); rejects when the watch cannot start or breaks.
   */
  watch(request: WatchRequest, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<void>;
}

/** The cache key of an object: `namespace/name`, or `name` for a cluster-scoped one; undefined without a name. */
export function objectKey(object: RawObject): string | undefined {
  const name = object.metadata?.name;
  if (typeof name !== 'string' || name === '') return undefined;
  const namespace = object.metadata?.namespace;
  return typeof namespace === 'string' && namespace !== '' ? `${namespace}/${name}` : name;
}

/** The object's resourceVersion, or undefined when it has none. */
export function resourceVersionOf(object: RawObject | undefined): string | undefined {
  const version = object?.metadata?.resourceVersion;
  return typeof version === 'string' && version !== '' ? version : undefined;
}

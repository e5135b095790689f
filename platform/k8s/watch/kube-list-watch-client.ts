/**
 * ListWatchClient on client-node 2.x: lists through the typed CoreV1Api (paged, cancellable)
 * and watches through `k8s.Watch` (raw JSON events, the way the API sends them).
 *
 * Why not client-node's own `ListWatch` (informer): it caches whole objects (a Node is tens
 * of KiB; we keep a few fields), asks for no bookmarks and no server timeout, has no
 * watchdog, stops for good on any error but 410 (its caller must notice and restart it),
 * and runs on the global timers rather than an injected Clock. The loop in watch-loop.ts
 * does those things; this file is only the transport.
 */
import * as k8s from '@kubernetes/client-node';
import { K8sApiError } from '../../index.js';
import { requestOptions } from '../request-options.js';
import type { ListWatchClient, RawObject, WatchEvent, WatchRequest } from './list-watch-client.js';

/** One page of a list, as client-node's typed list calls return it. */
export interface ListPage {
  readonly items: readonly unknown[];
  readonly metadata?: { readonly resourceVersion?: string; readonly _continue?: string };
}

/** A collection: where to watch it, its selectors, and how to list one page of it. */
export interface KubeCollection {
  /** The collection's URL path (`/api/v1/nodes`, `/api/v1/namespaces/ai-infra/configmaps`). */
  readonly path: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** One page of the list with the collection's selectors. */
  listPage(page: { limit: number; continue?: string }, options: k8s.ConfigurationOptions): Promise<ListPage>;
}

/** Items per list page: bounds the whole objects held at once during a list. */
export const LIST_PAGE_SIZE = 500;

/** Every Node. */
export function nodesCollection(core: k8s.CoreV1Api): KubeCollection {
  return {
    path: '/api/v1/nodes',
    listPage: (page, options) => core.listNode({ limit: page.limit, _continue: page.continue }, options),
  };
}

/** The Namespaces matching `labelSelector` (server-side). */
export function namespacesCollection(core: k8s.CoreV1Api, labelSelector: string): KubeCollection {
  return {
    path: '/api/v1/namespaces',
    labelSelector,
    listPage: (page, options) =>
      core.listNamespace({ labelSelector, limit: page.limit, _continue: page.continue }, options),
  };
}

/**
 * The one ConfigMap `namespace/name`, through a field selector on its name: RBAC grants a
 * list or watch with `metadata.name=<name>` against the Role's resourceNames, so the
 * controller needs no right to the namespace's other ConfigMaps.
 */
export function configMapCollection(core: k8s.CoreV1Api, namespace: string, name: string): KubeCollection {
  const fieldSelector = `metadata.name=${name}`;
  return {
    path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`,
    fieldSelector,
    listPage: (page, options) =>
      core.listNamespacedConfigMap(
        { namespace, fieldSelector, limit: page.limit, _continue: page.continue },
        options,
      ),
  };
}

/** The ListWatchClient of `collection`, authenticating as `kubeConfig`. */
export function createKubeListWatchClient(
  kubeConfig: k8s.KubeConfig,
  collection: KubeCollection,
  options: { pageSize?: number } = {},
): ListWatchClient {
  const pageSize = options.pageSize ?? LIST_PAGE_SIZE;
  const selectors = [
    collection.labelSelector && `labelSelector=${collection.labelSelector}`,
    collection.fieldSelector && `fieldSelector=${collection.fieldSelector}`,
  ].filter(Boolean);
  return {
    description: selectors.length > 0 ? `${collection.path}?${selectors.join('&')}` : collection.path,
    list: (onPage, signal) => listAll(collection, pageSize, onPage, signal),
    watch: (request, onEvent, signal) => watchOnce(kubeConfig, collection, request, onEvent, signal),
  };
}

/**
 * Lists page by page, handing each page over as it comes. A continue token that expired
 * mid-list (410) fails the whole list: the loop then lists again from the start, into a fresh
 * map, so nothing of the expired snapshot survives.
 */
async function listAll(
  collection: KubeCollection,
  pageSize: number,
  onPage: (items: readonly RawObject[]) => void,
  signal: AbortSignal,
): Promise<{ resourceVersion: string }> {
  try {
    let next: string | undefined;
    let resourceVersion = '';
    do {
      const page = await collection.listPage({ limit: pageSize, continue: next }, requestOptions({ signal }));
      // The first page's resourceVersion is the one every page is consistent at.
      if (next === undefined) resourceVersion = page.metadata?.resourceVersion ?? '';
      onPage(page.items as readonly RawObject[]);
      next = page.metadata?._continue || undefined;
    } while (next !== undefined);
    return { resourceVersion };
  } catch (error) {
    throw K8sApiError.from(error) ?? error;
  }
}

/**
 * One watch through client-node's Watch. Its `done` callback ends the promise; an abort of
 * `signal` ends it at once, even while the request is still connecting.
 */
function watchOnce(
  kubeConfig: k8s.KubeConfig,
  collection: KubeCollection,
  request: WatchRequest,
  onEvent: (event: WatchEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const watch = new k8s.Watch(kubeConfig);
  setIdleTimeout(watch, request.idleTimeoutMs);
  const query: Record<string, string | number | boolean> = {
    resourceVersion: request.resourceVersion,
    timeoutSeconds: request.timeoutSeconds,
    allowWatchBookmarks: request.allowWatchBookmarks,
  };
  if (collection.labelSelector) query.labelSelector = collection.labelSelector;
  if (collection.fieldSelector) query.fieldSelector = collection.fieldSelector;
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    let connection: AbortController | undefined;
    const onAbort = (): void => {
      connection?.abort();
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const done = (error: unknown): void => {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted || !error) resolve();
      else reject(K8sApiError.from(error) ?? error);
    };
    const deliver = (type: string, object: unknown): void => {
      if (!signal.aborted && object && typeof object === 'object')
        onEvent({ type, object: object as RawObject });
    };
    watch.watch(collection.path, query, deliver, done).then(
      (controller) => {
        connection = controller;
        if (signal.aborted) controller.abort();
      },
      (error: unknown) => done(error ?? new Error('watch failed')),
    );
  });
}

/**
 * client-node's Watch drops a connection after `requestTimeoutMs` (30 s) without data, a
 * private field with no setter. A quiet watch's only data is the apiserver's bookmark, about
 * once a minute, so 30 s would end every quiet watch twice a minute: the field is set to the
 * request's backstop instead (above the loop's watchdog). kube-list-watch-client.test.ts
 * fails if a client-node upgrade renames the field.
 */
export function setIdleTimeout(watch: k8s.Watch, idleTimeoutMs: number): void {
  const fields = watch as unknown as { requestTimeoutMs?: unknown };
  if (typeof fields.requestTimeoutMs === 'number') fields.requestTimeoutMs = idleTimeoutMs;
}

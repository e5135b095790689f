/**
 * What the demo's consumers see: an API watch on the status ConfigMap (every version, with
 * the time it arrived) and each agent's node-local Server-Sent Events stream. Both call
 * `onChange` so the scenario waits on what was seen, never on a timer.
 */
import * as k8s from '@kubernetes/client-node';
import {
  FAULT_DATA_KEY,
  STATUS_CONFIGMAP_NAME,
  type PublishedDocument,
  type PublishedNode,
} from '../contracts/index.js';
import { createSseParser } from '../consumer/index.js';

/** One version of the ConfigMap as the watcher received it. */
export interface SeenDocument {
  /** Epoch ms the watch event arrived. */
  at: number;
  document: PublishedDocument;
}

/** One SSE `fault` event of a node's stream. */
export interface SeenEntry {
  at: number;
  node: string;
  /** The node's published entry; null while every device is healthy. */
  entry: PublishedNode | null;
  leader: string | null;
}

/** Watches the status ConfigMap in `namespace` until `stop`. */
export function watchStatus(
  kc: k8s.KubeConfig,
  namespace: string,
  onDocument: (seen: SeenDocument) => void,
): { stop(): void } {
  return watchStatusConfigMap(kc, namespace, (object, at) => {
    const text = object.data?.[FAULT_DATA_KEY];
    if (text !== undefined) onDocument({ at, document: JSON.parse(text) as PublishedDocument });
  });
}

/**
 * Watches the status ConfigMap object itself (every version but deletions, with the epoch ms
 * it arrived), resuming from the last version seen when the watch ends, until `stop`.
 */
export function watchStatusConfigMap(
  kc: k8s.KubeConfig,
  namespace: string,
  onObject: (object: k8s.V1ConfigMap, at: number) => void,
): { stop(): void } {
  return watchObjects<k8s.V1ConfigMap>(
    kc,
    `/api/v1/namespaces/${namespace}/configmaps`,
    { fieldSelector: `metadata.name=${STATUS_CONFIGMAP_NAME}` },
    onObject,
  );
}

/**
 * Watches the objects of a collection (`path`, its `query` selectors): each added or modified
 * object with the epoch ms it arrived, resuming from the last version seen when the watch
 * ends (from a fresh list after an ERROR, 410 Gone), until `stop`.
 */
export function watchObjects<T extends k8s.KubernetesObject>(
  kc: k8s.KubeConfig,
  path: string,
  query: Record<string, string>,
  onObject: (object: T, at: number) => void,
): { stop(): void } {
  let abort: AbortController | undefined;
  let resume: string | undefined;
  let stopped = false;
  const start = (): void => {
    if (stopped) return;
    new k8s.Watch(kc)
      .watch(
        path,
        resume ? { ...query, resourceVersion: resume } : query,
        (type: string, object: T) => {
          const at = Date.now();
          if (type === 'ERROR') resume = undefined;
          else resume = object.metadata?.resourceVersion ?? resume;
          if (type === 'ADDED' || type === 'MODIFIED') onObject(object, at);
        },
        () => {
          // A watch the server or client closed resumes from the last version seen.
          if (!stopped) setTimeout(start, 200).unref();
        },
      )
      .then(
        (controller) => {
          abort = controller;
          if (stopped) controller.abort();
        },
        () => setTimeout(start, 500).unref(),
      );
  };
  start();
  return {
    stop() {
      stopped = true;
      abort?.abort();
    },
  };
}

/** Follows `url` (an agent's /v1/fault/stream), reconnecting until `stop`. */
export function followFaultStream(
  node: string,
  url: string,
  onEntry: (seen: SeenEntry) => void,
): { stop(): void } {
  const abort = new AbortController();
  const read = async (): Promise<void> => {
    const response = await fetch(url, { headers: { accept: 'text/event-stream' }, signal: abort.signal });
    if (!response.body) return;
    const decoder = new TextDecoder();
    const parse = createSseParser(({ data }) => {
      if (data === undefined || data === '') return;
      const event = JSON.parse(data) as { entry?: PublishedNode | null; leader?: string | null };
      onEntry({ at: Date.now(), node, entry: event.entry ?? null, leader: event.leader ?? null });
    });
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      parse(decoder.decode(chunk, { stream: true }));
    }
  };
  const loop = async (): Promise<void> => {
    while (!abort.signal.aborted) {
      await read().catch(() => undefined);
      if (!abort.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 500).unref());
    }
  };
  void loop();
  return { stop: () => abort.abort() };
}

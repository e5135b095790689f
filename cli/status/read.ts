/**
 * The status ConfigMap through the API: a get, and a watch by name (what the operator role
 * grants). The watch starts from the read's resourceVersion; a 410 or a server-ended watch
 * resumes from a fresh read, so a change in between is still shown.
 */
import * as k8s from '@kubernetes/client-node';
import { STATUS_CONFIGMAP_NAME } from '../../contracts/index.js';
import { isGone, isNotFound } from '../../platform/index.js';
import {
  configMapCollection,
  createKubeListWatchClient,
  resourceVersionOf,
} from '../../platform/k8s/index.js';
import { callApi, describeKubeFailure, KubeCommandError } from '../kube.js';

/** The ConfigMap as read: its data and resourceVersion; undefined when it does not exist. */
export interface StatusConfigMap {
  data: Readonly<Record<string, string>> | undefined;
  resourceVersion: string;
}

/** The API calls status makes; failures are thrown as KubeCommandError (one line). */
export interface StatusApi {
  read(): Promise<StatusConfigMap | undefined>;
  /**
   * Watches from `resourceVersion` and calls `onChange` with each new state (undefined:
   * deleted) until `signal` aborts; resumes by itself when the server ends the watch or the
   * resume point expired.
   */
  follow(
    resourceVersion: string,
    onChange: (configMap: StatusConfigMap | undefined) => void,
    signal: AbortSignal,
  ): Promise<void>;
}

/** How long one watch request may last before the server ends it (it is then resumed). */
const WATCH_SECONDS = 300;

/** StatusApi on client-node: get, and a watch by name (what the operator role grants). */
export function kubeStatusApi(kubeConfig: k8s.KubeConfig, namespace: string): StatusApi {
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const server = kubeConfig.getCurrentCluster()?.server;
  const name = STATUS_CONFIGMAP_NAME;
  const attempt = { resource: 'configmaps', name, namespace };
  const read = async (): Promise<StatusConfigMap | undefined> => {
    try {
      const found = await callApi(
        { verb: 'get', ...attempt },
        () => core.readNamespacedConfigMap({ name, namespace }),
        { ...(server ? { server } : {}), keep: isNotFound },
      );
      return { data: found.data, resourceVersion: found.metadata?.resourceVersion ?? '' };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  return {
    read,
    async follow(resourceVersion, onChange, signal) {
      const client = createKubeListWatchClient(kubeConfig, configMapCollection(core, namespace, name));
      let version = resourceVersion;
      while (!signal.aborted) {
        let expired = false;
        let failure: unknown;
        const stop = new AbortController();
        const relay = (): void => stop.abort();
        signal.addEventListener('abort', relay, { once: true });
        try {
          await callApi(
            { verb: 'watch', ...attempt },
            () =>
              client.watch(
                {
                  resourceVersion: version,
                  timeoutSeconds: WATCH_SECONDS,
                  allowWatchBookmarks: true,
                  idleTimeoutMs: (WATCH_SECONDS + 30) * 1000,
                },
                (event) => {
                  if (expired || failure !== undefined) return;
                  if (event.type === 'ERROR') {
                    if (isGone(event.object)) expired = true;
                    else failure = event.object;
                    stop.abort();
                    return;
                  }
                  version = resourceVersionOf(event.object) ?? version;
                  if (event.type === 'BOOKMARK') return;
                  if (event.type === 'DELETED') onChange(undefined);
                  else
                    onChange({
                      data: (event.object as { data?: Record<string, string> }).data,
                      resourceVersion: version,
                    });
                },
                stop.signal,
              ),
            { ...(server ? { server } : {}), keep: isGone },
          );
        } catch (error) {
          if (!isGone(error)) throw error;
          expired = true;
        } finally {
          signal.removeEventListener('abort', relay);
        }
        if (failure !== undefined)
          throw new KubeCommandError(describeKubeFailure(failure, { verb: 'watch', ...attempt }, server));
        if (expired && !signal.aborted) {
          // 410: the resume point is gone; read afresh (a change in between is shown) and go on.
          const fresh = await read();
          onChange(fresh);
          version = fresh?.resourceVersion ?? '';
        }
      }
    },
  };
}

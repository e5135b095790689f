/**
 * One connection pool per KubeConfig. client-node 2.0 builds a new undici Agent for every
 * request (KubeConfig.applySecurityAuthentication → createDispatcher), so every API call over
 * TLS opens a connection of its own: a handshake on both sides, about 5 ms of CPU for the
 * caller and as much for the apiserver, per call. At 1,000 nodes the leader spent more CPU on
 * handshakes than on everything else (docs/decisions/0051-pipeline-cost.md). Here the
 * KubeConfig keeps the dispatcher it built and reuses it while the TLS settings are the
 * same; new settings (a rotated client certificate) get a new one, and the old one is closed
 * once its requests have ended. Credentials are headers, set per request, so a rotated token
 * needs no new connection.
 */
import type * as k8s from '@kubernetes/client-node';

const SHARED = Symbol('npu-fault.sharedConnections');

type CreateDispatcher = (cluster: k8s.Cluster | null, agentOptions: Record<string, unknown>) => unknown;

/** What a dispatcher is closed with (undici's Dispatcher.close). */
interface Closable {
  close(): Promise<void>;
}

/** The TLS settings that decide a connection (client-node's createDispatcherOptions reads these). */
const TLS_OPTIONS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

/** The settings a dispatcher was built for, compared field by field (a CA compared as bytes). */
interface Settings {
  server: string | undefined;
  proxyUrl: string | undefined;
  options: Record<string, unknown>;
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b));
}

function sameSettings(a: Settings, b: Settings): boolean {
  return (
    a.server === b.server &&
    a.proxyUrl === b.proxyUrl &&
    TLS_OPTIONS.every((name) => sameValue(a.options[name], b.options[name]))
  );
}

/**
 * Makes `kubeConfig` reuse its connections (see above); returns it. Idempotent. Every API
 * client made from it afterwards, and before (they ask the KubeConfig per request), shares
 * the pool.
 */
export function shareConnections(kubeConfig: k8s.KubeConfig): k8s.KubeConfig {
  const target = kubeConfig as unknown as { createDispatcher?: CreateDispatcher; [SHARED]?: true };
  // A client-node that no longer builds dispatchers this way is left as it is (the unit test
  // that counts connections says so).
  if (target[SHARED] || typeof target.createDispatcher !== 'function') return kubeConfig;
  const build = target.createDispatcher.bind(kubeConfig);
  let current: { settings: Settings; dispatcher: unknown } | undefined;
  target.createDispatcher = (cluster, agentOptions) => {
    const settings = { server: cluster?.server, proxyUrl: cluster?.proxyUrl, options: agentOptions };
    if (current && sameSettings(current.settings, settings)) return current.dispatcher;
    const previous = current?.dispatcher as Closable | undefined;
    current = { settings, dispatcher: build(cluster, agentOptions) };
    // Requests in flight on the old pool finish first; close() only refuses new ones.
    if (previous && typeof previous.close === 'function') previous.close().catch(() => undefined);
    return current.dispatcher;
  };
  target[SHARED] = true;
  return kubeConfig;
}

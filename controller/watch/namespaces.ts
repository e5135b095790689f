/**
 * The namespaces the status document is mirrored into: those labelled
 * `npu-fault.io/status-mirror=true`. The selector goes to the server, so only those are
 * listed and watched; when the label goes, the API reports the namespace as deleted from the
 * selection. A namespace being deleted (phase Terminating) leaves the set at once: nothing
 * can be written into it any more.
 */
import type { Runnable } from '../../platform/index.js';
import type { RawObject } from '../../platform/k8s/index.js';
import { createWatchLoop, type WatchLoopDeps, type WatchLoopOptions } from '../../platform/k8s/index.js';

/** The label that asks for a mirror. */
export const MIRROR_LABEL = 'npu-fault.io/status-mirror';
/** The server-side selector of the mirror namespaces. */
export const MIRROR_LABEL_SELECTOR = `${MIRROR_LABEL}=true`;

/** How the mirror-namespace watch runs. */
export interface MirrorNamespaceWatchOptions {
  /**
   * Called with the whole set once the first list is in (even when empty), then after every
   * change (synchronously, from the watch; a throw is logged). The set is a fresh copy.
   */
  onChange?(namespaces: ReadonlySet<string>): void;
  /** Loop tuning (watchdog, server timeout, backoff, metrics component). */
  loop?: Pick<
    WatchLoopOptions<string>,
    'watchdogMs' | 'minWatchTimeoutSeconds' | 'initialBackoffMs' | 'maxBackoffMs' | 'metricsComponent'
  >;
}

/** The running set of mirror namespaces. */
export interface MirrorNamespaceWatch extends Runnable {
  synced(): boolean;
  whenSynced(): Promise<void>;
  /** The mirror namespaces now (a fresh copy). */
  current(): ReadonlySet<string>;
}

/**
 * Builds the watch on a client of the Namespaces selected by MIRROR_LABEL_SELECTOR
 * (`createKubeWatchClients(...).mirrorNamespaces`). The label is checked here too, so a
 * client without the selector still yields only mirror namespaces.
 */
export function createMirrorNamespaceWatch(
  deps: WatchLoopDeps,
  options: MirrorNamespaceWatchOptions = {},
): MirrorNamespaceWatch {
  const current = (): ReadonlySet<string> => new Set(loop.values());
  const changed = (): void => {
    if (loop.synced()) options.onChange?.(current());
  };
  const loop = createWatchLoop<string>(deps, {
    ...options.loop,
    resource: 'namespaces',
    transform: mirrorNamespaceOf,
    handlers: { onAdd: changed, onUpdate: changed, onDelete: changed, onSynced: changed },
  });
  return {
    name: loop.name,
    start: (signal) => loop.start(signal),
    synced: () => loop.synced(),
    whenSynced: () => loop.whenSynced(),
    current,
  };
}

/** The namespace's name when it is a live mirror namespace, else undefined. */
export function mirrorNamespaceOf(raw: RawObject): string | undefined {
  const name = raw.metadata?.name;
  const labels = raw.metadata?.labels as Record<string, unknown> | undefined;
  const phase = (raw.status as { phase?: unknown } | undefined)?.phase;
  if (typeof name !== 'string' || name === '' || labels?.[MIRROR_LABEL] !== 'true') return undefined;
  return phase === 'Terminating' ? undefined : name;
}

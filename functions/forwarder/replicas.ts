/**
 * Where the forwarder learns the controller replicas and the leader from. Two replica
 * sources behind one interface: a static list (`--controllers id=url,…`, out of a cluster)
 * and the EndpointSlices of the controller's headless Service (endpoint-slices.ts); the
 * Lease holder is a LeaderSource (lease.ts).
 */
import { ConfigError, type Runnable } from '../../platform/index.js';

/** One controller replica: its identity (the pod name, as in the Lease) and where it listens. */
export interface Replica {
  readonly identity: string;
  /** Origin of its observation endpoint, `http://host:port` or `https://…` (no path). */
  readonly url: string;
  /**
   * For https: the name its certificate must be valid for, when not the URL's host (a replica
   * reached by pod IP presents the Service's certificate, `npu-fault-controller.<ns>.svc`).
   */
  readonly serverName?: string;
}

/** Called when what a source knows changes. Returns nothing; a throw is the caller's bug. */
export type ChangeListener = () => void;

/** The ready replicas, kept current while it runs. */
export interface ReplicaSource extends Runnable {
  /** The ready replicas now, one per identity, sorted by identity. */
  replicas(): readonly Replica[];
  /** Calls `listener` after every change; returns the unsubscribe function. */
  subscribe(listener: ChangeListener): () => void;
}

/** The leader as the Lease names it, kept current while it runs. */
export interface LeaderSource extends Runnable {
  /** The Lease's holderIdentity; undefined when there is no Lease or it names no one. */
  holder(): string | undefined;
  /** Calls `listener` after every change; returns the unsubscribe function. */
  subscribe(listener: ChangeListener): () => void;
}

/**
 * Parses `--controllers`: comma-separated `<identity>=<url>` items, the URL http(s) with
 * host and port and no path (`replica-1=http://10.0.0.5:8080`). Throws a ConfigError with
 * one line per bad item, naming it.
 */
export function parseControllers(text: string): Replica[] {
  const errors: string[] = [];
  const replicas: Replica[] = [];
  const seen = new Set<string>();
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (items.length === 0) throw new ConfigError(['--controllers: expected <identity>=<url>,…, got nothing']);
  for (const item of items) {
    const problem = problemOf(item, seen);
    if (typeof problem === 'string') errors.push(`--controllers: "${item}": ${problem}`);
    else {
      seen.add(problem.identity);
      replicas.push(problem);
    }
  }
  if (errors.length > 0) throw new ConfigError(errors);
  return replicas.sort(byIdentity);
}

/** The replica an item names, or what is wrong with it. */
function problemOf(item: string, seen: ReadonlySet<string>): Replica | string {
  const at = item.indexOf('=');
  if (at <= 0) return 'expected <identity>=<url>';
  const identity = item.slice(0, at).trim();
  const text = item.slice(at + 1).trim();
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(identity))
    return `identity "${identity}" is not a DNS subdomain name (a pod name)`;
  if (seen.has(identity)) return `identity "${identity}" is listed twice`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `"${text}" is not a URL`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `expected an http(s) URL, got "${text}"`;
  if (url.port === '') return `"${text}" has no port`;
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '')
    return `"${text}" must have no path, query or fragment (the API path is added)`;
  if (url.username !== '' || url.password !== '') return `"${text}" must carry no credentials`;
  return { identity, url: url.origin };
}

/** A fixed set of replicas (it never changes; `start` only waits for the signal). */
export function createStaticReplicaSource(replicas: readonly Replica[]): ReplicaSource {
  const fixed = Object.freeze([...replicas].sort(byIdentity));
  return {
    name: 'controllers-static',
    replicas: () => fixed,
    subscribe: () => () => undefined,
    start: (signal) =>
      new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener('abort', () => resolve(), { once: true });
      }),
  };
}

/** Orders replicas by identity (stable logs and metrics). */
export function byIdentity(a: Replica, b: Replica): number {
  return a.identity < b.identity ? -1 : a.identity > b.identity ? 1 : 0;
}

/** A set of listeners (the sources' `subscribe`). */
export class Listeners {
  readonly #listeners = new Set<ChangeListener>();

  subscribe(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}

/**
 * The narrow view of the Kubernetes Lease API the elector needs: read, create, and replace
 * with optimistic concurrency. `kube-lease-client.ts` implements it on client-node;
 * `fake-lease-client.ts` in memory, for tests.
 */

/** Names a Lease. */
export interface LeaseKey {
  readonly namespace: string;
  readonly name: string;
}

/**
 * A Lease's spec as the elector reads and writes it (client-go's LeaderElectionRecord).
 * Times are epoch milliseconds; the API stores them as MicroTime.
 */
export interface LeaseSpec {
  /** Who holds the lease; undefined or empty when nobody does (released). */
  readonly holderIdentity?: string | undefined;
  /** How long others wait, after they last saw the record change, before taking it over. */
  readonly leaseDurationSeconds?: number | undefined;
  /** When the current holder acquired it. */
  readonly acquireTime?: number | undefined;
  /** When the holder last renewed it (written by the holder's wall clock: never trusted by others). */
  readonly renewTime?: number | undefined;
  /** How many times the lease changed holders: the term. */
  readonly leaseTransitions?: number | undefined;
}

/** A Lease as stored: its spec and the resourceVersion a replace must name. */
export interface StoredLease {
  readonly resourceVersion: string;
  readonly spec: LeaseSpec;
}

/**
 * Lease reads and writes. Every call takes an AbortSignal that cancels it (the elector
 * bounds each request by its renew deadline). Failures are thrown as K8sApiError when the
 * API answered (so `isConflict`, `isNotFound` work), as they came otherwise.
 */
export interface LeaseClient {
  /** The Lease, or undefined when it does not exist. */
  get(key: LeaseKey, signal: AbortSignal): Promise<StoredLease | undefined>;
  /** Creates the Lease; 409 AlreadyExists when someone else created it first. */
  create(key: LeaseKey, spec: LeaseSpec, signal: AbortSignal): Promise<StoredLease>;
  /**
   * Replaces the Lease's spec if it is still at `resourceVersion`; 409 Conflict when someone
   * wrote it since (then read it again), 404 when it is gone.
   */
  replace(key: LeaseKey, resourceVersion: string, spec: LeaseSpec, signal: AbortSignal): Promise<StoredLease>;
}

/** `namespace/name`, for logs and errors. */
export function describeLease(key: LeaseKey): string {
  return `${key.namespace}/${key.name}`;
}

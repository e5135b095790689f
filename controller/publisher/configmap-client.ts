/**
 * The narrow view of the ConfigMap API the publisher needs, by name only (its RBAC is
 * get/update/delete on one name, plus create: no list, no watch). `kube-configmap-client.ts`
 * implements it on client-node; `fake-configmap-client.ts` in memory, for tests.
 */

/** Names a ConfigMap. */
export interface ConfigMapKey {
  readonly namespace: string;
  readonly name: string;
}

/** What the publisher writes: labels (merged into those stored) and the whole `data`. */
export interface ConfigMapContent {
  readonly labels: Readonly<Record<string, string>>;
  readonly data: Readonly<Record<string, string>>;
}

/** A ConfigMap as stored. */
export interface StoredConfigMap {
  readonly resourceVersion: string;
  readonly uid: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly data: Readonly<Record<string, string>>;
}

/** What a delete insists on: it fails with 409 when the object is no longer this one. */
export interface DeletePreconditions {
  readonly uid: string;
  readonly resourceVersion: string;
}

/**
 * ConfigMap reads and writes. Every call takes an AbortSignal that cancels it. Failures are
 * thrown as K8sApiError when the API answered (so `isConflict`, `isNotFound` work), as they
 * came otherwise.
 */
export interface ConfigMapClient {
  /** The ConfigMap, or undefined when it does not exist. */
  get(key: ConfigMapKey, signal: AbortSignal): Promise<StoredConfigMap | undefined>;
  /** Creates it; 409 AlreadyExists when it exists, 404 when the namespace does not. */
  create(key: ConfigMapKey, content: ConfigMapContent, signal: AbortSignal): Promise<StoredConfigMap>;
  /**
   * Replaces its data (and sets the given labels, keeping others) if it is still at
   * `resourceVersion`; 409 Conflict when someone wrote it since, 404 when it is gone.
   */
  replace(
    key: ConfigMapKey,
    resourceVersion: string,
    content: ConfigMapContent,
    signal: AbortSignal,
  ): Promise<StoredConfigMap>;
  /** Deletes it if it is still the object named by `preconditions` (409 otherwise); 404 when gone. */
  delete(key: ConfigMapKey, preconditions: DeletePreconditions, signal: AbortSignal): Promise<void>;
}

/** `namespace/name`, for logs and errors. */
export function describeConfigMap(key: ConfigMapKey): string {
  return `${key.namespace}/${key.name}`;
}

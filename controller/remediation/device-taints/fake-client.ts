/** An in-memory DeviceTaintClient with the API's resourceVersion checks (for unit tests). */
import { K8sApiError } from '../../../platform/index.js';
import type { DeviceTaintClient, RuleOwner, StoredRule } from './client.js';
import type { DesiredRule } from './desired.js';

/**
 * The fake: slices by node (listed all at once), rules by name; `writes` lists every successful
 * write, `sliceLists` and `ruleLists` count the lists.
 */
export class FakeDeviceTaintClient implements DeviceTaintClient {
  readonly slices = new Map<string, unknown[]>();
  sliceLists = 0;
  ruleLists = 0;
  readonly rules = new Map<string, StoredRule>();
  readonly writes: { verb: 'create' | 'replace' | 'delete'; name: string }[] = [];
  /** Set: every call fails with it (a 403 without the RBAC, say). */
  failWith: Error | undefined;
  /** Set: slice lists alone fail with it. */
  failSlicesWith: Error | undefined;
  /** The granting ClusterRole's answer (undefined: not readable). */
  grant: RuleOwner | undefined = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    name: 'grant',
    uid: 'grant-uid-1',
  };
  grantReads = 0;
  #version = 1;

  constructor(readonly owner = 'ai-infra') {}

  listSlices(): Promise<unknown[]> {
    this.sliceLists++;
    const failure = this.failWith ?? this.failSlicesWith;
    if (failure) return Promise.reject(failure);
    return Promise.resolve(structuredClone([...this.slices.values()].flat()));
  }

  listOwnedRules(): Promise<StoredRule[]> {
    this.ruleLists++;
    if (this.failWith) return Promise.reject(this.failWith);
    return Promise.resolve([...this.rules.values()].map((rule) => structuredClone(rule)));
  }

  grantOwner(): Promise<RuleOwner | undefined> {
    this.grantReads++;
    if (this.failWith) return Promise.reject(this.failWith);
    return Promise.resolve(this.grant);
  }

  create(rule: DesiredRule, _signal?: AbortSignal, owner?: RuleOwner): Promise<void> {
    if (this.failWith) return Promise.reject(this.failWith);
    if (this.rules.has(rule.name)) return Promise.reject(new K8sApiError(409, 'AlreadyExists'));
    this.rules.set(rule.name, this.#stored(rule, owner));
    this.writes.push({ verb: 'create', name: rule.name });
    return Promise.resolve();
  }

  replace(
    rule: DesiredRule,
    resourceVersion: string,
    _signal?: AbortSignal,
    owner?: RuleOwner,
  ): Promise<void> {
    if (this.failWith) return Promise.reject(this.failWith);
    const found = this.rules.get(rule.name);
    if (!found) return Promise.reject(new K8sApiError(404, 'NotFound'));
    if (found.resourceVersion !== resourceVersion) return Promise.reject(new K8sApiError(409, 'Conflict'));
    this.rules.set(rule.name, this.#stored(rule, owner));
    this.writes.push({ verb: 'replace', name: rule.name });
    return Promise.resolve();
  }

  delete(name: string, resourceVersion: string): Promise<void> {
    if (this.failWith) return Promise.reject(this.failWith);
    const found = this.rules.get(name);
    if (!found) return Promise.resolve();
    if (found.resourceVersion !== resourceVersion) return Promise.reject(new K8sApiError(409, 'Conflict'));
    this.rules.delete(name);
    this.writes.push({ verb: 'delete', name });
    return Promise.resolve();
  }

  #stored(rule: DesiredRule, owner: RuleOwner | undefined): StoredRule {
    return {
      name: rule.name,
      resourceVersion: String(this.#version++),
      node: rule.node,
      driver: rule.driver,
      pool: rule.pool,
      device: rule.device,
      taint: { ...rule.taint },
      ownerUids: owner ? [owner.uid] : [],
    };
  }
}

/** An in-memory DeviceTaintClient with the API's resourceVersion checks (for unit tests). */
import { K8sApiError } from '../../../platform/index.js';
import type { DeviceTaintClient, StoredRule } from './client.js';
import type { DesiredRule } from './desired.js';

/** The fake: slices by node, rules by name; `writes` lists every successful write. */
export class FakeDeviceTaintClient implements DeviceTaintClient {
  readonly slices = new Map<string, unknown[]>();
  readonly rules = new Map<string, StoredRule>();
  readonly writes: { verb: 'create' | 'replace' | 'delete'; name: string }[] = [];
  /** Set: every call fails with it (a 403 without the RBAC, say). */
  failWith: Error | undefined;
  #version = 1;

  listSlices(node: string): Promise<unknown[]> {
    if (this.failWith) return Promise.reject(this.failWith);
    return Promise.resolve(structuredClone(this.slices.get(node) ?? []));
  }

  listOwnedRules(): Promise<StoredRule[]> {
    if (this.failWith) return Promise.reject(this.failWith);
    return Promise.resolve([...this.rules.values()].map((rule) => structuredClone(rule)));
  }

  create(rule: DesiredRule): Promise<void> {
    if (this.failWith) return Promise.reject(this.failWith);
    if (this.rules.has(rule.name)) return Promise.reject(new K8sApiError(409, 'AlreadyExists'));
    this.rules.set(rule.name, this.#stored(rule));
    this.writes.push({ verb: 'create', name: rule.name });
    return Promise.resolve();
  }

  replace(rule: DesiredRule, resourceVersion: string): Promise<void> {
    if (this.failWith) return Promise.reject(this.failWith);
    const found = this.rules.get(rule.name);
    if (!found) return Promise.reject(new K8sApiError(404, 'NotFound'));
    if (found.resourceVersion !== resourceVersion) return Promise.reject(new K8sApiError(409, 'Conflict'));
    this.rules.set(rule.name, this.#stored(rule));
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

  #stored(rule: DesiredRule): StoredRule {
    return {
      name: rule.name,
      resourceVersion: String(this.#version++),
      node: rule.node,
      driver: rule.driver,
      pool: rule.pool,
      device: rule.device,
      taint: { ...rule.taint },
    };
  }
}

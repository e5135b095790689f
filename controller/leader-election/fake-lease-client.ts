/**
 * An in-memory LeaseClient that behaves as the apiserver does where the elector depends on
 * it: resourceVersions, 409 AlreadyExists on a second create, 409 Conflict on a replace at a
 * stale resourceVersion, 404 for a missing Lease, and the API's validation of the fields.
 * Tests inject errors (`failNext`, `failAlways`) and latency (`delay`, on the given clock,
 * cancelled by the request's signal), and act as another writer (`put`).
 */
import { K8sApiError, type Clock } from '../../platform/index.js';
import {
  describeLease,
  type LeaseClient,
  type LeaseKey,
  type LeaseSpec,
  type StoredLease,
} from './lease-client.js';

/** A LeaseClient call. */
export type LeaseOperation = 'get' | 'create' | 'replace';

/** A call as the fake received it. */
export interface LeaseCall {
  readonly op: LeaseOperation;
  readonly key: string;
  /** The resourceVersion a replace named. */
  readonly resourceVersion?: string;
  readonly spec?: LeaseSpec;
}

/** An in-memory Lease store shared by every elector given it (one "apiserver"). */
export class FakeLeaseClient implements LeaseClient {
  readonly #clock: Clock;
  readonly #leases = new Map<string, StoredLease>();
  readonly #failures: { op: LeaseOperation | 'any'; error: unknown; remaining: number }[] = [];
  readonly #delays = new Map<LeaseOperation, number>();
  #version = 100;
  /** Every call received, in order (failed ones included). */
  readonly calls: LeaseCall[] = [];

  /** `clock` times injected delays. */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  async get(key: LeaseKey, signal: AbortSignal): Promise<StoredLease | undefined> {
    await this.#arrive({ op: 'get', key: describeLease(key) }, signal);
    return this.#leases.get(describeLease(key));
  }

  async create(key: LeaseKey, spec: LeaseSpec, signal: AbortSignal): Promise<StoredLease> {
    await this.#arrive({ op: 'create', key: describeLease(key), spec }, signal);
    if (this.#leases.has(describeLease(key)))
      throw new K8sApiError(409, 'AlreadyExists', `leases "${key.name}" already exists`);
    return this.#store(key, spec);
  }

  async replace(
    key: LeaseKey,
    resourceVersion: string,
    spec: LeaseSpec,
    signal: AbortSignal,
  ): Promise<StoredLease> {
    await this.#arrive({ op: 'replace', key: describeLease(key), resourceVersion, spec }, signal);
    const current = this.#leases.get(describeLease(key));
    if (!current) throw new K8sApiError(404, 'NotFound', `leases "${key.name}" not found`);
    if (current.resourceVersion !== resourceVersion) {
      throw new K8sApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on leases.coordination.k8s.io "${key.name}": the object has been modified`,
      );
    }
    return this.#store(key, spec);
  }

  /** The stored Lease (no call recorded). */
  peek(key: LeaseKey): StoredLease | undefined {
    return this.#leases.get(describeLease(key));
  }

  /** Writes the Lease as another client would, bumping its resourceVersion (no call recorded). */
  put(key: LeaseKey, spec: LeaseSpec): StoredLease {
    return this.#store(key, spec);
  }

  /** Deletes the Lease (no call recorded). */
  delete(key: LeaseKey): void {
    this.#leases.delete(describeLease(key));
  }

  /** The next `times` calls of `op` (or of any operation) fail with `error`, before reaching the store. */
  failNext(op: LeaseOperation | 'any', error: unknown, times = 1): void {
    this.#failures.push({ op, error, remaining: times });
  }

  /** Every call of `op` fails with `error` from now on; `undefined` heals it. */
  failAlways(op: LeaseOperation | 'any', error: unknown): void {
    for (let i = this.#failures.length - 1; i >= 0; i--) {
      if (this.#failures[i]?.op === op) this.#failures.splice(i, 1);
    }
    if (error !== undefined) this.#failures.push({ op, error, remaining: Infinity });
  }

  /** Every call of `op` waits `ms` on the clock before it reaches the store; `undefined` removes the delay. */
  delay(op: LeaseOperation, ms: number | undefined): void {
    if (ms === undefined) this.#delays.delete(op);
    else this.#delays.set(op, ms);
  }

  /** Records the call, waits its delay (abortable), then throws an injected failure if one is due. */
  async #arrive(call: LeaseCall, signal: AbortSignal): Promise<void> {
    this.calls.push(call);
    signal.throwIfAborted();
    const ms = this.#delays.get(call.op);
    if (ms !== undefined) await this.#clock.sleep(ms, signal);
    const failure = this.#failures.find((f) => f.op === call.op || f.op === 'any');
    if (!failure) return;
    failure.remaining -= 1;
    if (failure.remaining <= 0) this.#failures.splice(this.#failures.indexOf(failure), 1);
    throw failure.error;
  }

  #store(key: LeaseKey, spec: LeaseSpec): StoredLease {
    validate(key, spec);
    const stored: StoredLease = { resourceVersion: String(++this.#version), spec: { ...spec } };
    this.#leases.set(describeLease(key), stored);
    return stored;
  }
}

/** The apiserver's validation of a Lease spec (ValidateLeaseSpec): 422 Invalid. */
function validate(key: LeaseKey, spec: LeaseSpec): void {
  const invalid = (field: string, message: string): K8sApiError =>
    new K8sApiError(
      422,
      'Invalid',
      `Lease.coordination.k8s.io "${key.name}" is invalid: spec.${field}: ${message}`,
    );
  const duration = spec.leaseDurationSeconds;
  if (duration !== undefined && !(Number.isInteger(duration) && duration > 0))
    throw invalid('leaseDurationSeconds', 'must be greater than 0');
  const transitions = spec.leaseTransitions;
  if (transitions !== undefined && !(Number.isInteger(transitions) && transitions >= 0))
    throw invalid('leaseTransitions', 'must be greater than or equal to 0');
}

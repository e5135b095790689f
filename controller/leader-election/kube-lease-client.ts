/**
 * The LeaseClient on client-node's CoordinationV1Api. Times go out through `microTime()`:
 * client-node writes a Date with three fractional digits, which the apiserver refuses for a
 * Lease's MicroTime fields. A replace sends back the object last read (labels, annotations
 * and owners kept, as client-go's LeaseLock does), with the new spec and the given
 * resourceVersion.
 */
import * as k8s from '@kubernetes/client-node';
import { K8sApiError, isNotFound } from '../../platform/index.js';
import { microTime, requestOptions } from '../../platform/k8s/index.js';
import {
  describeLease,
  type LeaseClient,
  type LeaseKey,
  type LeaseSpec,
  type StoredLease,
} from './lease-client.js';

/** A LeaseClient on the real API (`kubeConfig.makeApiClient(k8s.CoordinationV1Api)`). */
export function createKubeLeaseClient(api: k8s.CoordinationV1Api): LeaseClient {
  // The last object seen per Lease, so a replace keeps its metadata.
  const lastSeen = new Map<string, k8s.V1Lease>();
  const remember = (key: LeaseKey, lease: k8s.V1Lease): StoredLease => {
    lastSeen.set(describeLease(key), lease);
    return toStoredLease(key, lease);
  };
  return {
    async get(key, signal) {
      try {
        return remember(key, await api.readNamespacedLease(key, requestOptions({ signal })));
      } catch (error) {
        if (isNotFound(error)) {
          lastSeen.delete(describeLease(key));
          return undefined;
        }
        throw K8sApiError.from(error) ?? error;
      }
    },
    async create(key, spec, signal) {
      const body: k8s.V1Lease = {
        metadata: { name: key.name, namespace: key.namespace },
        spec: toV1Spec(spec),
      };
      try {
        return remember(
          key,
          await api.createNamespacedLease({ namespace: key.namespace, body }, requestOptions({ signal })),
        );
      } catch (error) {
        throw K8sApiError.from(error) ?? error;
      }
    },
    async replace(key, resourceVersion, spec, signal) {
      const seen = lastSeen.get(describeLease(key));
      const body: k8s.V1Lease = {
        ...seen,
        metadata: { ...seen?.metadata, name: key.name, namespace: key.namespace, resourceVersion },
        spec: toV1Spec(spec),
      };
      try {
        return remember(key, await api.replaceNamespacedLease({ ...key, body }, requestOptions({ signal })));
      } catch (error) {
        throw K8sApiError.from(error) ?? error;
      }
    },
  };
}

function toV1Spec(spec: LeaseSpec): k8s.V1LeaseSpec {
  const out: k8s.V1LeaseSpec = {};
  if (spec.holderIdentity) out.holderIdentity = spec.holderIdentity;
  if (spec.leaseDurationSeconds !== undefined) out.leaseDurationSeconds = spec.leaseDurationSeconds;
  if (spec.acquireTime !== undefined) out.acquireTime = microTime(spec.acquireTime);
  if (spec.renewTime !== undefined) out.renewTime = microTime(spec.renewTime);
  if (spec.leaseTransitions !== undefined) out.leaseTransitions = spec.leaseTransitions;
  return out;
}

function toStoredLease(key: LeaseKey, lease: k8s.V1Lease): StoredLease {
  const resourceVersion = lease.metadata?.resourceVersion;
  if (!resourceVersion) throw new Error(`Lease ${describeLease(key)}: the API returned no resourceVersion`);
  const spec = lease.spec ?? {};
  return {
    resourceVersion,
    spec: {
      holderIdentity: spec.holderIdentity || undefined,
      leaseDurationSeconds: spec.leaseDurationSeconds,
      acquireTime: epochMs(spec.acquireTime),
      renewTime: epochMs(spec.renewTime),
      leaseTransitions: spec.leaseTransitions,
    },
  };
}

/** client-node hands MicroTime back as a Date (or, from some paths, the string). */
function epochMs(time: Date | string | undefined): number | undefined {
  if (time === undefined) return undefined;
  const ms = new Date(time).getTime();
  return Number.isNaN(ms) ? undefined : ms;
}

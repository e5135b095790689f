/**
 * DeviceTaintRules and ResourceSlices in the API (resource.k8s.io), through client-node's
 * CustomObjectsApi: client-node 2.x has no typed client for DeviceTaintRule at the versions
 * that serve it. DeviceTaintRule is resource.k8s.io/v1 from Kubernetes 1.37 and v1beta2 on
 * 1.36 (with the DRADeviceTaints gate and that version enabled): the first list finds which
 * one the apiserver serves and later calls use it. An in-memory fake is in fake-client.ts.
 *
 * Each rule written names the ClusterRole that grants this (k8s/controller/device-taints) as
 * its owner, so Kubernetes' garbage collector deletes the rules when that grant goes: on
 * uninstall, or when the feature is turned off by removing the component or the chart value,
 * where the controller itself has lost the right to delete them.
 */
import * as k8s from '@kubernetes/client-node';
import { K8sApiError } from '../../../platform/index.js';
import { requestOptions } from '../../../platform/k8s/index.js';
import {
  DEVICE_ANNOTATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  NODE_ANNOTATION,
  OWNER_LABEL,
  type DesiredRule,
} from './desired.js';

const GROUP = 'resource.k8s.io';
/** One slice list may take this long: a slow apiserver must not hold the pass. */
export const SLICE_LIST_TIMEOUT_MS = 10_000;
/** The versions serving DeviceTaintRule, newest first. */
export const DEVICE_TAINT_RULE_VERSIONS = ['v1', 'v1beta2'] as const;

/** A rule this controller owns, as stored. */
export interface StoredRule {
  readonly name: string;
  readonly resourceVersion: string;
  /** From its annotation; undefined when someone removed it. */
  readonly node: string | undefined;
  /** Its spec's selector and taint, to compare with the wanted one. */
  readonly driver: string | undefined;
  readonly pool: string | undefined;
  readonly device: string | undefined;
  readonly taint: { key?: string; value?: string; effect?: string };
  /** The uids of its ownerReferences. */
  readonly ownerUids: readonly string[];
}

/** The object a rule is the dependent of (an ownerReference; cluster-scoped, as the rule is). */
export interface RuleOwner {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

/** Reads slices and rules, writes rules. Failures throw K8sApiError when the API answered. */
export interface DeviceTaintClient {
  /** The namespace of the controller owning the rules (names and labels carry it). */
  readonly owner: string;
  /** Every ResourceSlice, one list (raw objects: the caller checks them). */
  listSlices(signal: AbortSignal): Promise<unknown[]>;
  /** The rules carrying this controller's labels (managed-by, its namespace). */
  listOwnedRules(signal: AbortSignal): Promise<StoredRule[]>;
  /**
   * The owner new and replaced rules name: the granting ClusterRole as it is now; undefined
   * when it cannot be read (not granted, or named otherwise). Failures throw.
   */
  grantOwner(signal: AbortSignal): Promise<RuleOwner | undefined>;
  create(rule: DesiredRule, signal: AbortSignal, owner?: RuleOwner): Promise<void>;
  /** Replaces `rule` if it is still at `resourceVersion` (409 otherwise). */
  replace(rule: DesiredRule, resourceVersion: string, signal: AbortSignal, owner?: RuleOwner): Promise<void>;
  /** Deletes `name` if it is still at `resourceVersion`; gone already is not an error. */
  delete(name: string, resourceVersion: string, signal: AbortSignal): Promise<void>;
}

/** The rule's object as sent to the API, owned by the controller of `owner` (its namespace). */
export function ruleObject(
  rule: DesiredRule,
  apiVersion: string,
  owner: string,
  grant?: RuleOwner,
): Record<string, unknown> {
  return {
    apiVersion,
    kind: 'DeviceTaintRule',
    metadata: {
      name: rule.name,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [OWNER_LABEL]: owner },
      annotations: { [NODE_ANNOTATION]: rule.node, [DEVICE_ANNOTATION]: rule.deviceKey },
      // Not blockOwnerDeletion: the grant's removal must never wait on the rules.
      ...(grant ? { ownerReferences: [{ ...grant }] } : {}),
    },
    spec: {
      deviceSelector: { driver: rule.driver, pool: rule.pool, device: rule.device },
      taint: rule.taint,
    },
  };
}

interface RuleObject {
  metadata?: {
    name?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    ownerReferences?: { uid?: string }[];
  };
  spec?: {
    deviceSelector?: { driver?: string; pool?: string; device?: string };
    taint?: { key?: string; value?: string; effect?: string };
  };
}

/**
 * The client on client-node's CustomObjectsApi, for the controller of namespace `owner`; with
 * `grant`, rules are made dependents of that ClusterRole (read through `grant.rbac`).
 */
export function createKubeDeviceTaintClient(
  api: k8s.CustomObjectsApi,
  owner: string,
  grant?: { rbac: k8s.RbacAuthorizationV1Api; clusterRole: string },
): DeviceTaintClient {
  let version: string | undefined;
  const call = async <T>(request: () => Promise<T>): Promise<T> => {
    try {
      return await request();
    } catch (error) {
      throw K8sApiError.from(error) ?? error;
    }
  };
  /** The served version (found by the first list). */
  const served = async (signal: AbortSignal): Promise<string> => {
    if (version !== undefined) return version;
    for (const candidate of DEVICE_TAINT_RULE_VERSIONS) {
      try {
        await call(() =>
          api.listClusterCustomObject(
            { group: GROUP, version: candidate, plural: 'devicetaintrules', limit: 1 },
            requestOptions({ signal }),
          ),
        );
        version = candidate;
        return candidate;
      } catch (error) {
        if (!(error instanceof K8sApiError) || error.apiStatus !== 404) throw error;
      }
    }
    throw new K8sApiError(
      404,
      'NotFound',
      `DeviceTaintRule is served at none of ${GROUP}/${DEVICE_TAINT_RULE_VERSIONS.join(', ')} (Kubernetes 1.36+ with DRADeviceTaints)`,
    );
  };

  return {
    owner,
    async listSlices(signal) {
      const bounded = AbortSignal.any([signal, AbortSignal.timeout(SLICE_LIST_TIMEOUT_MS)]);
      const list = (await call(() =>
        api.listClusterCustomObject(
          { group: GROUP, version: 'v1', plural: 'resourceslices' },
          requestOptions({ signal: bounded }),
        ),
      )) as { items?: unknown[] };
      return list.items ?? [];
    },
    async listOwnedRules(signal) {
      const at = await served(signal);
      const list = (await call(() =>
        api.listClusterCustomObject(
          {
            group: GROUP,
            version: at,
            plural: 'devicetaintrules',
            labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY},${OWNER_LABEL}=${owner}`,
          },
          requestOptions({ signal }),
        ),
      )) as { items?: RuleObject[] };
      return (list.items ?? []).map((item) => ({
        name: item.metadata?.name ?? '',
        resourceVersion: item.metadata?.resourceVersion ?? '',
        node: item.metadata?.annotations?.[NODE_ANNOTATION],
        driver: item.spec?.deviceSelector?.driver,
        pool: item.spec?.deviceSelector?.pool,
        device: item.spec?.deviceSelector?.device,
        taint: item.spec?.taint ?? {},
        ownerUids: (item.metadata?.ownerReferences ?? []).flatMap((ref) => (ref.uid ? [ref.uid] : [])),
      }));
    },
    async grantOwner(signal) {
      if (grant === undefined) return undefined;
      const name = grant.clusterRole;
      try {
        const role = await call(() => grant.rbac.readClusterRole({ name }, requestOptions({ signal })));
        const uid = role.metadata?.uid;
        return uid
          ? { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name, uid }
          : undefined;
      } catch (error) {
        if (error instanceof K8sApiError && (error.apiStatus === 403 || error.apiStatus === 404))
          return undefined;
        throw error;
      }
    },
    async create(rule, signal, dependentOf) {
      const at = await served(signal);
      await call(() =>
        api.createClusterCustomObject(
          {
            group: GROUP,
            version: at,
            plural: 'devicetaintrules',
            body: ruleObject(rule, `${GROUP}/${at}`, owner, dependentOf),
          },
          requestOptions({ signal }),
        ),
      );
    },
    async replace(rule, resourceVersion, signal, dependentOf) {
      const at = await served(signal);
      const body = ruleObject(rule, `${GROUP}/${at}`, owner, dependentOf);
      (body.metadata as Record<string, unknown>).resourceVersion = resourceVersion;
      await call(() =>
        api.replaceClusterCustomObject(
          { group: GROUP, version: at, plural: 'devicetaintrules', name: rule.name, body },
          requestOptions({ signal }),
        ),
      );
    },
    async delete(name, resourceVersion, signal) {
      const at = await served(signal);
      try {
        await call(() =>
          api.deleteClusterCustomObject(
            {
              group: GROUP,
              version: at,
              plural: 'devicetaintrules',
              name,
              body: { preconditions: { resourceVersion } },
            },
            requestOptions({ signal }),
          ),
        );
      } catch (error) {
        if (error instanceof K8sApiError && error.apiStatus === 404) return;
        throw error;
      }
    },
  };
}

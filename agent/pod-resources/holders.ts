/**
 * Which pods hold which device, from the kubelet's answer to PodResources `List` (pure): per
 * resource id (`Ascend910-3`, a GPU uuid, as the engine names devices), the containers the
 * kubelet allocated it to, ready to send as `device_holders` (CONTRACT §1.9).
 *
 * - Ascend device plugin ids (`huawei.com/Ascend910`: `Ascend910-3`; vNPU and shared-mode ids
 *   `Ascend910-2c-100-3`, `Ascend310P-0-99`) count as their physical device (physicalDeviceId).
 * - NVIDIA `nvidia.com/gpu` ids that are GPU uuids (`GPU-…`) are our resource id; a time-sliced
 *   replica (`GPU-…::2`) counts as its GPU. Any other id (`0`, `1` under the device plugin's
 *   `--device-id-strategy=index`) is not mapped.
 * - Not mapped, and counted: `huawei.com/npu` (ids that may be logical), MIG slices (MIG uuids,
 *   not the GPU's), Dynamic Resource Allocation claims (driver/pool/device names, which the
 *   snapshot does not carry), ids of a shape we do not know, and any other resource the
 *   controller counts as an accelerator (ACCELERATOR_RESOURCE_PREFIXES, shared with it: a
 *   renamed `nvidia.com/gpu-a100`, another `huawei.com/Ascend…` or `nvidia.com/gpu…` name).
 * - Other resources (CPUs, NICs, anything else) are not accelerators and are ignored: the
 *   drain never evicts a pod for a device fault unless it asks for an accelerator resource.
 *
 * One unmapped allocation makes the whole answer `incomplete`: a list sent without that pod
 * would say the device it holds is held by nobody (CONTRACT §1.9: a present list is complete),
 * and a drain would leave the pod on a failed device. So the agent sends no holders at all and
 * the drain falls back to the pods' annotations, which evict a pod that may hold the device.
 *
 * The answer is read as a tool's output: a pod or container name that is not a Kubernetes name
 * refuses the whole answer, naming the field (the caller counts it and sends no holders). An
 * answer beyond the contract's bounds (more than 32 containers on one device, more than 512
 * devices) or MAX_HOLDERS_BYTES is refused whole too, never cut: a cut list would say the
 * containers left out hold nothing, and a drain would leave them on the failed device.
 */
import { z } from 'zod';
import {
  SNAPSHOT_LIMITS,
  deviceHolderPodSchema,
  isAcceleratorResource,
  isAscendDeviceId,
  physicalDeviceId,
  type DeviceHolderPod,
  type DeviceHolderReading,
} from '../../contracts/index.js';

/** The most JSON bytes the holders may add to a snapshot (the ingest function takes 1 MiB in all). */
export const MAX_HOLDERS_BYTES = 64 * 1024;

/** Why an accelerator allocation names no resource id of ours. */
export const UNMAPPED_KINDS = ['logical-id', 'mig', 'dra', 'unknown-id', 'unknown-resource'] as const;
export type UnmappedKind = (typeof UNMAPPED_KINDS)[number];

/** The holders of a node's devices, as one answer gives them. */
export interface HoldersReading {
  /** By resource id (sorted); each device's pods sorted by namespace, name, container. */
  holders: DeviceHolderReading[];
  /** Accelerator allocations that name no device of ours, by why (all 0: else the answer is `incomplete`). */
  unmapped: Record<UnmappedKind, number>;
}

/**
 * Why an answer gives no holders: `invalid` (not a Kubernetes name, not the proto's shape),
 * `over-bounds`, or `incomplete` (some accelerator allocation names no device of ours).
 */
export type RefusedReading =
  | { refused: 'invalid' | 'over-bounds'; /** One line, naming the field or the bound. */ error: string }
  | { refused: 'incomplete'; error: string; unmapped: Record<UnmappedKind, number> };

/** Matches a GPU uuid as nvidia-smi and the device plugin's default `uuid` strategy print it. */
const GPU_UUID = /^GPU-[0-9A-Fa-f]+(-[0-9A-Fa-f]+)*$/;

// The decoded answer (proto-loader with keepCase and defaults: absent lists are []).
const devicesSchema = z.object({ resource_name: z.string(), device_ids: z.array(z.string()) });
const claimSchema = z.object({ claim_resources: z.array(z.unknown()) });
const containerSchema = z.object({
  name: deviceHolderPodSchema.shape.container,
  devices: z.array(devicesSchema),
  dynamic_resources: z.array(claimSchema).default([]),
});
const podSchema = z.object({
  name: deviceHolderPodSchema.shape.name,
  namespace: deviceHolderPodSchema.shape.namespace,
  containers: z.array(containerSchema),
});
const listResponseSchema = z.object({ pod_resources: z.array(podSchema) });

/** The device of ours `deviceId` of `resourceName` is, why it is none, or null: not an accelerator. */
export function resourceIdOf(
  resourceName: string,
  deviceId: string,
): string | { unmapped: UnmappedKind } | null {
  if (resourceName.startsWith('huawei.com/Ascend')) {
    const id = physicalDeviceId(deviceId);
    return isAscendDeviceId(id) ? id : { unmapped: 'unknown-id' };
  }
  if (resourceName === 'huawei.com/npu') return { unmapped: 'logical-id' };
  if (resourceName.startsWith('nvidia.com/mig-')) return { unmapped: 'mig' };
  if (resourceName === 'nvidia.com/gpu' || resourceName === 'nvidia.com/gpu.shared') {
    const id = deviceId.split('::')[0] ?? '';
    return GPU_UUID.test(id) ? id : { unmapped: 'unknown-id' };
  }
  // A resource the drain counts as an accelerator but we cannot map: its pod may be evicted
  // for a device fault, so leaving it out would publish its device as held by nobody.
  return isAcceleratorResource(resourceName) ? { unmapped: 'unknown-resource' } : null;
}

/** The holders in `response` (a decoded ListPodResourcesResponse), or why it is refused (one line). */
export function holdersFrom(response: unknown): HoldersReading | RefusedReading {
  const parsed = listResponseSchema.safeParse(response);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = (issue?.path ?? [])
      .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
      .join('');
    return { refused: 'invalid', error: `ListPodResourcesResponse${path}: ${issue?.message ?? 'invalid'}` };
  }
  const unmapped: Record<UnmappedKind, number> = {
    'logical-id': 0,
    mig: 0,
    dra: 0,
    'unknown-id': 0,
    'unknown-resource': 0,
  };
  const byDevice = new Map<string, Map<string, DeviceHolderPod>>();
  const place = (holder: DeviceHolderPod, id: ReturnType<typeof resourceIdOf>): void => {
    if (id === null) return;
    if (typeof id !== 'string') {
      unmapped[id.unmapped]++;
      return;
    }
    let pods = byDevice.get(id);
    if (pods === undefined) byDevice.set(id, (pods = new Map()));
    pods.set(`${holder.namespace}/${holder.name}/${holder.container}`, holder);
  };
  for (const pod of parsed.data.pod_resources)
    for (const container of pod.containers) {
      const holder = { namespace: pod.namespace, name: pod.name, container: container.name };
      for (const { resource_name, device_ids } of container.devices)
        for (const deviceId of device_ids) place(holder, resourceIdOf(resource_name, deviceId));
      for (const claim of container.dynamic_resources) unmapped.dra += claim.claim_resources.length;
    }
  const unmappedKinds = UNMAPPED_KINDS.filter((why) => unmapped[why] > 0);
  if (unmappedKinds.length > 0)
    return {
      refused: 'incomplete',
      error: `accelerator allocations not mapped to a device (${unmappedKinds.map((why) => `${why}: ${unmapped[why]}`).join(', ')})`,
      unmapped,
    };
  const ids = [...byDevice.keys()].sort();
  if (ids.length > SNAPSHOT_LIMITS.devices)
    return {
      refused: 'over-bounds',
      error: `${ids.length} held devices, more than ${SNAPSHOT_LIMITS.devices}`,
    };
  const holders: DeviceHolderReading[] = [];
  for (const resource_id of ids) {
    const pods = [...(byDevice.get(resource_id)?.entries() ?? [])].sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    if (pods.length > SNAPSHOT_LIMITS.holdersPerDevice)
      return {
        refused: 'over-bounds',
        error: `${resource_id} held by ${pods.length} containers, more than ${SNAPSHOT_LIMITS.holdersPerDevice}`,
      };
    holders.push({ resource_id, pods: pods.map(([, pod]) => pod) });
  }
  const bytes = Buffer.byteLength(JSON.stringify(holders));
  if (bytes > MAX_HOLDERS_BYTES)
    return { refused: 'over-bounds', error: `holders of ${bytes} bytes, more than ${MAX_HOLDERS_BYTES}` };
  return { holders, unmapped };
}

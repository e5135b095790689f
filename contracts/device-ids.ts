/**
 * Device plugin ids as the kubelet and Ascend's allocation annotations name them, against our
 * `resource_id` (`Ascend910-3`). Read from Ascend's device plugin (ascend-device-plugin
 * pkg/common/device.go `GetDeviceID`): a virtual NPU (`Ascend910-2c-100-3`: type, template,
 * vNPU id, physical id) and a shared-mode name (`Ascend310P-0-99`: type, physical id, share
 * index) count as their physical device. The agent (agent/pod-resources) and the per-device
 * drain (controller/remediation/allocation.ts) both read ids through this, and both count the
 * same resources as accelerators (ACCELERATOR_RESOURCE_PREFIXES).
 */

/** What stands for a pod's Dynamic Resource Allocation claims among its device resources. */
export const DRA_CLAIM_RESOURCE = 'resource.k8s.io/claims';

/**
 * Extended resources through which a device plugin hands out accelerators (prefixes of the
 * resource name): Ascend's `huawei.com/Ascend910`, `huawei.com/Ascend910-2c` (vNPU),
 * `huawei.com/Ascend310P`, the generic `huawei.com/npu`; NVIDIA's `nvidia.com/gpu` (renamed
 * ones such as `nvidia.com/gpu-a100` too) and MIG slices `nvidia.com/mig-1g.10gb`; and a pod
 * with Dynamic Resource Allocation claims (DRA_CLAIM_RESOURCE), which may hold any device.
 * The controller evicts only pods asking for one of these (allocation.ts `requestsAccelerator`);
 * the agent counts an allocation of one of these that it cannot map to a device as unmapped
 * (agent/pod-resources/holders.ts), so a pod the drain may evict is never left out of a holders
 * list said to be complete.
 */
export const ACCELERATOR_RESOURCE_PREFIXES = [
  'huawei.com/Ascend',
  'huawei.com/npu',
  'nvidia.com/gpu',
  'nvidia.com/mig-',
  DRA_CLAIM_RESOURCE,
] as const;

/** Whether `resourceName` is an accelerator resource (one of ACCELERATOR_RESOURCE_PREFIXES). */
export function isAcceleratorResource(resourceName: string): boolean {
  return ACCELERATOR_RESOURCE_PREFIXES.some((prefix) => resourceName.startsWith(prefix));
}

/** Whether `id` is the resource id of a physical Ascend device (`Ascend910-3`, `Ascend310P-0`). */
export function isAscendDeviceId(id: string): boolean {
  return /^Ascend[0-9A-Za-z]*-\d+$/.test(id);
}

/** The physical device a device plugin id stands for (`Ascend910-2c-100-3` → `Ascend910-3`). */
export function physicalDeviceId(name: string): string {
  const parts = name.trim().split('-');
  const type = parts[0] ?? '';
  // The last segment may carry a `_<n>` suffix (`Ascend310P-1c-400-3_0`).
  const last = (parts.at(-1) ?? '').split('_')[0] ?? '';
  if (parts.length === 4 && /^\d+c/.test(parts[1] ?? '')) return `${type}-${last}`;
  if (parts.length === 3 && /^\d+$/.test(parts[1] ?? '') && /^\d+$/.test(last)) return `${type}-${parts[1]}`;
  if (parts.length === 2) return `${type}-${last}`;
  return name.trim();
}

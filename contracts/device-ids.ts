/**
 * Device plugin ids as the kubelet and Ascend's allocation annotations name them, against our
 * `resource_id` (`Ascend910-3`). Read from Ascend's device plugin (ascend-device-plugin
 * pkg/common/device.go `GetDeviceID`): a virtual NPU (`Ascend910-2c-100-3`: type, template,
 * vNPU id, physical id) and a shared-mode name (`Ascend310P-0-99`: type, physical id, share
 * index) count as their physical device. The agent (agent/pod-resources) and the per-device
 * drain (controller/remediation/allocation.ts) both read ids through this.
 */

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

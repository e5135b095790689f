/**
 * Which pods hold which accelerator devices, from the allocation annotations Ascend's
 * scheduling stack writes on pods (pure). Read from the source of Ascend/mind-cluster
 * (commit 22bb3d98, 2026-08; the older Ascend/ascend-device-plugin agrees):
 *
 * - `huawei.com/AscendReal`: the devices the device plugin actually mounted into the pod,
 *   sorted, comma-separated: `Ascend910-0,Ascend910-1` (`Ascend910-<physical id>`). Written by
 *   the device plugin for every pod it serves, with or without Volcano
 *   (component/ascend-common/api/default_name.go `PodAnnotationAscendReal`;
 *   component/ascend-device-plugin/pkg/device/ascendcommon.go `AddPodAnnotation`).
 * - `huawei.com/kltDev`: the devices the kubelet picked. Not the truth when a scheduler chose
 *   others (the plugin then mounts those instead), so it is not read here.
 * - `huawei.com/<resource>` (`huawei.com/Ascend910`, `huawei.com/Ascend310P`,
 *   `huawei.com/Ascend310`): the devices Volcano's Ascend plugin chose, same format, written
 *   with `predicate-time` (component/ascend-for-volcano/internal/npu/base/task.go
 *   `SetNPUTopologyToPodFn`, common/util `ChangeIntArrToStr`); the device plugin reads it back
 *   (ascend-device-plugin/pkg/common/common.go `GetDeviceFromPodAnnotation`).
 * - `huawei.com/npu` (the generic resource of newer chips): names `npu-<id>`, ids that may be
 *   logical, not physical (Ascend950): not comparable with our `Ascend910-3`.
 * - `ascend.kubectl.kubernetes.io/ascend-910-configuration`: a JSON rank table, not a list.
 *
 * Device names compare as the plugin writes them, against our `resource_id` (`Ascend910-3`,
 * `Ascend310P-1`). A virtual NPU (`Ascend910-2c-100-3`: type, template, vNPU id, physical id)
 * and a shared-mode name (`Ascend310P-0-99`: type, physical id, share index) count as their
 * physical device (ascend-device-plugin/pkg/common/device.go `GetDeviceID`). NVIDIA GPUs have
 * no such annotation (their resource id is a UUID): the allocation is unknown there and the
 * drain takes the whole node.
 */
import type { PodSummary } from './pod-client.js';

/** Which pods hold the devices; `known` is false when the allocation cannot be trusted. */
export interface DeviceHolders {
  /**
   * False when no pod carries a readable allocation of the devices' kind, or when a pod asks
   * for such devices (an extended resource of that kind) without one: then any pod may hold
   * the failed device and the caller drains the whole node.
   */
  readonly known: boolean;
  /** The pods holding at least one of the devices (empty when unknown). */
  readonly pods: PodSummary[];
}

/** The physical device a device name stands for (`Ascend910-2c-100-3` → `Ascend910-3`). */
export function physicalDevice(name: string): string {
  const parts = name.trim().split('-');
  const type = parts[0] ?? '';
  // The last segment may carry a `_<n>` suffix (`Ascend310P-1c-400-3_0`).
  const last = (parts.at(-1) ?? '').split('_')[0] ?? '';
  if (parts.length === 4 && /^\d+c/.test(parts[1] ?? '')) return `${type}-${last}`;
  if (parts.length === 3 && /^\d+$/.test(parts[1] ?? '') && /^\d+$/.test(last)) return `${type}-${parts[1]}`;
  if (parts.length === 2) return `${type}-${last}`;
  return name.trim();
}

/** The device kind of a name: what comes before the first `-` (`Ascend910`, `Ascend310P`). */
function kindOf(name: string): string {
  return name.trim().split('-')[0] ?? '';
}

/** The devices `pod` holds according to `annotationKeys` (physical names, deduplicated). */
export function allocatedDevices(pod: PodSummary, annotationKeys: readonly string[]): string[] {
  const devices = new Set<string>();
  for (const key of annotationKeys) {
    const value = pod.annotations[key];
    if (!value) continue;
    for (const name of value.split(',')) if (name.trim()) devices.add(physicalDevice(name));
  }
  return [...devices];
}

/**
 * The pods among `pods` (one node's) holding any of `resourceIds`, by the annotations
 * `annotationKeys` (see the file comment for what the Ascend stack writes).
 */
export function podsHoldingDevices(
  pods: readonly PodSummary[],
  resourceIds: readonly string[],
  annotationKeys: readonly string[],
): DeviceHolders {
  const wanted = new Set(resourceIds.map(physicalDevice));
  const kinds = new Set(resourceIds.map(kindOf).filter(Boolean));
  const unknown: DeviceHolders = { known: false, pods: [] };
  if (wanted.size === 0 || kinds.size === 0) return unknown;
  // An extended resource of the devices' kind (`huawei.com/Ascend910`, `huawei.com/Ascend910-2c`).
  const asksForKind = (pod: PodSummary): boolean =>
    pod.deviceResources.some((resource) => kinds.has(kindOf(resource.slice(resource.indexOf('/') + 1))));
  let readable = 0;
  const holders: PodSummary[] = [];
  for (const pod of pods) {
    const held = allocatedDevices(pod, annotationKeys).filter((device) => kinds.has(kindOf(device)));
    if (held.length === 0) {
      // A running pod that asks for such devices but says not which: it may hold the failed one.
      const finished = pod.phase === 'Succeeded' || pod.phase === 'Failed';
      if (!finished && asksForKind(pod)) return unknown;
      continue;
    }
    readable++;
    if (held.some((device) => wanted.has(device))) holders.push(pod);
  }
  return readable > 0 ? { known: true, pods: holders } : unknown;
}

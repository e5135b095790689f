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
 * no such annotation (their resource id is a UUID).
 *
 * **Trust.** A pod's annotations are written by whoever may update the pod, its tenant
 * included, so they are read only as a hint of *which* device a pod holds, never as whether
 * it holds one. That comes from the pod's spec (immutable once created): only a pod asking
 * for an accelerator extended resource (`huawei.com/Ascend910`, `nvidia.com/gpu`, …) can
 * have been given a device by a device plugin, so only such pods are ever evicted for a
 * device fault. One whose annotation names none of the failed devices is left alone; one
 * whose annotation is missing or unreadable is evicted itself (it may hold the failed
 * device), and never widens the drain to pods that hold no accelerator. What remains: a
 * tenant can still annotate another device to dodge the eviction of its own pod (it then
 * keeps running on a failed card, its own loss); a pod reaching a device without asking for
 * one (privileged, a hostPath /dev/davinciN) is not seen. The kubelet's PodResources API on
 * the node says which devices the kubelet allocated: when the agent reports it (CONTRACT
 * §1.9), the holders it names decide instead (`holdersVerdict`), and the annotations are read
 * for failed devices whose holders are not known, and for Ascend devices besides the holders.
 *
 * **Ascend with Volcano.** The kubelet's allocation is not always what a pod mounts: with
 * Volcano (`UseVolcanoType`, the common MindCluster deployment) the Ascend device plugin
 * ignores the ids the kubelet allocated and mounts the devices Volcano chose
 * (ascend-device-plugin/pkg/server/plugin.go `Allocate` → `useVolcano`), writing those in
 * `huawei.com/AscendReal` and the kubelet's picks in `huawei.com/kltDev`. PodResources reports
 * the kubelet's picks, so for an Ascend device the holders may name the wrong pod. The drain
 * therefore evicts, for a failed Ascend device, the union of the pods the holders name and the
 * accelerator-requesting pods whose annotation names it (never a pod asking for no
 * accelerator). Cost: a pod whose kubelet pick was the failed device but which mounts another
 * is evicted too. NVIDIA's device plugin mounts what the kubelet allocated: for a GPU the
 * holders alone decide.
 */
import {
  isAcceleratorResource,
  isAscendDeviceId,
  physicalDeviceId,
  type PublishedNode,
} from '../../contracts/index.js';
import { podKey, type PodSummary } from './pod-client.js';

/**
 * Whether `pod` asks for any accelerator extended resource (its spec, not its annotations):
 * one of ACCELERATOR_RESOURCE_PREFIXES (contracts/device-ids.ts, shared with the agent).
 */
export function requestsAccelerator(pod: PodSummary): boolean {
  return pod.deviceResources.some(isAcceleratorResource);
}

/**
 * What a per-device drain does with one pod: `holder` (its annotation names a failed device)
 * and `unknown` (it asks for accelerators but its annotation names none of the failed
 * devices' kind: it may hold one) are evicted; `other-devices` (its annotation names only
 * other devices of that kind) and `no-accelerator` (it asks for none) are left alone.
 */
export type DeviceVerdict = 'holder' | 'unknown' | 'other-devices' | 'no-accelerator';

/** The physical device a device name stands for (`Ascend910-2c-100-3` → `Ascend910-3`); shared with the agent. */
export const physicalDevice = physicalDeviceId;

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
 * What a per-device drain does with `pod` when the devices `resourceIds` (`Ascend910-3`, a
 * GPU uuid) failed, reading its allocation from `annotationKeys` (pure; see the file comment
 * for why the spec decides whether and the annotation only which).
 */
export function deviceVerdict(
  pod: PodSummary,
  resourceIds: readonly string[],
  annotationKeys: readonly string[],
): DeviceVerdict {
  if (!requestsAccelerator(pod)) return 'no-accelerator';
  const wanted = new Set(resourceIds.map(physicalDevice));
  const kinds = new Set(resourceIds.map(kindOf).filter(Boolean));
  // Only names of the failed devices' kind say anything: `npu-<id>` or another chip's names
  // are not comparable, and a pod naming none of that kind may hold the failed device.
  const held = allocatedDevices(pod, annotationKeys).filter((device) => kinds.has(kindOf(device)));
  if (held.length === 0) return 'unknown';
  return held.some((device) => wanted.has(device)) ? 'holder' : 'other-devices';
}

/**
 * The pods holding each of `resourceIds` as the node's entry says (the agent's report of the
 * kubelet's PodResources, CONTRACT §1.9): resource id → `namespace/name`, for the devices whose
 * holders are known (the entry lists the device with `pods`). Empty when none is known.
 */
export function knownHolders(
  entry: PublishedNode | null | undefined,
  resourceIds: readonly string[],
): ReadonlyMap<string, readonly string[]> {
  const wanted = new Set(resourceIds);
  const out = new Map<string, readonly string[]>();
  for (const device of entry?.npus ?? [])
    if (wanted.has(device.resource_id) && device.pods !== undefined) out.set(device.resource_id, device.pods);
  return out;
}

/**
 * What a per-device drain does with `pod` when the devices `resourceIds` failed and `holders`
 * says who holds some of them (pure). The spec still decides whether (a pod asking for no
 * accelerator is never evicted, whatever an agent says); the holders say which: a pod they
 * name for a failed device is a holder, one they do not name is not, and only failed devices
 * they say nothing about are looked up in the annotations (`deviceVerdict`). A failed Ascend
 * device is the exception: Volcano may have mounted another device than the kubelet's pick
 * (file comment), so a pod whose annotation names it is a holder too, named or not.
 */
export function holdersVerdict(
  pod: PodSummary,
  resourceIds: readonly string[],
  holders: ReadonlyMap<string, readonly string[]>,
  annotationKeys: readonly string[],
): DeviceVerdict {
  if (!requestsAccelerator(pod)) return 'no-accelerator';
  const key = podKey(pod);
  const annotated = new Set(allocatedDevices(pod, annotationKeys));
  const unknown: string[] = [];
  for (const id of resourceIds) {
    const pods = holders.get(id);
    if (pods === undefined) unknown.push(id);
    else if (pods.includes(key)) return 'holder';
    else if (isAscendDeviceId(id) && annotated.has(physicalDevice(id))) return 'holder';
  }
  return unknown.length === 0 ? 'other-devices' : deviceVerdict(pod, unknown, annotationKeys);
}

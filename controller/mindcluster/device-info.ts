/**
 * MindCluster's device-info ConfigMap (`kube-system/mindx-dl-deviceinfo-<node>`, data key
 * `DeviceInfoCfg`) read into one node's view: which devices it names, which of its lists each
 * is in, its fault entries, and whether the ConfigMap passed MindCluster's own integrity check.
 * Pure: text in, a view or a one-line refusal naming the field out.
 *
 * The shapes are mind-cluster's: component/ascend-device-plugin/pkg/common/proto.go
 * (NodeDeviceInfoCache {DeviceInfo, SuperPodID, ServerIndex, CheckCode}, NodeDeviceInfo
 * {DeviceList map[string]string, UpdateTime int64}, DeviceFault {fault_type, npu_name,
 * large_model_fault_level, fault_level, fault_handling, fault_code, fault_time_and_level_map});
 * the DeviceList keys are `huawei.com/<Resource>` (the schedulable devices) and its
 * `-Unhealthy`, `-NetworkUnhealthy`, `-Recovering` and `-Fault` companions
 * (pkg/common/constants.go); `ManuallySeparateNPU` is a data key of its own beside
 * DeviceInfoCfg (constants.go DeviceInfoCMManuallySeparateNPUKey).
 */
import { FAULT_CODE_PATTERN, SNAPSHOT_LIMITS } from '../../contracts/index.js';
import {
  Refusal,
  isObject,
  jsonObjectOf,
  readOrRefuse,
  shape,
  type ReadResult,
  type RefusalReason,
} from './configmap-json.js';
import { deviceInfoCheckCode } from './go-json.js';

/** The data key holding DeviceInfoCfg (mind-cluster component/ascend-common/api/consts.go). */
export const DEVICE_INFO_KEY = 'DeviceInfoCfg';
/** The data key listing manually separated NPUs (comma-separated names). */
export const MANUALLY_SEPARATE_KEY = 'ManuallySeparateNPU';
/** The ConfigMaps' name prefix; the node name is the rest. */
export const DEVICE_INFO_PREFIX = 'mindx-dl-deviceinfo-';
/** The label MindCluster puts on them (api.CIMCMLabelKey = common.CmConsumerValue). */
export const DEVICE_INFO_LABEL_SELECTOR = 'mx-consumer-cim=true';
/** A ConfigMap holds at most 1 MiB; more text than that is not MindCluster's. */
export const MAX_DEVICE_INFO_BYTES = 1024 * 1024;

/** The resources read, and the family their devices are (families/ascend-910b, ascend-310p). */
export const RESOURCE_FAMILIES = { Ascend910: '910B', Ascend310P: '310P' } as const;
export type MindClusterResource = keyof typeof RESOURCE_FAMILIES;

/** The lists a device can be in. */
export type MindClusterList =
  'available' | 'unhealthy' | 'network-unhealthy' | 'recovering' | 'manually-separated';

/** One fault entry of `huawei.com/<Resource>-Fault`. */
export interface MindClusterFault {
  type: string;
  /** The worst of fault_handling, fault_level and large_model_fault_level. */
  level: string;
  codes: string[];
}

/** One device MindCluster names (`Ascend910-4`). */
export interface MindClusterDevice {
  name: string;
  index: number;
  lists: MindClusterList[];
  faults: MindClusterFault[];
}

/** One node as its device-info ConfigMap tells it. */
export interface MindClusterView {
  node: string;
  resource: MindClusterResource;
  /** By index, ascending. */
  devices: MindClusterDevice[];
  /** DeviceInfo.UpdateTime: seconds; the plugin rewrites on a change, else every 5 minutes. */
  updateTime: number;
}

export type { RefusalReason };

export type ParseResult = ReadResult<'view', MindClusterView>;

/**
 * Fault levels, mildest first (mind-cluster pkg/common/fault_code.go). Unknown levels rank as
 * a warning: a level this reader does not know must not hide a fault.
 */
const LEVEL_RANK: Readonly<Record<string, number>> = {
  '': 0,
  NormalNPU: 0,
  NormalNetwork: 0,
  NotHandleFault: 0,
  SubHealthFault: 1,
  RestartRequest: 2,
  RestartBusiness: 2,
  FreeRestartNPU: 3,
  RestartNPU: 3,
  PreSeparateNPU: 4,
  SeparateNPU: 5,
  ManuallySeparateNPU: 6,
};
const UNKNOWN_LEVEL_RANK = 2;
export function levelRank(level: string): number {
  return LEVEL_RANK[level] ?? UNKNOWN_LEVEL_RANK;
}
/** A level at or past this separates the device: health Critical. */
export const CRITICAL_RANK = LEVEL_RANK.SeparateNPU ?? 5;

const MAX_FAULTS = 4 * SNAPSHOT_LIMITS.devices;
/** A device name: its resource and its index (`Ascend910-4`). */
const DEVICE_NAME = /^(Ascend910|Ascend310P)-(\d{1,4})$/;

/** Reads one ConfigMap's data for `node`. */
export function parseDeviceInfo(
  node: string,
  data: Readonly<Record<string, string>> | undefined,
): ParseResult {
  return readOrRefuse('view', () => read(node, data ?? {}));
}

function read(node: string, data: Readonly<Record<string, string>>): MindClusterView {
  const cfg = jsonObjectOf(node, DEVICE_INFO_PREFIX, data, DEVICE_INFO_KEY, MAX_DEVICE_INFO_BYTES);
  const info = cfg.DeviceInfo;
  if (!isObject(info)) throw shape(`${DEVICE_INFO_KEY}.DeviceInfo`, 'must be an object');
  const list = info.DeviceList;
  if (!isObject(list)) throw shape(`${DEVICE_INFO_KEY}.DeviceInfo.DeviceList`, 'must be an object');
  const deviceList: Record<string, string> = {};
  for (const [key, value] of Object.entries(list)) {
    if (typeof value !== 'string')
      throw shape(`${DEVICE_INFO_KEY}.DeviceInfo.DeviceList.${key}`, 'must be a string');
    deviceList[key] = value;
  }
  const updateTime = info.UpdateTime;
  if (typeof updateTime !== 'number' || !Number.isSafeInteger(updateTime))
    throw shape(`${DEVICE_INFO_KEY}.DeviceInfo.UpdateTime`, 'must be an integer');
  const checkCode = cfg.CheckCode;
  if (typeof checkCode !== 'string' || checkCode === '')
    throw new Refusal('integrity', `${DEVICE_INFO_KEY}.CheckCode: missing`);
  // As MindCluster's readers do: a mismatch means someone other than the plugin wrote it.
  if (deviceInfoCheckCode(deviceList, updateTime) !== checkCode.toLowerCase())
    throw new Refusal(
      'integrity',
      `${DEVICE_INFO_KEY}.CheckCode: does not match DeviceInfo (sha256 of its Go JSON)`,
    );
  return { node, ...devicesOf(deviceList, data[MANUALLY_SEPARATE_KEY] ?? ''), updateTime };
}

function devicesOf(
  list: Readonly<Record<string, string>>,
  manuallySeparated: string,
): { resource: MindClusterResource; devices: MindClusterDevice[] } {
  const resource = (Object.keys(RESOURCE_FAMILIES) as MindClusterResource[]).find((r) =>
    Object.keys(list).some((key) => key === `huawei.com/${r}` || key.startsWith(`huawei.com/${r}-`)),
  );
  if (resource === undefined)
    throw shape(
      `${DEVICE_INFO_KEY}.DeviceInfo.DeviceList`,
      'names no huawei.com/Ascend910 or huawei.com/Ascend310P',
    );
  const devices = new Map<number, MindClusterDevice>();
  const deviceOf = (name: string, field: string): MindClusterDevice => {
    const match = DEVICE_NAME.exec(name);
    if (match?.[1] !== resource)
      throw shape(field, `"${name.slice(0, 64)}" is not a ${resource}-<n> device name`);
    const index = Number(match[2]);
    let device = devices.get(index);
    if (device === undefined) {
      if (devices.size >= SNAPSHOT_LIMITS.devices)
        throw shape(field, `more than ${SNAPSHOT_LIMITS.devices} devices`);
      device = { name: `${resource}-${index}`, index, lists: [], faults: [] };
      devices.set(index, device);
    }
    return device;
  };
  const base = `${DEVICE_INFO_KEY}.DeviceInfo.DeviceList.huawei.com/${resource}`;
  const lists: [string, MindClusterList][] = [
    ['', 'available'],
    ['-Unhealthy', 'unhealthy'],
    ['-NetworkUnhealthy', 'network-unhealthy'],
    ['-Recovering', 'recovering'],
  ];
  for (const [suffix, name] of lists) {
    for (const device of names(list[`huawei.com/${resource}${suffix}`]))
      addList(deviceOf(device, base + suffix), name);
  }
  for (const device of names(manuallySeparated))
    addList(deviceOf(device, MANUALLY_SEPARATE_KEY), 'manually-separated');
  for (const fault of faultsOf(list[`huawei.com/${resource}-Fault`], `${base}-Fault`))
    deviceOf(fault.npu, `${base}-Fault[].npu_name`).faults.push(fault.fault);
  return { resource, devices: [...devices.values()].sort((a, b) => a.index - b.index) };
}

function addList(device: MindClusterDevice, list: MindClusterList): void {
  if (!device.lists.includes(list)) device.lists.push(list);
}

function names(text: string | undefined): string[] {
  if (text === undefined) return [];
  return text
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

function faultsOf(text: string | undefined, field: string): { npu: string; fault: MindClusterFault }[] {
  if (text === undefined || text.trim() === '') return [];
  let entries: unknown;
  try {
    entries = JSON.parse(text);
  } catch (error) {
    throw new Refusal('json', `${field}: not JSON (${(error as Error).message})`);
  }
  if (entries === null) return [];
  if (!Array.isArray(entries)) throw shape(field, 'must be a JSON array');
  if (entries.length > MAX_FAULTS) throw shape(field, `more than ${MAX_FAULTS} entries`);
  return entries.map((entry: unknown, i) => {
    const at = `${field}[${i}]`;
    if (!isObject(entry)) throw shape(at, 'must be an object');
    const npu = stringField(entry, 'npu_name', at);
    const levels = ['fault_handling', 'fault_level', 'large_model_fault_level'].map((key) =>
      entry[key] === undefined ? '' : stringField(entry, key, at),
    );
    const level = levels.reduce((worst, l) => (levelRank(l) > levelRank(worst) ? l : worst), '');
    const codes = new Set<string>();
    const faultCode = entry.fault_code === undefined ? '' : stringField(entry, 'fault_code', at);
    const timed = entry.fault_time_and_level_map;
    const all = [...names(faultCode), ...(isObject(timed) ? Object.keys(timed) : [])];
    for (const code of all) {
      if (!FAULT_CODE_PATTERN.test(code))
        throw shape(`${at}.fault_code`, `"${code.slice(0, 32)}" is not a hex fault code`);
      codes.add(code.toUpperCase());
    }
    if (codes.size > SNAPSHOT_LIMITS.errorCodes)
      throw shape(`${at}.fault_code`, `more than ${SNAPSHOT_LIMITS.errorCodes} codes`);
    const type = entry.fault_type === undefined ? '' : stringField(entry, 'fault_type', at);
    return { npu, fault: { type, level, codes: [...codes].sort() } };
  });
}

function stringField(entry: Record<string, unknown>, key: string, at: string): string {
  const value = entry[key];
  if (typeof value !== 'string') throw shape(`${at}.${key}`, 'must be a string');
  return value;
}

/** Test helpers: device-info and node-info ConfigMap data written the way mind-cluster's plugin and NodeD write them. */
import { deviceInfoCheckCode, nodeInfoCheckCode } from './go-json.js';

/** DeviceInfoCfg text for `deviceList`, with a correct CheckCode (or `checkCode` when given). */
export function deviceInfoCfg(
  deviceList: Record<string, string>,
  options: { updateTime?: number; checkCode?: string } = {},
): string {
  const updateTime = options.updateTime ?? 1_764_000_000;
  return JSON.stringify({
    DeviceInfo: { DeviceList: deviceList, UpdateTime: updateTime },
    SuperPodID: -2,
    ServerIndex: -2,
    CheckCode: options.checkCode ?? deviceInfoCheckCode(deviceList, updateTime),
  });
}

/** A 910 node's DeviceList: `faulty` maps a device index to [level, codes, list]. */
export function ascend910List(
  count: number,
  faulty: Record<
    number,
    { level: string; codes: string[]; list: 'Unhealthy' | 'NetworkUnhealthy' | null }
  > = {},
): Record<string, string> {
  const name = (i: number): string => `Ascend910-${i}`;
  const all = Array.from({ length: count }, (_, i) => i);
  const inList = (list: string): string =>
    all
      .filter((i) => faulty[i]?.list === list)
      .map(name)
      .join(',');
  return {
    'huawei.com/Ascend910': all
      .filter((i) => faulty[i]?.list !== 'Unhealthy')
      .map(name)
      .join(','),
    'huawei.com/Ascend910-Fault': JSON.stringify(
      Object.entries(faulty).map(([i, f]) => ({
        fault_type: f.list === 'NetworkUnhealthy' ? 'CardNetworkUnhealthy' : 'CardUnhealthy',
        npu_name: name(Number(i)),
        large_model_fault_level: f.level,
        fault_level: f.level,
        fault_handling: f.level,
        fault_code: f.codes.join(','),
      })),
    ),
    'huawei.com/Ascend910-NetworkUnhealthy': inList('NetworkUnhealthy'),
    'huawei.com/Ascend910-Recovering': '',
    'huawei.com/Ascend910-Unhealthy': inList('Unhealthy'),
  };
}

/** One faulty host device as NodeD lists it. */
export interface NodeDFault {
  DeviceType: string;
  DeviceId: number;
  FaultCode: string[];
  FaultLevel: string;
}

/** NodeD's `NodeInfo` text for these faults and status, with a correct CheckCode (or `checkCode` when given). */
export function nodeInfoText(
  faults: readonly NodeDFault[],
  nodeStatus: string,
  options: { checkCode?: string } = {},
): string {
  return JSON.stringify({
    NodeInfo: { FaultDevList: faults, NodeStatus: nodeStatus },
    CheckCode: options.checkCode ?? nodeInfoCheckCode(faults, nodeStatus),
  });
}

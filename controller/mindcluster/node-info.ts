/**
 * MindCluster NodeD's node-info ConfigMap (`mindx-dl/mindx-dl-nodeinfo-<node>`, data key
 * `NodeInfo`) read into one node's view: the host devices NodeD found faulty (CPU, memory, …,
 * each with its fault codes and handling level) and the node status it derived. Pure: text in,
 * a view or a one-line refusal naming the field out; `nodeProblemOf` turns a view into the
 * node problem npu-fault publishes (`host-hardware-fault` or `host-hardware-warning`).
 *
 * The shapes are mind-cluster's: component/noded/pkg/common/type.go (NodeInfoCM {NodeInfo
 * FaultDevInfo, CheckCode}, FaultDevInfo {FaultDevList []*FaultDev, NodeStatus}, FaultDev
 * {DeviceType, DeviceId int64, FaultCode []string, FaultLevel}); the levels and statuses are
 * constants.go's. NodeD writes the ConfigMap when the content changes (and every 30 minutes
 * while it does not), and deletes it once the node is healthy with no fault
 * (pkg/reporter/cmreporter/configmap_reporter.go): an absent ConfigMap is a healthy node.
 */
import { PRINTABLE_TEXT_PATTERN, SNAPSHOT_LIMITS } from '../../contracts/index.js';
import type { NodeProblemReading } from '../../contracts/index.js';
import { nodeInfoCheckCode, type GoFaultDev } from './go-json.js';
import { Refusal, isObject, jsonObjectOf, readOrRefuse, shape, type ReadResult } from './configmap-json.js';

/** The data key holding NodeInfoCM (mind-cluster api.NodeInfoCMDataKey). */
export const NODE_INFO_KEY = 'NodeInfo';
/** The ConfigMaps' name prefix (noded common.NodeInfoCMNamePrefix); the node name is the rest. */
export const NODE_INFO_PREFIX = 'mindx-dl-nodeinfo-';
/** Where NodeD writes them (mind-cluster api.DLNamespace). */
export const NODE_INFO_NAMESPACE = 'mindx-dl';
/** More text than a ConfigMap holds is not NodeD's. */
export const MAX_NODE_INFO_BYTES = 1024 * 1024;
/** More faulty host devices than this in one node is not a host. */
export const MAX_NODE_FAULT_DEVICES = 256;

/** One faulty host device as NodeD lists it. */
export interface NodeFaultDevice {
  /** `CPU`, `Memory`, … (NodeD's DeviceType, from IPMI and its own monitors). */
  type: string;
  id: number;
  /** Upper-case hex, as written. */
  codes: string[];
  /** `NotHandleFault`, `PreSeparateFault`, `SeparateFault`, or a level this reader does not know. */
  level: string;
}

/** One node as its node-info ConfigMap tells it. */
export interface NodeInfoView {
  node: string;
  /** `Healthy`, `PreSeparate`, `UnHealthy` (or one this reader does not know). */
  status: string;
  devices: NodeFaultDevice[];
}

export type NodeInfoResult = ReadResult<'view', NodeInfoView>;

/**
 * Fault levels and node statuses by rank: 0 nothing to do, 1 keep new jobs away, 2 separate
 * the node. One this reader does not know ranks 1: a new level must not hide a fault, nor
 * separate a node on a guess.
 */
const RANK: Readonly<Record<string, number>> = {
  '': 0,
  NotHandleFault: 0,
  Healthy: 0,
  PreSeparateFault: 1,
  PreSeparate: 1,
  SubHealthy: 1,
  SeparateFault: 2,
  UnHealthy: 2,
};
const rankOf = (word: string): number => RANK[word] ?? 1;

/** A fault code as NodeD writes it (`00000011`): hex digits, at most 16. */
const CODE = /^[0-9A-Fa-f]{1,16}$/;

/** Reads one ConfigMap's data for `node`. */
export function parseNodeInfo(
  node: string,
  data: Readonly<Record<string, string>> | undefined,
): NodeInfoResult {
  return readOrRefuse('view', () => read(node, data ?? {}));
}

function read(node: string, data: Readonly<Record<string, string>>): NodeInfoView {
  const cm = jsonObjectOf(node, NODE_INFO_PREFIX, data, NODE_INFO_KEY, MAX_NODE_INFO_BYTES);
  const info = cm.NodeInfo;
  if (!isObject(info)) throw shape(`${NODE_INFO_KEY}.NodeInfo`, 'must be an object');
  const status = optionalString(info, 'NodeStatus', `${NODE_INFO_KEY}.NodeInfo`);
  const list = info.FaultDevList;
  if (list !== undefined && list !== null && !Array.isArray(list))
    throw shape(`${NODE_INFO_KEY}.NodeInfo.FaultDevList`, 'must be an array');
  const entries: unknown[] | null = Array.isArray(list) ? list : null;
  if (entries !== null && entries.length > MAX_NODE_FAULT_DEVICES)
    throw shape(`${NODE_INFO_KEY}.NodeInfo.FaultDevList`, `more than ${MAX_NODE_FAULT_DEVICES} entries`);
  const go = entries === null ? null : entries.map((entry, i) => goFaultDevOf(entry, i));
  const checkCode = cm.CheckCode;
  if (typeof checkCode !== 'string' || checkCode === '')
    throw new Refusal('integrity', `${NODE_INFO_KEY}.CheckCode: missing`);
  // As ClusterD's ParseNodeInfoCM does: a mismatch means someone other than NodeD wrote it.
  if (nodeInfoCheckCode(go, status) !== checkCode.toLowerCase())
    throw new Refusal(
      'integrity',
      `${NODE_INFO_KEY}.CheckCode: does not match NodeInfo (sha256 of its Go JSON)`,
    );
  const devices = (go ?? [])
    .filter((d): d is GoFaultDev => d !== null)
    .map((d) => ({
      type: d.DeviceType,
      id: d.DeviceId,
      codes: (d.FaultCode ?? []).map((c) => c.toUpperCase()),
      level: d.FaultLevel,
    }));
  return { node, status, devices };
}

/** One FaultDevList entry as Go decodes it: absent fields are zero values, a null entry a nil pointer. */
function goFaultDevOf(entry: unknown, i: number): GoFaultDev | null {
  const at = `${NODE_INFO_KEY}.NodeInfo.FaultDevList[${i}]`;
  if (entry === null) return null;
  if (!isObject(entry)) throw shape(at, 'must be an object');
  const id = entry.DeviceId ?? 0;
  if (typeof id !== 'number' || !Number.isSafeInteger(id))
    throw shape(`${at}.DeviceId`, 'must be an integer');
  const codes = entry.FaultCode;
  if (codes !== undefined && codes !== null && !Array.isArray(codes))
    throw shape(`${at}.FaultCode`, 'must be an array of strings');
  if (Array.isArray(codes)) {
    if (codes.length > SNAPSHOT_LIMITS.errorCodes)
      throw shape(`${at}.FaultCode`, `more than ${SNAPSHOT_LIMITS.errorCodes} codes`);
    for (const code of codes)
      if (typeof code !== 'string' || !CODE.test(code))
        throw shape(`${at}.FaultCode`, `${JSON.stringify(code).slice(0, 32)} is not a hex fault code`);
  }
  return {
    DeviceType: optionalString(entry, 'DeviceType', at),
    DeviceId: id,
    FaultCode: Array.isArray(codes) ? (codes as string[]) : null,
    FaultLevel: optionalString(entry, 'FaultLevel', at),
  };
}

/** A string field of at most SNAPSHOT_LIMITS.label printable characters; absent is Go's "". */
function optionalString(entry: Record<string, unknown>, key: string, at: string): string {
  const value = entry[key];
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw shape(`${at}.${key}`, 'must be a string');
  if (value.length > SNAPSHOT_LIMITS.label || !PRINTABLE_TEXT_PATTERN.test(value))
    throw shape(`${at}.${key}`, `must be printable text of at most ${SNAPSHOT_LIMITS.label} characters`);
  return value;
}

/**
 * The node problem a view holds: `host-hardware-fault` when NodeD separates the node (a
 * SeparateFault device, or the status UnHealthy), `host-hardware-warning` when it only keeps
 * new jobs away (PreSeparateFault, PreSeparate, or a level or status this reader does not
 * know), none for NotHandleFault alone. The message names the devices at that rank first.
 */
export function nodeProblemOf(view: NodeInfoView): NodeProblemReading | undefined {
  const worstDevice = view.devices.reduce((rank, d) => Math.max(rank, rankOf(d.level)), 0);
  const rank = Math.max(worstDevice, rankOf(view.status));
  if (rank === 0) return undefined;
  const named = view.devices
    .filter((d) => rankOf(d.level) > 0)
    .sort((a, b) => rankOf(b.level) - rankOf(a.level))
    .map(
      (d) =>
        `${d.type || 'device'} ${d.id}${d.codes.length > 0 ? ` ${d.codes.join(',')}` : ''} (${d.level || 'no level'})`,
    );
  const message = `NodeD: node ${view.status || 'status unset'}${named.length > 0 ? `; ${named.join('; ')}` : ''}`;
  return {
    reason: rank >= 2 ? 'host-hardware-fault' : 'host-hardware-warning',
    message: Array.from(message).slice(0, SNAPSHOT_LIMITS.problemMessage).join(''),
  };
}

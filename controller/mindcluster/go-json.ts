/**
 * MindCluster's integrity check, as its readers run it: `CheckCode` is the sha256 (hex) of Go's
 * `json.Marshal` of the parsed `DeviceInfo` struct (`NodeDeviceInfo{DeviceList map[string]string;
 * UpdateTime int64}`), not of the bytes as written (mind-cluster
 * component/clusterd/pkg/domain/device/device_util.go ParseDeviceInfoCM → util.EqualDataHash,
 * component/clusterd/pkg/common/util/util.go MakeDataHash; the writer is
 * component/ascend-device-plugin/pkg/kubeclient/client_server.go WriteDeviceInfoDataIntoCM).
 * So this re-serialises the two fields the way Go does: fields in struct order, map keys
 * sorted by their UTF-8 bytes, `<`, `>`, `&`, U+2028 and U+2029 escaped, invalid UTF-16 as
 * U+FFFD, and a reader that disagrees with the writer on any byte refuses the ConfigMap.
 */
import { createHash } from 'node:crypto';

/** Go's `json.Marshal` of a string (encoding/json, escapeHTML on, Go ≥ 1.22 short forms). */
export function goJsonString(value: string): string {
  let out = '"';
  for (const ch of wellFormed(value)) {
    const code = ch.codePointAt(0) ?? 0;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case '\\':
        out += '\\\\';
        continue;
      case '\n':
        out += '\\n';
        continue;
      case '\r':
        out += '\\r';
        continue;
      case '\t':
        out += '\\t';
        continue;
      case '\b':
        out += '\\b';
        continue;
      case '\f':
        out += '\\f';
        continue;
    }
    if (code < 0x20 || ch === '<' || ch === '>' || ch === '&' || code === 0x2028 || code === 0x2029)
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Go's `json.Marshal` of a `map[string]string`: keys sorted by their UTF-8 bytes. */
export function goJsonStringMap(map: Readonly<Record<string, string>>): string {
  const keys = Object.keys(map)
    .map((key) => ({ key, bytes: Buffer.from(wellFormed(key), 'utf8') }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  return `{${keys.map(({ key }) => `${goJsonString(key)}:${goJsonString(map[key] ?? '')}`).join(',')}}`;
}

/** The CheckCode MindCluster's writer computes for `DeviceInfo` (sha256 hex of Go's JSON). */
export function deviceInfoCheckCode(
  deviceList: Readonly<Record<string, string>>,
  updateTime: number,
): string {
  const json = `{"DeviceList":${goJsonStringMap(deviceList)},"UpdateTime":${updateTime}}`;
  return createHash('sha256').update(json, 'utf8').digest('hex');
}

/** Lone surrogates as U+FFFD, as Go's decoder reads a `\ud800` escape. */
function wellFormed(value: string): string {
  return value.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** One NodeD FaultDev as Go holds it after decoding (noded pkg/common/type.go). */
export interface GoFaultDev {
  DeviceType: string;
  DeviceId: number;
  /** nil (absent or null) marshals as `null`, an empty slice as `[]`. */
  FaultCode: readonly string[] | null;
  FaultLevel: string;
}

/**
 * The CheckCode NodeD computes for `NodeInfo` (noded pkg/common/common.go MakeDataHash of
 * FaultDevInfo{FaultDevList []*FaultDev; NodeStatus string}), which ClusterD's
 * ParseNodeInfoCM compares: sha256 hex of Go's JSON, fields in struct order, a nil list or
 * entry as `null`.
 */
export function nodeInfoCheckCode(list: readonly (GoFaultDev | null)[] | null, nodeStatus: string): string {
  const dev = (d: GoFaultDev | null): string =>
    d === null
      ? 'null'
      : `{"DeviceType":${goJsonString(d.DeviceType)},"DeviceId":${d.DeviceId},"FaultCode":${
          d.FaultCode === null ? 'null' : `[${d.FaultCode.map(goJsonString).join(',')}]`
        },"FaultLevel":${goJsonString(d.FaultLevel)}}`;
  const json = `{"FaultDevList":${list === null ? 'null' : `[${list.map(dev).join(',')}]`},"NodeStatus":${goJsonString(nodeStatus)}}`;
  return createHash('sha256').update(json, 'utf8').digest('hex');
}

/**
 * The one door to the parsers of `nvidia-smi` output into the nvidia payload (`gpus[]`):
 *
 * - `--query-gpu=... --format=csv[,noheader][,nounits]` (csv.ts);
 * - `-q` text (query-text.ts) and `-q -x` XML (query-xml.ts): both read into one tree
 *   (query-tree.ts), then the same lookups pick the fields (query-gpu.ts);
 * - the default table (table.ts);
 * - `nvlink --status` (nvlink.ts): each GPU's NVLinks, for the agent's NVLink check (not a
 *   snapshot layout: parseNvidiaSmi does not read it).
 *
 * parseNvidiaSmi tells the layout (detect.ts). Tool failures (`GPU is lost`, NVML not loaded)
 * throw ToolError with the lost bus ids (tool-error.ts); what every layout returns, and when a
 * GPU is `readable: false`, is in parsed.ts.
 */
export { DEFAULT_QUERY_FIELDS, isCsvHeader, parseNvidiaCsv } from './csv.js';
export { detectNvidiaSmiKind, parseNvidiaSmi, type NvidiaSmiKind } from './detect.js';
export { NVIDIA_SMI_EXPECTED, emptyGpu, type NvidiaParseOptions, type NvidiaParsed } from './parsed.js';
export {
  NVLINK_LIMITS,
  parseNvlinkStatus,
  type NvlinkGpu,
  type NvlinkLink,
  type NvlinkLinkState,
  type NvlinkNote,
} from './nvlink.js';
export { parseNvidiaQuery } from './query-text.js';
export type { QNode } from './query-tree.js';
export { parseNvidiaXml } from './query-xml.js';
export { parseNvidiaTable } from './table.js';
export { checkNvidiaSmiToolError } from './tool-error.js';
export { readXmlTree } from './xml-reader.js';

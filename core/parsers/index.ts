/**
 * The one door to the tool-output parsers: `parseToolOutput(from, text, options)` detects
 * the sub-format of what the tool printed and returns a validated `hdc.health/v1` snapshot.
 * Recognised outputs that are not device snapshots get a NotSnapshotError saying what they
 * are; unknown layouts and empty outputs a ParseError naming the line, never an empty result.
 */
import type { Snapshot } from '../../contracts/index.js';
import { ParseError } from '../errors.js';
import { parseHdcJson, wrapPayload, type EnvelopeDefaults } from './hdc.js';
import { parseNpuSmiTable } from './npu-smi.js';
import { parseNvidiaSmi } from './nvidia-smi/index.js';

export {
  NotSnapshotError,
  ToolError,
  boundReading,
  normaliseBusId,
  type OnOutOfRange,
  type OutOfRangeReading,
  type ReadingOptions,
} from './common.js';
export { parseHdcJson, parseJsonText, HDC_EXPECTED } from './hdc.js';
export {
  KernelLogScanner,
  MAX_EVENT_LINE,
  kmsgSequence,
  parseKernelEvents,
  parseNodeKernelEvents,
  type AerSeverity,
  type KernelEventKind,
  type KernelLogEvent,
} from './kmsg-events.js';
export {
  MAX_DETAIL,
  MAX_SUBJECT,
  NODE_KERNEL_EVENT_KINDS,
  nodeKernelMessage,
  type NodeKernelEventKind,
  type NodeKernelLogEvent,
  type NodeKernelMessage,
} from './kmsg-node.js';
export { attachXidEvents, parseXidEvents, XID_FALLEN_OFF_BUS, type KernelXidEvent } from './kmsg-xid.js';
export { mergeNpuSmiDetails, UnknownDeviceError, type NpuSmiDetail } from './npu-smi-merge.js';
export {
  parseNpuSmiInfo,
  parseNpuSmiMapping,
  parseNpuSmiTable,
  type NpuSmiInfoRecord,
  type NpuSmiMapping,
  type NpuSmiTablePayload,
} from './npu-smi.js';
export {
  DEFAULT_QUERY_FIELDS,
  emptyGpu,
  parseNvidiaCsv,
  parseNvidiaQuery,
  parseNvidiaSmi,
  parseNvidiaTable,
  parseNvidiaXml,
  parseNvlinkStatus,
  NVLINK_LIMITS,
  type NvidiaParsed,
  type NvlinkGpu,
  type NvlinkLink,
  type NvlinkLinkState,
  type NvlinkNote,
} from './nvidia-smi/index.js';

/** The tools `parse` reads. */
export const TOOL_SOURCES = ['hdc', 'npu-smi', 'nvidia-smi'] as const;
/** One of TOOL_SOURCES. */
export type ToolSource = (typeof TOOL_SOURCES)[number];

/** Envelope fields, plus how to read the tool's own timestamp and a noheader CSV. */
export interface ParseToolOptions extends EnvelopeDefaults {
  /**
   * When true, a timestamp printed in the output (nvidia-smi's date line or `Timestamp`)
   * becomes `collected_at`, and `collectedAt` is only the fallback. The agent leaves it false:
   * its own clock carries the zone the tool's local time lacks.
   */
  preferOutputTimestamp?: boolean;
  /** Field list of a `--format=csv,noheader` file (default DEFAULT_QUERY_FIELDS). */
  fields?: readonly string[];
}

/**
 * Parses one tool output into a validated snapshot envelope.
 * - `hdc`: `hdc health -j` JSON (envelope or payload).
 * - `npu-smi`: the `npu-smi info` table (910B or 310P family).
 * - `nvidia-smi`: `--query-gpu` CSV, `-q` text, `-q -x` XML, or the default table.
 * Throws ToolError for the tools' own failure messages, NotSnapshotError for related outputs
 * that are not snapshots, ParseError (with a line) for anything else it cannot read, and
 * ValidationError (with a field path) when the result breaks the schema.
 */
export function parseToolOutput(from: ToolSource, text: string, options: ParseToolOptions): Snapshot {
  if (text.trim() === '') throw new ParseError(`empty ${from} output`, 1);
  if (from === 'hdc') return parseHdcJson(text, options);
  if (from === 'npu-smi') return wrapPayload(parseNpuSmiTable(text), options);
  const parsed = parseNvidiaSmi(text, options.fields);
  const collectedAt =
    options.preferOutputTimestamp && parsed.timestamp !== null ? parsed.timestamp : options.collectedAt;
  return wrapPayload(parsed.payload, { ...options, collectedAt });
}

/** True when `value` names a tool `parse` reads. */
export function isToolSource(value: string): value is ToolSource {
  return (TOOL_SOURCES as readonly string[]).includes(value);
}

/**
 * Pieces shared by the tool-output parsers: the errors they throw beyond ParseError, and the
 * small value readers every layout needs (NA cells, `used / total` pairs, PCI bus ids).
 */
import { NpuFaultError, ParseError } from '../errors.js';

/**
 * The tool itself reported a failure instead of data (NVML not loaded, a GPU lost, the Ascend
 * driver busy). The agent reports such devices as off the bus rather than as a parse bug.
 */
export class ToolError extends NpuFaultError {
  /** 1-based line of the tool's error message. */
  readonly line: number | undefined;
  /** Normalised bus ids (`0000:03:00.0`) the tool named as lost; empty when it named none. */
  readonly lostBusIds: string[];
  constructor(message: string, line?: number, lostBusIds: string[] = []) {
    super('tool_error', line === undefined ? message : `line ${line}: ${message}`);
    this.line = line;
    this.lostBusIds = lostBusIds;
  }
}

/**
 * The input is a recognised tool output that does not describe devices' health as a snapshot
 * (`npu-smi info -t board`, `--query-compute-apps`, a MindCluster ConfigMap). `format` names it.
 */
export class NotSnapshotError extends ParseError {
  /** What the input was recognised as, e.g. `npu-smi info -t board`. */
  readonly format: string;
  constructor(format: string, expected: string, line?: number) {
    super(`this is ${format} output, not a device snapshot; ${expected}`, line);
    this.format = format;
  }
}

/** Cells the tools print when a value is unavailable; all of them read as null. */
const NULL_CELLS = new Set([
  '',
  'NA',
  'N/A',
  '[N/A]',
  '-',
  '--',
  'ERR!',
  '[Not Supported]',
  'Not Supported',
  'Unknown Error',
  '[Unknown Error]',
]);

/** True when a cell is one of the tools' "no value" spellings. */
export function isNullCell(cell: string): boolean {
  return NULL_CELLS.has(cell.trim());
}

/**
 * Reads a numeric cell, dropping a trailing unit (`114W`, `49C`, `16x`, `81920 MiB`, `87 %`).
 * Returns null for NA spellings and undefined for text that is not a number at all, so the
 * caller decides whether that is an error.
 */
export function readNumber(cell: string): number | null | undefined {
  const text = cell.trim();
  if (isNullCell(text)) return null;
  const match = /^([-+]?\d+(?:\.\d+)?)\s*(?:[A-Za-z%/]+)?$/.exec(text);
  if (!match?.[1]) return undefined;
  const value = Number(match[1]);
  return Number.isFinite(value) ? value : undefined;
}

/** Like readNumber, but anything that is not a number or NA is a ParseError naming the line. */
export function requireNumber(cell: string, what: string, line: number): number | null {
  const value = readNumber(cell);
  if (value === undefined)
    throw new ParseError(`${what}: expected a number or NA, found '${cell.trim()}'`, line);
  return value;
}

/** A non-negative counter: a negative reading is not a counter, so it becomes null. */
export function asCounter(value: number | null | undefined): number | null {
  return value === undefined || value === null || value < 0 ? null : value;
}

/**
 * Normalises a PCI address to `DDDD:BB:DD.F` upper-case: nvidia-smi prints an 8-digit domain
 * (`00000000:19:00.0`), the kernel log drops the function (`PCI:0000:91:00`) and writes lower
 * case. One spelling lets kernel-log events find their GPU and keeps state keys stable.
 * Returns null when the text is not a PCI address.
 */
export function normaliseBusId(text: string): string | null {
  const match = /^(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.([0-7]))?$/.exec(
    text.trim(),
  );
  if (!match) return null;
  const [, domain = '0', bus = '', device = '', fn = '0'] = match;
  const dom = domain.replace(/^0+(?=[0-9A-Fa-f]{4})/, '').padStart(4, '0');
  return `${dom}:${bus.padStart(2, '0')}:${device.padStart(2, '0')}.${fn}`.toUpperCase();
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * Reads a ctime-style date (`Fri May 29 23:07:13 2026`, as nvidia-smi and `dmesg -T` print it)
 * into ISO 8601. The tools print local time without a zone, so it is read as UTC: exact for the
 * UTC nodes the agents run on, and an honest upper bound of a few hours elsewhere.
 */
export function ctimeToIso(text: string): string | null {
  const match = /^(?:[A-Z][a-z]{2}\s+)?([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d{2}):(\d{2}):(\d{2})\s+(\d{4})$/.exec(
    text.trim(),
  );
  if (!match) return null;
  const [, mon = '', day = '', hh = '', mm = '', ss = '', year = ''] = match;
  const month = MONTHS.indexOf(mon);
  if (month < 0) return null;
  const date = new Date(Date.UTC(Number(year), month, Number(day), Number(hh), Number(mm), Number(ss)));
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** Splits text into lines without their line ending or trailing blanks (posters add them). */
export function splitLines(text: string): string[] {
  // CRLF (Windows) and a lone CR (old Mac, some serial consoles) end lines too.
  return text.split(/\r\n|\r|\n/).map((line) => line.replace(/\s+$/, ''));
}

/** The 1-based number of the first non-blank line, for errors about the whole input. */
export function firstContentLine(lines: readonly string[]): number {
  const index = lines.findIndex((line) => line.trim() !== '');
  return index < 0 ? 1 : index + 1;
}

/**
 * Pieces shared by the tool-output parsers: the errors they throw beyond ParseError, the
 * small value readers every layout needs (NA cells, numbers with units, PCI bus ids, words),
 * and the reading of a number outside what hardware can report as null (boundReading).
 *
 * Tool output is untrusted text (a 5 MB line is one hung tool or one hostile file away), so
 * every parser works in time linear in its input: each regular expression in core/parsers
 * passes the backtracking audit of hack/lint/regex-audit.ts (run by linear-time.test.ts), and
 * whitespace is trimmed and split with String methods, never with `\s+$`-style patterns.
 */
import { READING_FIELDS, withinReadingBounds, type ReadingField } from '../../contracts/index.js';
import { FAMILIES } from '../../families/index.js';
import { NpuFaultError, ParseError, excerpt, quoted } from '../errors.js';

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

/** A cell read as a number and the unit printed after it (`''` when none). */
interface Measure {
  value: number;
  unit: string;
}

/** `114W`, `49 C`, `81920 MiB`, `87 %`, `16x`, `0.5`; anything else is undefined. */
function readMeasure(text: string): Measure | undefined {
  const match = /^([-+]?\d+(?:\.\d+)?)\s*([A-Za-z%/]*)$/.exec(text);
  if (!match?.[1]) return undefined;
  const value = Number(match[1]);
  return Number.isFinite(value) ? { value, unit: match[2] ?? '' } : undefined;
}

/**
 * Reads a numeric cell, dropping a trailing unit (`114W`, `49C`, `16x`, `81920 MiB`, `87 %`).
 * Returns null for NA spellings and undefined for text that is not a number at all, so the
 * caller decides whether that is an error. Where a unit says which field a value belongs to,
 * use requireNumber, which checks it.
 */
export function readNumber(cell: string): number | null | undefined {
  const text = cell.trim();
  if (isNullCell(text)) return null;
  return readMeasure(text)?.value;
}

/** Units a value may be printed with: `''` stands for none (`nounits`, or a bare count). */
export type Units = readonly string[];

/** For values printed without a unit: counts, ids, PCIe generations. */
export const NO_UNIT: Units = [''];

/** `C or no unit`: how an error names the units a field allows. */
function describeUnits(units: Units): string {
  const named = units.filter((unit) => unit !== '');
  if (named.length === 0) return 'no unit';
  return units.includes('') ? `${named.join(' or ')} or no unit` : named.join(' or ');
}

/**
 * Reads a numeric cell whose unit must be one of `units` (`''` for none); NA spellings are
 * null. Anything else is a ParseError naming the line and `what` and quoting a short excerpt:
 * text that is not a number, and a number in another unit (`81920 MiB` read as a temperature
 * is a column shifted by a wrong field list, not a 81920 °C GPU).
 */
export function requireNumber(cell: string, what: string, line: number, units: Units): number | null {
  const text = cell.trim();
  if (isNullCell(text)) return null;
  const measure = readMeasure(text);
  // `what` may come from the input too (a -q key, a CSV header): it is cut like any quote.
  const field = excerpt(what, 60);
  if (measure === undefined)
    throw new ParseError(`${field}: expected a number or NA, found ${quoted(text)}`, line);
  if (!units.includes(measure.unit))
    throw new ParseError(
      `${field}: ${quoted(text)} is in ${measure.unit ? excerpt(measure.unit, 12) : 'no unit'}; expected ${describeUnits(units)}`,
      line,
    );
  return measure.value;
}

/** True when `char` is one character of white space (the set of `\s` and String.trim). */
export function isBlank(char: string): boolean {
  return char !== '' && char.trim() === '';
}

/** Splits text into its blank-separated words (no empty words). */
export function words(text: string): string[] {
  return text.split(/\s/).filter((word) => word !== '');
}

/**
 * The first `count` blank-separated words of `text`, and the rest after the blanks that follow
 * them with its inner blanks kept: (`0 0 0   Ascend 910A`, 3) gives `['0', '0', '0']` and
 * `Ascend 910A`. Fewer words than `count` give what there is and an empty rest.
 */
export function leadingWords(text: string, count: number): { words: string[]; rest: string } {
  const found: string[] = [];
  let i = 0;
  while (found.length < count) {
    while (i < text.length && isBlank(text[i] ?? '')) i++;
    const start = i;
    while (i < text.length && !isBlank(text[i] ?? '')) i++;
    if (i === start) break;
    found.push(text.slice(start, i));
  }
  return { words: found, rest: text.slice(i).trim() };
}

/** A number a tool printed outside what hardware can report for its field: read as null. */
export interface OutOfRangeReading {
  /** The device field it was printed for (`temperature_gpu`, `hbm.temp_c`): READING_FIELDS. */
  field: ReadingField;
  value: number;
}

/** Told of each number a parser read as null for being out of range (the agent counts them). */
export type OnOutOfRange = (reading: OutOfRangeReading) => void;

/** What the tool-output parsers take beside the text. */
export interface ReadingOptions {
  /** Told of each printed number read as null for being outside READING_BOUNDS. */
  onOutOfRange?: OnOutOfRange | undefined;
}

/**
 * `value` when it is within what hardware can report for `field` (READING_BOUNDS), else null,
 * told to `onOutOfRange`. A tool prints 65535 or -1 for a sensor it cannot read: that is an
 * unreadable metric, not a device at 65535 °C, and one such sensor must not make the whole
 * snapshot one the contract refuses.
 */
export function boundReading(
  value: number | null,
  field: ReadingField,
  onOutOfRange?: OnOutOfRange,
): number | null {
  if (value === null || withinReadingBounds(READING_FIELDS[field], value)) return value;
  onOutOfRange?.({ field, value });
  return null;
}

/**
 * The bounded readings of each kind of device record (`npu910`, `card310`, `chip310`, `gpu`),
 * by their key path within it: each family's own (families/<id>/schema.ts), from the registry.
 */
export const DEVICE_READINGS = FAMILIES.deviceReadings;

/** Each field's key path split once: `hbm.ecc.single_bit` is ['hbm', 'ecc', 'single_bit']. */
const FIELD_KEYS = new Map(
  (Object.keys(READING_FIELDS) as ReadingField[]).map((field) => [field, field.split('.')]),
);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Sets each of `fields` of `device` that holds a number outside its bounds to null (the
 * device as built by a parser, or JSON as a tool printed it: other values are left for the
 * schema to judge), telling `onOutOfRange` of each. Returns how many it set to null.
 */
export function boundDeviceReadings(
  device: unknown,
  fields: readonly ReadingField[],
  onOutOfRange?: OnOutOfRange,
): number {
  let nulled = 0;
  for (const field of fields) {
    const keys = FIELD_KEYS.get(field) ?? [field];
    let holder: unknown = device;
    for (let i = 0; i < keys.length - 1 && isRecord(holder); i++) holder = holder[keys[i] ?? ''];
    const key = keys[keys.length - 1] ?? field;
    if (!isRecord(holder) || typeof holder[key] !== 'number') continue;
    const value = holder[key];
    if (boundReading(value, field, onOutOfRange) === null) {
      holder[key] = null;
      nulled++;
    }
  }
  return nulled;
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
  return text.split(/\r\n|\r|\n/).map((line) => line.trimEnd());
}

/** The 1-based number of the first non-blank line, for errors about the whole input. */
export function firstContentLine(lines: readonly string[]): number {
  const index = lines.findIndex((line) => line.trim() !== '');
  return index < 0 ? 1 : index + 1;
}

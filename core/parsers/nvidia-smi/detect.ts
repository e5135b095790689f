/** Tells which layout an nvidia-smi output is, and hands it to that layout's parser. */
import { ParseError, quoted } from '../../errors.js';
import { firstContentLine, readNumber, splitLines } from '../common.js';
import { isCsvHeader, parseNvidiaCsv } from './csv.js';
import { NVIDIA_SMI_EXPECTED, type NvidiaParseOptions, type NvidiaParsed } from './parsed.js';
import { parseNvidiaQuery } from './query-text.js';
import { parseNvidiaXml } from './query-xml.js';
import { parseNvidiaTable, tableGpuRow } from './table.js';
import { checkNvidiaSmiToolError } from './tool-error.js';

/** The sub-formats of nvidia-smi output. */
export type NvidiaSmiKind = 'csv' | 'query' | 'xml' | 'table' | 'unknown';

/** Tells the sub-format from the first lines. */
export function detectNvidiaSmiKind(text: string): NvidiaSmiKind {
  const lines = splitLines(text).filter((line) => line.trim() !== '');
  const first = (lines[0] ?? '').trim();
  if (first.startsWith('<?xml') || first.startsWith('<nvidia_smi_log')) return 'xml';
  if (
    lines.some(
      (line) =>
        /^=+NVSMI LOG=+$/.test(line.trim()) ||
        /^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$/.test(line.trim()),
    )
  )
    return 'query';
  if (lines.some((line) => tableGpuRow(line) !== null || /^\|\s*NVIDIA-SMI\s/.test(line))) return 'table';
  // A one-column query has no comma: its header is a field name, its rows single values.
  if (first.includes(',') || isCsvHeader(first) || readNumber(first) !== undefined) return 'csv';
  return 'unknown';
}

/**
 * Parses any nvidia-smi output this module knows, detecting its sub-format. `fields` is the
 * field list of a noheader CSV (default DEFAULT_QUERY_FIELDS).
 */
export function parseNvidiaSmi(
  text: string,
  fields?: readonly string[],
  options: NvidiaParseOptions = {},
): NvidiaParsed {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const kind = detectNvidiaSmiKind(text);
  if (kind === 'xml') return parseNvidiaXml(text, options);
  if (kind === 'query') return parseNvidiaQuery(text, options);
  if (kind === 'table') return parseNvidiaTable(text, options);
  if (kind === 'csv') return parseNvidiaCsv(text, fields, options);
  const line = firstContentLine(lines);
  if (lines.every((l) => l.trim() === '')) throw new ParseError('empty nvidia-smi output', 1);
  throw new ParseError(
    `not a known nvidia-smi output: ${quoted((lines[line - 1] ?? '').trim())}; ${NVIDIA_SMI_EXPECTED}`,
    line,
  );
}

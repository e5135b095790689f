/**
 * The default `nvidia-smi` table, old (pre-525) and new layouts, MIG blocks and `ERR!` cells:
 * cells found by the `|` separators, then words.
 */
import type { Gpu } from '../../../contracts/index.js';
import { ParseError } from '../../errors.js';
import {
  ctimeToIso,
  firstContentLine,
  normaliseBusId,
  readNumber,
  requireNumber,
  splitLines,
  words,
  type ReadingOptions,
} from '../common.js';
import { PRINTED_UNITS, boundAndMarkUnreadable, emptyGpu, type NvidiaParsed } from './parsed.js';
import { checkNvidiaSmiToolError } from './tool-error.js';

/** The persistence-mode (Linux) and driver-model (Windows) words that end a GPU row's first cell. */
const GPU_ROW_MODES = new Set(['On', 'Off', 'TCC', 'WDDM']);
const TABLE_BUS_ID = /^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$/;

/** What the first row of a GPU block gives. */
interface TableGpuRow {
  index: string;
  name: string;
  busId: string;
  /** The `Volatile Uncorr. ECC` cell. */
  ecc: string;
}

/**
 * First row of a GPU block: `|   0  NVIDIA A100-SXM4-80GB   On  |   00000000:27:00.0 Off |  0 |`:
 * cells split at `|`, then words, never one long pattern (which backtracks on a line of blanks).
 */
export function tableGpuRow(line: string): TableGpuRow | null {
  if (line.length < 2 || !line.startsWith('|') || !line.endsWith('|')) return null;
  const [first = '', second = '', ...rest] = line.slice(1, -1).split('|');
  if (rest.length === 0) return null;
  const head = words(first);
  const index = head[0] ?? '';
  const mode = head[head.length - 1] ?? '';
  if (head.length < 3 || !/^\d+$/.test(index) || !GPU_ROW_MODES.has(mode)) return null;
  const bus = words(second);
  if (bus.length !== 2 || !TABLE_BUS_ID.test(bus[0] ?? '')) return null;
  const trimmed = first.trim();
  const name = trimmed.slice(index.length, trimmed.length - mode.length).trim();
  return { index, name, busId: bus[0] ?? '', ecc: rest.join('|').trim() };
}

/**
 * Second row: `| N/A   49C    P0   114W /  400W |   72297MiB /  81920MiB |  11%  Default |`: the
 * first cell's words are fan, temperature, performance state and `usage/cap`, either side of
 * which may be `N/A` (a vGPU guest prints `N/A   N/A    P8    N/A /  N/A`). Null when the row is
 * not of that shape.
 */
function tableMetricRow(line: string): { temperature: string; power: string } | null {
  const end = line.indexOf('|', 1);
  if (!line.startsWith('|') || end < 0) return null;
  const cell = line
    .slice(1, end)
    .split('/')
    .map((part) => part.trim())
    .join('/');
  const [, temperature = '', , usageCap = '', ...extra] = words(cell);
  const usage = usageCap.startsWith('N/A/') ? 'N/A' : (usageCap.split('/')[0] ?? '');
  const cap = usageCap.slice(usage.length + 1);
  const capOk = cap !== '' && (!cap.includes('/') || cap === 'N/A');
  if (extra.length > 0 || usage === '' || !capOk || temperature === '') return null;
  return { temperature, power: usage };
}

/**
 * Parses the default `nvidia-smi` table: for each GPU its index, name (as abbreviated by the
 * table), bus id, temperature, power draw and `Volatile Uncorr. ECC` (null when it reads
 * `Off`/`On`/`N/A`: ECC disabled or MIG mode). MIG and process blocks are skipped. Fragments
 * cut by a poster parse as far as whole GPU blocks go: the table prints no GPU count, so a cut
 * between two GPU blocks cannot be seen here. The agent queries CSV (with `count`) or `-q`,
 * which can; a GPU that no output lists is the agent's inventory check (`present: false`).
 */
export function parseNvidiaTable(text: string, options: ReadingOptions = {}): NvidiaParsed {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const gpus: Gpu[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (/^\|\s*(MIG devices:|Processes:)/.test(line)) break;
    const row = tableGpuRow(line);
    if (!row) continue;
    const metrics = tableMetricRow(lines[i + 1] ?? '');
    if (!metrics)
      throw new ParseError(
        `GPU ${row.index}: the row 'Fan Temp Perf Pwr:Usage/Cap' is missing or cut`,
        i + 2,
      );
    const gpu = emptyGpu(Number(row.index));
    gpu.name = row.name;
    gpu.bus_id = normaliseBusId(row.busId);
    // `Off`/`On`/`N/A`: ECC disabled or MIG mode, no count.
    gpu.ecc_uncorrected_volatile = readNumber(row.ecc) ?? null;
    gpu.temperature_gpu = requireNumber(metrics.temperature, 'temperature', i + 2, PRINTED_UNITS.temperature);
    gpu.power_draw_w = requireNumber(metrics.power, 'power draw', i + 2, PRINTED_UNITS.power);
    // `Off`/`On` (ECC disabled) is a setting, not a reading: only a count or N/A speaks.
    const ecc = row.ecc === 'Off' || row.ecc === 'On' ? null : row.ecc;
    gpus.push(boundAndMarkUnreadable(gpu, [metrics.temperature, metrics.power, ecc], options.onOutOfRange));
    i++;
  }
  if (gpus.length === 0)
    throw new ParseError(
      "no GPU row ('| <index>  <name>  On|Off | <bus id> ... |') in the nvidia-smi table",
      firstContentLine(lines),
    );
  const driver = lines.map((l) => /Driver Version:\s*(\S+)/.exec(l)?.[1]).find((v) => v !== undefined);
  const date = lines.find((l) => ctimeToIso(l) !== null);
  return {
    payload: { family: 'nvidia', ...(driver === undefined ? {} : { driver_version: driver }), gpus },
    timestamp: date === undefined ? null : ctimeToIso(date),
    driverCount: null,
  };
}

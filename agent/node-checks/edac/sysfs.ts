/**
 * Reads the kernel's EDAC memory-controller counters: `devices/system/edac/mc/mc<N>/
 * ce_count|ue_count` (correctable and uncorrectable errors since the EDAC driver loaded) and
 * each DIMM's (`dimm<N>/` or, on drivers that count per rank, `rank<N>/`: `dimm_label`,
 * `dimm_ce_count`, `dimm_ue_count`), which name the module to replace.
 */
import { join } from 'node:path';
import { errorCode } from '../../../platform/index.js';
import { parseWholeNumber, type FileReader } from '../file-reader.js';

/** One DIMM (or rank) as read. */
export interface DimmReading {
  /** `dimm0`, `rank3` */
  readonly name: string;
  /** The firmware's label (`CPU_SrcID#0_MC#0_Chan#0_DIMM#0`), or the name when it has none. */
  readonly label: string;
  readonly ce: number | undefined;
  readonly ue: number | undefined;
}

/** One memory controller as read; a count is undefined when its file could not be read. */
export interface ControllerReading {
  /** `mc0` */
  readonly name: string;
  readonly ce: number | undefined;
  readonly ue: number | undefined;
  readonly dimms: readonly DimmReading[];
}

/** A read of EDAC: unavailable (no driver, no memory controller), or its controllers. */
export type EdacReading =
  | { readonly available: false }
  | { readonly available: true; readonly controllers: readonly ControllerReading[] };

const CONTROLLER = /^mc\d{1,4}$/;
const DIMM = /^(dimm|rank)\d{1,5}$/;

async function count(files: FileReader, path: string): Promise<number | undefined> {
  try {
    return parseWholeNumber(await files.readText(path));
  } catch {
    return undefined;
  }
}

/** A label for messages: printable, one line, short; the DIMM's name when it has none. */
function cleanLabel(text: string | undefined, fallback: string): string {
  const label = (text ?? '')
    .trim()
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 64);
  return label === '' ? fallback : label;
}

/** Reads every memory controller; rejects when the mc directory exists but cannot be listed. */
export async function readEdac(files: FileReader, sysfsRoot: string): Promise<EdacReading> {
  const dir = join(sysfsRoot, 'devices/system/edac/mc');
  let names: string[];
  try {
    names = (await files.list(dir)).filter((name) => CONTROLLER.test(name));
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return { available: false };
    throw error;
  }
  if (names.length === 0) return { available: false };
  const controllers = await Promise.all(names.map((name) => readController(files, join(dir, name), name)));
  return { available: true, controllers };
}

async function readController(files: FileReader, dir: string, name: string): Promise<ControllerReading> {
  const [ce, ue, entries] = await Promise.all([
    count(files, join(dir, 'ce_count')),
    count(files, join(dir, 'ue_count')),
    files.list(dir, 4096).catch(() => [] as string[]),
  ]);
  const dimms = await Promise.all(
    entries
      .filter((entry) => DIMM.test(entry))
      .slice(0, 256)
      .map(async (entry): Promise<DimmReading> => {
        const [label, dimmCe, dimmUe] = await Promise.all([
          files.readText(join(dir, entry, 'dimm_label'), 1024).catch(() => undefined),
          count(files, join(dir, entry, 'dimm_ce_count')),
          count(files, join(dir, entry, 'dimm_ue_count')),
        ]);
        return { name: entry, label: cleanLabel(label, `${name}/${entry}`), ce: dimmCe, ue: dimmUe };
      }),
  );
  return { name, ce, ue, dimms };
}

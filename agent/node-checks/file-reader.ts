/**
 * How the node checks read the kernel's files (sysfs, procfs): small reads with a size
 * bound, directory listings with a length bound, symbolic links resolved. The checks take a
 * FileReader in their deps so tests point them at fake trees built in a temp dir, and a file
 * that is not what the kernel writes (a huge file, a listing of thousands) costs one bounded
 * read and a clear error, never the agent's memory.
 */
import { open, readdir, realpath, access, constants } from 'node:fs/promises';
import { AppError } from '../../platform/index.js';

/** The largest file `readText` reads by default: sysfs attributes are one page at most. */
export const DEFAULT_MAX_FILE_BYTES = 64 * 1024;

/** The most names a listing returns by default (a node has tens of interfaces, not thousands). */
export const DEFAULT_MAX_ENTRIES = 1024;

/** A file was larger than the reader's bound, or a listing longer: the source is not the kernel's. */
export class OversizeError extends AppError {
  constructor(path: string, limit: string) {
    super('oversize', `${path}: more than ${limit}`);
  }
}

/** Reads the kernel's small files. Every method rejects with the errno error (`ENOENT`, `EACCES`, `EINVAL`). */
export interface FileReader {
  /** A file's text, at most `maxBytes` (default DEFAULT_MAX_FILE_BYTES); more is an OversizeError. */
  readText(path: string, maxBytes?: number): Promise<string>;
  /** The names in a directory, sorted; more than `maxEntries` (default DEFAULT_MAX_ENTRIES) is an OversizeError. */
  list(dir: string, maxEntries?: number): Promise<string[]>;
  /** The path with every symbolic link resolved. */
  realPath(path: string): Promise<string>;
  /** Whether the path exists (following links) and, with `executable`, may be run. */
  exists(path: string, executable?: boolean): Promise<boolean>;
}

/** The real reader on node:fs. */
export const nodeFileReader: FileReader = {
  async readText(path, maxBytes = DEFAULT_MAX_FILE_BYTES) {
    const file = await open(path, 'r');
    try {
      // sysfs files report a size of 4096 whatever they hold: read to the end, one byte past the
      // bound, in small chunks (most hold a few bytes, and a round reads hundreds of them).
      const buffer = Buffer.alloc(Math.min(maxBytes + 1, 4096));
      const chunks: Buffer[] = [];
      let total = 0;
      for (;;) {
        const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) break;
        total += bytesRead;
        if (total > maxBytes) throw new OversizeError(path, `${maxBytes} bytes`);
        chunks.push(Buffer.from(buffer.subarray(0, bytesRead)));
      }
      return Buffer.concat(chunks).toString('utf8');
    } finally {
      await file.close();
    }
  },
  async list(dir, maxEntries = DEFAULT_MAX_ENTRIES) {
    const names = await readdir(dir);
    if (names.length > maxEntries) throw new OversizeError(dir, `${maxEntries} entries`);
    return names.sort();
  },
  realPath: (path) => realpath(path),
  async exists(path, executable = false) {
    try {
      await access(path, executable ? constants.X_OK : constants.F_OK);
      return true;
    } catch {
      return false;
    }
  },
};

/** A sysfs counter or number (`42\n`); undefined when the text is not a whole number. */
export function parseWholeNumber(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^\d{1,15}$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

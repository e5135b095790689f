/** Test support for subcommands: a CliIO over in-memory files that records the output. */
import type { CliIO } from './io.js';

/** A recording CliIO. */
export interface MemoryIO extends CliIO {
  out: string;
  err: string;
}

/**
 * A CliIO whose files are `files` (plus `fallback(path)` for anything else, e.g. reading
 * real fixtures from disk); unknown paths fail with ENOENT, as the file system would.
 * Streams arrive in small chunks, so line splitting across chunk borders is exercised.
 */
export function memoryIO(
  files: Record<string, string> = {},
  options: { isTTY?: boolean; fallback?: (path: string) => string | undefined; chunkSize?: number } = {},
): MemoryIO {
  const read = (path: string): string => {
    const text = Object.hasOwn(files, path) ? files[path] : options.fallback?.(path);
    if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return text;
  };
  const chunkSize = options.chunkSize ?? 7;
  const io: MemoryIO = {
    out: '',
    err: '',
    isTTY: options.isTTY ?? false,
    stdout: (text) => void (io.out += text),
    stderr: (text) => void (io.err += text),
    readFile: async (path) => read(path),
    readStream: (path) => ({
      async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
        const bytes = Buffer.from(read(path), 'utf8');
        for (let i = 0; i < bytes.length; i += chunkSize) yield bytes.subarray(i, i + chunkSize);
      },
    }),
  };
  return io;
}

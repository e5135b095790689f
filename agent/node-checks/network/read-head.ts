/**
 * Reads the head of a small file: at most `maxBytes`, so a table path pointing somewhere
 * unexpected (a huge file, a device that never ends) costs a bounded read. /proc files report
 * size 0, so it reads until end of file or the bound rather than trusting the size.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** Reads up to `maxBytes` of `path` as UTF-8; `truncated` when there was more. Rejects on I/O errors. */
export type ReadHead = (path: string, maxBytes: number) => Promise<{ text: string; truncated: boolean }>;

/** The real reader. */
export const readHead: ReadHead = async (path, maxBytes) => {
  // Non-blocking, so a FIFO without a writer reads as empty instead of holding a thread forever.
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const buffer = Buffer.alloc(maxBytes + 1);
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, null);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    const truncated = filled > maxBytes;
    let text = buffer.subarray(0, Math.min(filled, maxBytes)).toString('utf8');
    // A cut line is no line: keep only the complete ones.
    if (truncated) text = text.slice(0, text.lastIndexOf('\n') + 1);
    return { text, truncated };
  } finally {
    await handle.close();
  }
};

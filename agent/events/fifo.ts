/**
 * A named pipe (`mkfifo`; fed by `journalctl -kf` or a test): read through the event loop as
 * a socket, no thread held. Opened read-write so that it never reports end of file when its
 * writers come and go (Linux allows it on a FIFO, and it never blocks the open).
 */
import { close, constants, open } from 'node:fs';
import { Socket } from 'node:net';

/** What readFifo reports to. */
export interface FifoContext {
  signal: AbortSignal;
  /** The pipe is open and being read. */
  opened(): void;
  onChunk(chunk: Buffer): void;
}

/** Reads the FIFO at `path` until the signal aborts (resolves); rejects on errors. */
export async function readFifo(path: string, ctx: FifoContext): Promise<void> {
  const fd = await new Promise<number>((resolve, reject) => {
    open(path, constants.O_RDWR | constants.O_NONBLOCK, (error, fd) => (error ? reject(error) : resolve(fd)));
  });
  let socket: Socket;
  try {
    socket = new Socket({ fd, readable: true, writable: false });
  } catch (error) {
    close(fd, () => undefined);
    throw error;
  }
  ctx.opened();
  await new Promise<void>((resolve, reject) => {
    const stop = (): void => {
      socket.destroy();
      resolve();
    };
    socket.on('data', (chunk: Buffer) => ctx.onChunk(chunk));
    socket.once('error', (error) => {
      ctx.signal.removeEventListener('abort', stop);
      socket.destroy();
      reject(error);
    });
    socket.once('close', () => {
      ctx.signal.removeEventListener('abort', stop);
      resolve();
    });
    if (ctx.signal.aborted) stop();
    else ctx.signal.addEventListener('abort', stop, { once: true });
  });
}

/**
 * /dev/kmsg as the kernel serves it: every read() returns exactly one record
 * (`6,1234,5678901,-;text` and its ` KEY=value` lines), blocks until one is written, and
 * fails with EPIPE once when the ring buffer overwrote records this reader had not read yet
 * (the next read goes on with the oldest record left). Opening it starts at the oldest record
 * in the ring, which holds everything since boot on a quiet node.
 *
 * Node cannot lseek(SEEK_END) a file descriptor, so the backlog is skipped by sequence
 * number instead: a non-blocking descriptor reads the ring to its end (EAGAIN) to learn the
 * last sequence number written before the follower started, and the blocking descriptor that
 * follows hands on only records after it. The numbers are the kernel's own, gap-free and
 * exact, unlike the record times (µs since boot, drifting from the wall clock). After a
 * failure and re-open, records up to the last one handed on are skipped the same way, so none
 * is lost or repeated.
 *
 * The blocking read waits in one of libuv's threadpool threads (Node has no readiness
 * polling for character devices) and cannot be interrupted: a stop resolves at once and the
 * descriptor is closed when that read returns with the next record.
 */
import { close, constants, open, read } from 'node:fs';
import { kmsgSequence } from '../../core/parsers/index.js';
import { ABORTED, errorCode, untilAborted } from '../../platform/index.js';

/**
 * Bytes one read may return: a record with its dictionary is at most 8 KiB (the kernel's
 * CONSOLE_EXT_LOG_MAX); read() fails with EINVAL when the buffer is smaller than the record.
 */
const RECORD_BUFFER = 16 * 1024;

/** Reads at most this many records to find the backlog's end (a device that never runs dry is not /dev/kmsg). */
const MAX_BACKLOG_RECORDS = 1 << 20;

/** A device read one record per read(). */
export interface RecordDevice {
  /**
   * The next record, or '' when the device reports end of file. Rejects with the system
   * error: code EPIPE when records were overwritten, EAGAIN when opened non-blocking and no
   * record waits.
   */
  read(): Promise<string>;
  /** Closes the descriptor; a read in flight finishes first (it cannot be interrupted). */
  close(): void;
}

/** Opens a record device (the real one: openRecordDevice; tests pass a fake). */
export type OpenRecordDevice = (path: string, options: { nonBlocking: boolean }) => Promise<RecordDevice>;

/** Opens `path` read-only, blocking or not, and reads it one record per read(). */
export const openRecordDevice: OpenRecordDevice = (path, { nonBlocking }) =>
  new Promise((resolve, reject) => {
    const flags = constants.O_RDONLY | (nonBlocking ? constants.O_NONBLOCK : 0);
    open(path, flags, (error, fd) => {
      if (error) reject(error);
      else resolve(recordDevice(fd));
    });
  });

function recordDevice(fd: number): RecordDevice {
  const buffer = Buffer.alloc(RECORD_BUFFER);
  let reading = false;
  let closing = false;
  let closed = false;
  const closeFd = (): void => {
    if (closed) return;
    closed = true;
    close(fd, () => undefined);
  };
  return {
    read: () =>
      new Promise((resolve, reject) => {
        reading = true;
        read(fd, buffer, 0, buffer.length, null, (error, bytes) => {
          reading = false;
          if (closing) closeFd();
          if (error) reject(error);
          else resolve(buffer.toString('utf8', 0, bytes));
        });
      }),
    close: () => {
      closing = true;
      if (!reading) closeFd();
    },
  };
}

/** What followRecordDevice reports to, and the state it keeps across re-opens. */
export interface RecordFollowContext {
  signal: AbortSignal;
  open: OpenRecordDevice;
  /** Hand on the records already in the ring at the first open too. */
  fromStart: boolean;
  /** The last sequence number handed on or skipped; null before the first open. */
  state: { lastSeq: number | null };
  /** The device is open and being read. */
  opened(): void;
  onRecord(record: string): void;
  /** Records were overwritten before they were read (EPIPE). */
  onOverrun(): void;
  /** A backlog record was skipped. */
  onSkipped(): void;
  /** A read returned something that is not a kmsg record (it is dropped: only kernel records count). */
  onGarbage(): void;
}

/**
 * Follows a record device until the signal aborts (resolves) or a read fails with anything
 * but EPIPE (rejects; the caller re-opens, and `state` keeps the place).
 */
export async function followRecordDevice(path: string, ctx: RecordFollowContext): Promise<void> {
  if (ctx.state.lastSeq === null && !ctx.fromStart) ctx.state.lastSeq = await backlogEnd(path, ctx);
  if (ctx.signal.aborted) return;
  const device = await ctx.open(path, { nonBlocking: false });
  try {
    ctx.opened();
    for (;;) {
      let record: string | typeof ABORTED;
      try {
        record = await untilAborted(device.read(), ctx.signal);
      } catch (error) {
        if (errorCode(error) !== 'EPIPE') throw error;
        ctx.onOverrun();
        continue;
      }
      if (record === ABORTED) return;
      if (record === '') throw new Error(`${path}: end of file (not a kernel log device?)`);
      handOn(record, ctx);
    }
  } finally {
    device.close();
  }
}

function handOn(record: string, ctx: RecordFollowContext): void {
  const seq = kmsgSequence(record);
  // /dev/kmsg serves records only; anything else carries no facility to trust.
  if (seq === null) {
    ctx.onGarbage();
    return;
  }
  const last = ctx.state.lastSeq;
  if (last !== null && seq <= last) {
    ctx.onSkipped();
    return;
  }
  ctx.state.lastSeq = seq;
  ctx.onRecord(record);
}

/** The sequence number of the newest record in the ring now (-1 when it is empty). */
async function backlogEnd(path: string, ctx: RecordFollowContext): Promise<number> {
  const device = await ctx.open(path, { nonBlocking: true });
  let last = -1;
  try {
    for (let n = 0; n < MAX_BACKLOG_RECORDS && !ctx.signal.aborted; n++) {
      let record: string;
      try {
        record = await device.read();
      } catch (error) {
        if (errorCode(error) === 'EAGAIN') break;
        if (errorCode(error) === 'EPIPE') continue;
        throw error;
      }
      if (record === '') break;
      last = Math.max(last, kmsgSequence(record) ?? -1);
    }
  } finally {
    device.close();
  }
  return last;
}

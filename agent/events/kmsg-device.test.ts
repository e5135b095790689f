import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ABORTED, untilAborted } from '../../platform/index.js';
import { openRecordDevice } from './kmsg-device.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'npu-fault-records-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('openRecordDevice (the real file descriptor glue)', () => {
  it('reads what one read() returns, then "" at end of file', async () => {
    const path = join(dir, 'records');
    writeFileSync(path, '6,1,2,-;one record\n');
    const device = await openRecordDevice(path, { nonBlocking: false });
    expect(await device.read()).toBe('6,1,2,-;one record\n');
    expect(await device.read()).toBe('');
    device.close();
  });

  it('fails with EAGAIN when opened non-blocking and nothing waits, and reads once something does', async () => {
    const path = join(dir, 'fifo');
    execFileSync('mkfifo', [path]);
    // A writer that stays: without one, an empty FIFO reads as end of file.
    const writer = openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
    try {
      const device = await openRecordDevice(path, { nonBlocking: true });
      await expect(device.read()).rejects.toMatchObject({ code: 'EAGAIN' });
      writeSync(writer, '6,2,3,-;next\n');
      expect(await device.read()).toBe('6,2,3,-;next\n');
      device.close();
    } finally {
      closeSync(writer);
    }
  });

  it('rejects a path that does not exist', async () => {
    await expect(openRecordDevice(join(dir, 'missing'), { nonBlocking: true })).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });
});

describe('untilAborted', () => {
  it('settles as the promise does, or with ABORTED when the signal wins', async () => {
    const controller = new AbortController();
    await expect(untilAborted(Promise.resolve(1), controller.signal)).resolves.toBe(1);
    await expect(untilAborted(Promise.reject(new Error('x')), controller.signal)).rejects.toThrow('x');
    let fail: (error: Error) => void = () => undefined;
    const late = untilAborted(new Promise<number>((_resolve, reject) => (fail = reject)), controller.signal);
    controller.abort();
    await expect(late).resolves.toBe(ABORTED);
    fail(new Error('after the abort: absorbed, never unhandled'));
    await expect(untilAborted(Promise.resolve(2), controller.signal)).resolves.toBe(ABORTED);
  });
});

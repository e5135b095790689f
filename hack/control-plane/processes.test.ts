import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitUntilReady } from './processes.js';

const anHourFromNow = (): number => Date.now() + 3_600_000;

describe('waitUntilReady', () => {
  it('returns as soon as the check says ready', async () => {
    const answers: Array<true | string> = ['starting', 'starting', true];
    let checks = 0;
    const check = (): Promise<true | string> => Promise.resolve(answers[checks++] ?? 'asked too often');

    await waitUntilReady('server', check, { deadline: anHourFromNow(), pid: process.pid, logFile: '/none' });

    expect(checks).toBe(3);
  });

  it('gives up at once when the process has exited, quoting the last answer and its log', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'npu-fault-ready-'));
    const logFile = join(dir, 'server.log');
    await writeFile(logFile, 'listening\nfatal: address already in use\n');
    const child = spawn('true');
    await once(child, 'exit');
    const check = (): Promise<true | string> => Promise.resolve('connection refused');

    try {
      await expect(
        waitUntilReady('server', check, { deadline: anHourFromNow(), pid: child.pid ?? 0, logFile }),
      ).rejects.toThrow(
        /^server did not become ready \(process exited; last: connection refused\)\n[^]*fatal: address already in use/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('gives up at the deadline while the process still runs', async () => {
    const check = (): Promise<true | string> => Promise.resolve('503 not ready');

    await expect(
      waitUntilReady('server', check, { deadline: Date.now() - 1, pid: process.pid, logFile: '/none' }),
    ).rejects.toThrow(/^server did not become ready \(timed out; last: \)/);
  });
});

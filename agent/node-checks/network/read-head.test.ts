import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readHead } from './read-head.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'npu-fault-read-head-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('readHead', () => {
  it('reads a small file whole, and a /proc file that reports size 0', async () => {
    writeFileSync(join(dir, 'table'), 'a\nb\n');
    expect(await readHead(join(dir, 'table'), 1024)).toEqual({ text: 'a\nb\n', truncated: false });
    const route = await readHead('/proc/net/route', 1024 * 1024);
    expect(route.text.startsWith('Iface\tDestination\tGateway')).toBe(true);
  });

  it('stops at the bound and keeps only complete lines', async () => {
    writeFileSync(join(dir, 'big'), 'line one\nline two\nline three\n');
    expect(await readHead(join(dir, 'big'), 12)).toEqual({ text: 'line one\n', truncated: true });
  });

  it('reads a FIFO without a writer as empty instead of waiting, and rejects a missing file', async () => {
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    expect(await readHead(join(dir, 'fifo'), 1024)).toEqual({ text: '', truncated: false });
    await expect(readHead(join(dir, 'missing'), 1024)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

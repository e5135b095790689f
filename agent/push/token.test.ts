import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tokenFromFile } from './token.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('tokenFromFile', () => {
  it('reads the file at every call, trimmed (the kubelet rotates it in place)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'token-'));
    const file = join(dir, 'token');
    await writeFile(file, 'one\n');
    const token = tokenFromFile(file);
    expect(await token()).toBe('one');
    await writeFile(file, 'two');
    expect(await token()).toBe('two');
  });

  it('rejects an empty file, naming it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'token-'));
    const file = join(dir, 'token');
    await writeFile(file, '\n');
    await expect(tokenFromFile(file)()).rejects.toThrow(`token file ${file} is empty`);
  });

  it('rejects a missing file', async () => {
    await expect(tokenFromFile('/nonexistent/token')()).rejects.toThrow('ENOENT');
  });
});

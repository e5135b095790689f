import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from './clock.js';
import { TOKEN_FILE_MAX_AGE_MS, tokenFromFile } from './token-file.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function tokenFile(content: string): Promise<string> {
  dir = await mkdtemp(join(tmpdir(), 'token-'));
  const file = join(dir, 'token');
  await writeFile(file, content);
  return file;
}

describe('tokenFromFile', () => {
  it('reads the file at every call with maxAgeMs 0, trimmed (the kubelet rotates it in place)', async () => {
    const file = await tokenFile('one\n');
    const token = tokenFromFile(file, new FakeClock(), 0);
    expect(await token()).toBe('one');
    await writeFile(file, 'two');
    expect(await token()).toBe('two');
  });

  it('keeps the token it read for maxAgeMs, then reads the rotated one, trimmed', async () => {
    const file = await tokenFile('one\n');
    const clock = new FakeClock();
    const token = tokenFromFile(file, clock, 1000);
    expect(await token()).toBe('one');
    await writeFile(file, 'two\n');
    await clock.advance(999);
    expect(await token()).toBe('one');
    await clock.advance(1);
    expect(await token()).toBe('two');
  });

  it('reads the file once for calls that come while a read is under way', async () => {
    const file = await tokenFile('one');
    const token = tokenFromFile(file, new FakeClock());
    const first = token();
    expect(token()).toBe(first); // the same read, not a second one
    expect(await first).toBe('one');
  });

  it('does not keep a failed read: the next call reads again', async () => {
    const file = await tokenFile('\n');
    const token = tokenFromFile(file, new FakeClock());
    await expect(token()).rejects.toThrow(`token file ${file} is empty`);
    await writeFile(file, 'fixed');
    expect(await token()).toBe('fixed');
  });

  it('rejects a missing file', async () => {
    await expect(tokenFromFile('/nonexistent/token', new FakeClock())()).rejects.toThrow('ENOENT');
  });

  it('reads again after a minute by default', async () => {
    const file = await tokenFile('one');
    const clock = new FakeClock();
    const token = tokenFromFile(file, clock);
    expect(await token()).toBe('one');
    await writeFile(file, 'two');
    await clock.advance(TOKEN_FILE_MAX_AGE_MS - 1);
    expect(await token()).toBe('one');
    await clock.advance(1);
    expect(await token()).toBe('two');
  });
});

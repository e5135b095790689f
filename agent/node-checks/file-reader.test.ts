import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../probe/testing.js';
import { OversizeError, nodeFileReader, parseWholeNumber } from './file-reader.js';

describe('nodeFileReader', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('file-reader-');
  });
  afterEach(() => dir.remove());

  it('reads a small file whole, and a file past the bound as an OversizeError', async () => {
    writeFileSync(join(dir.path, 'small'), '4: ACTIVE\n');
    writeFileSync(join(dir.path, 'big'), 'x'.repeat(2000));
    await expect(nodeFileReader.readText(join(dir.path, 'small'))).resolves.toBe('4: ACTIVE\n');
    await expect(nodeFileReader.readText(join(dir.path, 'big'), 2000)).resolves.toHaveLength(2000);
    await expect(nodeFileReader.readText(join(dir.path, 'big'), 1999)).rejects.toBeInstanceOf(OversizeError);
  });

  it('reads a file that says it is empty to its end, as sysfs and procfs files do', async () => {
    await expect(nodeFileReader.readText('/proc/self/mountinfo', 8 * 1024 * 1024)).resolves.toMatch(/ - /);
  });

  it('lists sorted names within a bound, and rejects with the errno', async () => {
    for (const name of ['b', 'a', 'c']) writeFileSync(join(dir.path, name), '');
    await expect(nodeFileReader.list(dir.path)).resolves.toEqual(['a', 'b', 'c']);
    await expect(nodeFileReader.list(dir.path, 2)).rejects.toThrow(/more than 2 entries/);
    await expect(nodeFileReader.list(join(dir.path, 'none'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('resolves links and says whether a path exists or may be run', async () => {
    mkdirSync(join(dir.path, 'devices/0000:3b:00.0'), { recursive: true });
    symlinkSync('devices/0000:3b:00.0', join(dir.path, 'device'));
    await expect(nodeFileReader.realPath(join(dir.path, 'device'))).resolves.toBe(
      join(dir.path, 'devices/0000:3b:00.0'),
    );
    writeFileSync(join(dir.path, 'tool'), '#!/bin/sh\n');
    await expect(nodeFileReader.exists(join(dir.path, 'tool'))).resolves.toBe(true);
    chmodSync(join(dir.path, 'tool'), 0o644);
    await expect(nodeFileReader.exists(join(dir.path, 'tool'), true)).resolves.toBe(false);
    chmodSync(join(dir.path, 'tool'), 0o755);
    await expect(nodeFileReader.exists(join(dir.path, 'tool'), true)).resolves.toBe(true);
    await expect(nodeFileReader.exists(join(dir.path, 'none'))).resolves.toBe(false);
  });
});

describe('parseWholeNumber', () => {
  it('reads a counter and refuses anything else', () => {
    expect(parseWholeNumber('42\n')).toBe(42);
    expect(parseWholeNumber(' 0 ')).toBe(0);
    for (const bad of ['-1', '1.5', '', 'x', '1e3', '9'.repeat(16)])
      expect(parseWholeNumber(bad)).toBeUndefined();
  });
});

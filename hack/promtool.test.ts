import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPromtool } from './promtool.js';

/**
 * hack/build-promtool.sh's search order, through findPromtool. PATH holds only a folder of
 * this test's making, so neither Go nor a system promtool is found unless a case puts one
 * there; nothing is built.
 */
describe('findPromtool (hack/build-promtool.sh)', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const lines: string[] = [];

  async function fakeExecutable(path: string): Promise<string> {
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, '#!/bin/sh\necho fake\n');
    await chmod(path, 0o755);
    return path;
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'npu-fault-promtool-'));
    await mkdir(join(dir, 'bin'));
    env = {
      PATH: join(dir, 'bin'),
      HOME: dir,
      NPU_FAULT_CACHE: join(dir, 'cache'),
      PROMETHEUS_VERSION: 'v0.1.2',
    };
    lines.length = 0;
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('says what to install, in one line, when there is neither promtool nor Go', async () => {
    const error = await findPromtool((l) => lines.push(l), env).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(
      /^build-promtool\.sh failed \(exit 3\): error: promtool not found and Go is not installed .*Go >= 1\.24.*apt-get install prometheus.*NPU_FAULT_PROMTOOL/,
    );
    expect(error?.message).not.toContain('\n');
  });

  it('takes promtool from PATH without Go', async () => {
    const onPath = await fakeExecutable(join(dir, 'bin', 'promtool'));
    expect(await findPromtool((l) => lines.push(l), env)).toBe(onPath);
  });

  it('prefers the cached pinned build to PATH, and NPU_FAULT_PROMTOOL to both', async () => {
    await fakeExecutable(join(dir, 'bin', 'promtool'));
    const cached = await fakeExecutable(join(dir, 'cache', 'promtool', 'v0.1.2', 'promtool'));
    expect(await findPromtool((l) => lines.push(l), env)).toBe(cached);

    const explicit = await fakeExecutable(join(dir, 'elsewhere', 'promtool'));
    expect(await findPromtool((l) => lines.push(l), { ...env, NPU_FAULT_PROMTOOL: explicit })).toBe(explicit);
    expect(lines).toEqual([]); // nothing was built
  });

  it('refuses an NPU_FAULT_PROMTOOL that is not an executable', async () => {
    await expect(
      findPromtool((l) => lines.push(l), { ...env, NPU_FAULT_PROMTOOL: join(dir, 'missing') }),
    ).rejects.toThrow(/NPU_FAULT_PROMTOOL=.*missing is not an executable file/);
  });
});

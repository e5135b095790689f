import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findHelm } from './helm.js';

/**
 * hack/build-helm.sh's search order, through findHelm. PATH holds only a folder of this
 * test's making, so neither Go nor a system helm is
 * found unless a case puts one there; nothing is built.
 */
describe('findHelm (hack/build-helm.sh)', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const lines: string[] = [];

  /** An executable that prints `version` for `helm version --short`. */
  async function fakeHelm(path: string, version = 'v4.3.2+g0000000'): Promise<string> {
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, `#!/bin/sh\necho ${version}\n`);
    await chmod(path, 0o755);
    return path;
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'npu-fault-helm-'));
    await mkdir(join(dir, 'bin'));
    env = {
      PATH: join(dir, 'bin'),
      HOME: dir,
      NPU_FAULT_CACHE: join(dir, 'cache'),
      HELM_VERSION: 'v4.0.0-test',
    };
    lines.length = 0;
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('says what to install, in one line, when there is neither helm 4 nor Go', async () => {
    const error = await findHelm((l) => lines.push(l), env).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(
      /^build-helm\.sh failed \(exit 3\): error: helm 4 not found and Go is not installed .*Go >= 1\.26.*NPU_FAULT_HELM/,
    );
    expect(error?.message).not.toContain('\n');
  });

  it('takes a Helm 4 from PATH without Go, and passes over an older major', async () => {
    const onPath = await fakeHelm(join(dir, 'bin', 'helm'));
    expect(await findHelm((l) => lines.push(l), env)).toBe(onPath);

    await fakeHelm(join(dir, 'bin', 'helm'), 'v3.19.0+g1234567');
    await expect(findHelm((l) => lines.push(l), env)).rejects.toThrow(/helm 4 not found/);
  });

  it('prefers the cached pinned build to PATH, and NPU_FAULT_HELM to both', async () => {
    await fakeHelm(join(dir, 'bin', 'helm'));
    const cached = await fakeHelm(join(dir, 'cache', 'helm', 'v4.0.0-test', 'bin', 'helm'));
    expect(await findHelm((l) => lines.push(l), env)).toBe(cached);

    const explicit = await fakeHelm(join(dir, 'elsewhere', 'helm'));
    expect(await findHelm((l) => lines.push(l), { ...env, NPU_FAULT_HELM: explicit })).toBe(explicit);
    expect(lines).toEqual([]); // nothing was built
  });

  it('refuses an NPU_FAULT_HELM that is not an executable', async () => {
    await expect(
      findHelm((l) => lines.push(l), { ...env, NPU_FAULT_HELM: join(dir, 'missing') }),
    ).rejects.toThrow(/NPU_FAULT_HELM=.*missing is not an executable file/);
  });
});

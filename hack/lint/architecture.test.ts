/**
 * The architecture rules of eslint.config.js, checked through ESLint itself on code placed
 * at real paths of the repository (lintText with a filePath: the text is linted, the file on
 * disk is not read), so a config change that silently drops a rule fails here.
 */
import { describe, expect, it } from '@jest/globals';
import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const eslint = new ESLint({ cwd: ROOT });

async function rulesHit(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: ROOT + path });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

describe('eslint.config.js guards the architecture', () => {
  it.each([
    [
      'core/normalise.ts',
      "import { createLogger } from '../platform/index.js';\nexport const x = createLogger;\n",
      'no-restricted-imports',
    ],
    [
      'contracts/device.ts',
      "import { main } from '../cli/main.js';\nexport const x = main;\n",
      'no-restricted-imports',
    ],
    [
      'core/normalise.ts',
      "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n",
      'no-restricted-imports',
    ],
    [
      'agent/agent.ts',
      "import { createController } from '../controller/index.js';\nexport const x = createController;\n",
      'no-restricted-imports',
    ],
    [
      'functions/function.ts',
      "import { createNodeAgent } from '../agent/index.js';\nexport const x = createNodeAgent;\n",
      'no-restricted-imports',
    ],
    [
      'controller/app.ts',
      "import { main } from '../cli/main.js';\nexport const x = main;\n",
      'no-restricted-imports',
    ],
    [
      'consumer/follower.ts',
      "import { systemClock } from '../platform/index.js';\nexport const x = systemClock;\n",
      'no-restricted-imports',
    ],
    [
      'consumer/follower.ts',
      "import * as k8s from '@kubernetes/client-node';\nexport const x = k8s;\n",
      'no-restricted-imports',
    ],
    [
      'families/nvidia/normalise.ts',
      "import { normalise } from '../../core/normalise.js';\nexport const x = normalise;\n",
      'no-restricted-imports',
    ],
    [
      'families/nvidia/normalise.ts',
      "import { snapshotSchema } from '../../contracts/index.js';\nexport const x = snapshotSchema;\n",
      '@typescript-eslint/no-restricted-imports',
    ],
    [
      'contracts/fields/text.ts',
      "import { snapshotSchema } from '../snapshot.js';\nexport const x = snapshotSchema;\n",
      'no-restricted-imports',
    ],
    [
      'consumer/follower.ts',
      "import { FAMILIES } from '../families/index.js';\nexport const x = FAMILIES;\n",
      'no-restricted-imports',
    ],
    ['families/nvidia/normalise.ts', 'export const now = Date.now();\n', 'no-restricted-properties'],
    ['core/normalise.ts', 'export const now = Date.now();\n', 'no-restricted-properties'],
    ['core/normalise.ts', 'export const now = new Date();\n', 'no-restricted-syntax'],
    ['core/normalise.ts', 'export const env = process.env;\n', 'no-restricted-globals'],
    [
      'cli/main.ts',
      "import { admit } from '../core/engine/dedup.js';\nexport const x = admit;\n",
      'local/folder-doors',
    ],
    [
      'platform/clock.ts',
      'async function f(): Promise<void> {}\nexport function g(): void {\n  f();\n}\n',
      '@typescript-eslint/no-floating-promises',
    ],
    [
      'platform/clock.ts',
      "export function g(): void {\n  throw 'no';\n}\n",
      '@typescript-eslint/only-throw-error',
    ],
    [
      'platform/clock.ts',
      'export function g(xs: number[]): void {\n  xs.forEach(async () => {});\n  if (Promise.resolve(1)) g(xs);\n}\n',
      '@typescript-eslint/no-misused-promises',
    ],
  ])('%s: %j breaks %s', async (path, code, rule) => {
    expect(await rulesHit(path, code)).toContain(rule);
  });

  // The product is what the image ships; the development folders are not in it, so an import
  // of one would break the image's build (hack/image-context.test.ts shows that failure).
  it.each([
    ['cli/commands.ts', "import { devCommands } from '../stack/index.js';"],
    ['cli/status/read.ts', "import { startControlPlane } from '../../hack/control-plane.js';"],
    ['cli/replay.ts', "import { buildWorkload } from '../bench/workload.js';"],
    ['platform/clock.ts', "import { adminKubeConfig } from '../test/setup/cluster.js';"],
    ['platform/node-http.ts', "import { devCommands } from '../stack/index.js';"],
    ['controller/app.ts', "import { deployPipeline } from '../stack/index.js';"],
    ['agent/push/testing.ts', "import { createAgentIdentity } from '../../stack/index.js';"],
    ['functions/app/app.ts', "import { shippedNode } from '../../hack/shipped-node.js';"],
    ['consumer/follower.ts', "import { watchStatus } from '../stack/index.js';"],
    ['core/normalise.ts', "import { buildWorkload } from '../bench/workload.js';"],
  ])('product file %s may not import a development folder: %s', async (path, line) => {
    expect(await rulesHit(path, `${line}\nexport const x = 1;\n`)).toContain('no-restricted-imports');
  });

  it.each([
    ['bench/controller.ts', "import { main } from '../cli/main.js';"],
    ['bench/pipeline/run.ts', "import { parse } from '../../cli/parse.js';"],
    ['bench/function.ts', "import { binDir } from '../test/setup/cluster.js';"],
  ])('benchmark %s may not import cli/ or test/: %s', async (path, line) => {
    expect(await rulesHit(path, `${line}\nexport const x = 1;\n`)).toContain('no-restricted-imports');
  });

  it('lets the benchmarks and the tests use stack/ and the product through their doors', async () => {
    const bench =
      "import { deployPipeline } from '../../stack/index.js';\nimport { createEngine } from '../../core/engine/index.js';\nexport const x = [deployPipeline, createEngine];\n";
    expect(await rulesHit('bench/pipeline/run.ts', bench)).toEqual([]);
    const setup =
      "import { kubeConfigWithToken } from '../../stack/index.js';\nexport const x = kubeConfigWithToken;\n";
    expect(await rulesHit('test/setup/cluster.ts', setup)).toEqual([]);
  });

  it('lets a family take contracts/ types and the snapshot’s building blocks', async () => {
    const code =
      "import type { DeviceObservation } from '../../contracts/index.js';\nimport { plain } from '../../contracts/fields/index.js';\nexport const x: DeviceObservation[] = [];\nexport const y = plain;\n";
    expect(await rulesHit('families/nvidia/normalise.ts', code)).toEqual([]);
  });

  it('lets the outer layers use platform and core through their doors', async () => {
    const code =
      "import { createLogger } from '../platform/index.js';\nimport { createEngine } from '../core/engine/index.js';\nexport const x = [createLogger, createEngine];\n";
    expect(await rulesHit('cli/main.ts', code)).toEqual([]);
  });
});

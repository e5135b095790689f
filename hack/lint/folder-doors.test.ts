import { describe, expect, it } from '@jest/globals';
import { Linter } from 'eslint';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';
import folderDoors, { requiredDoor } from './folder-doors.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const at = (path: string): string => ROOT + path;

/** Lints one import line as if it were written in `file` (a path in this repository). */
function lint(file: string, code: string): string[] {
  const linter = new Linter({ configType: 'flat' });
  const messages = linter.verify(
    code,
    [
      {
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser as Linter.Parser },
        plugins: { local: folderDoors },
        rules: { 'local/folder-doors': 'error' },
      },
    ],
    { filename: at(file) },
  );
  return messages.map((m) => m.message);
}

describe('lint rule local/folder-doors', () => {
  it.each([
    [
      'core/replay/replay.ts',
      "import { createEngine } from '../engine/index.js';",
      'the door of a sibling folder',
    ],
    ['core/engine/engine.ts', "import { admit } from './dedup.js';", 'a file of its own folder'],
    ['core/replay/replay.ts', "import { ParseError } from '../errors.js';", 'a file of a parent folder'],
    ['stack/bench-command.ts', "import { median } from '../bench/measure.js';", 'a folder without a door'],
    [
      'core/replay/replay.test.ts',
      "import { npuSnapshot } from '../engine/testing.js';",
      "a test, a folder's testing.ts",
    ],
    [
      'bench/controller.ts',
      "import { npuSnapshot } from '../core/engine/testing.js';",
      "a benchmark, a folder's testing.ts",
    ],
    [
      'functions/app/testing.ts',
      "import { serve } from '../../platform/testing.js';",
      "test support, another folder's testing.ts",
    ],
    [
      'test/setup/fleet.ts',
      "import { npuSnapshot } from '../../core/engine/testing.js';",
      "integration-test support, a folder's testing.ts",
    ],
  ])('allows %s: %s (%s)', (file, code) => {
    expect(lint(file, code)).toEqual([]);
  });

  it.each([
    [
      'core/replay/replay.ts',
      "import { admit } from '../engine/dedup.js';",
      "'../engine/dedup.js' is inside core/engine/: import ../engine/index.js instead",
    ],
    [
      'cli/replay.ts',
      "export { rulesSchema } from '../contracts/rules.js';",
      'import ../contracts/index.js instead',
    ],
    [
      'core/replay/replay.ts',
      "import { npuSnapshot } from '../engine/testing.js';",
      'import ../engine/index.js instead',
    ],
    [
      'bench/controller.ts',
      "import { createEngine } from '../core/engine/engine.js';",
      'import ../core/engine/index.js instead',
    ],
    [
      'cli/main.ts',
      "const m = await import('../core/engine/engine.js');",
      'import ../core/engine/index.js instead',
    ],
  ])('refuses %s: %s', (file, code, message) => {
    expect(lint(file, code).join('\n')).toContain(message);
  });

  it('names the nearest door when the target lies in a folder inside one; a nested door is a door', () => {
    expect(requiredDoor(at('cli/x.ts'), at('core/engine/deep/y.ts'), false)).toBe(at('core/engine/index.ts'));
    expect(requiredDoor(at('test/x.test.ts'), at('platform/k8s/index.ts'), true)).toBeNull();
    expect(requiredDoor(at('test/x.test.ts'), at('platform/k8s/micro-time.ts'), true)).toBe(
      at('platform/k8s/index.ts'),
    );
    expect(requiredDoor(at('core/engine/deep/y.ts'), at('core/engine/dedup.ts'), false)).toBeNull();
  });
});

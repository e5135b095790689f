import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { contextFiles, isIgnored, parseDockerIgnore } from './docker-context.js';

describe('.dockerignore matching (Docker’s rules, not .gitignore’s)', () => {
  const rules = parseDockerIgnore(
    [
      '# a comment',
      '',
      '  /test/  ',
      'node_modules',
      '*.log',
      '**/*.test.ts',
      'docs',
      '!docs/keep.md',
      'bench/res?lts',
      'data/[a-c]*.csv',
    ].join('\n'),
  );

  it.each([
    ['test', true],
    ['test/setup/cluster.ts', true],
    ['cli/test/x.ts', false], // anchored at the root: not any folder named test
    ['node_modules/zod/package.json', true],
    ['build.log', true],
    ['cli/build.log', false], // `*` stops at `/`, and the pattern is anchored
    ['cli/main.test.ts', true],
    ['main.test.ts', true], // `**/` takes zero folders too
    ['core/engine/engine.test.ts', true],
    ['core/engine/engine.ts', false],
    ['docs/contract.md', true],
    ['docs/keep.md', false], // `!` re-includes; the last matching line wins
    ['bench/results/x.json', true],
    ['bench/resXlts', true],
    ['bench/res/lts', false],
    ['data/b1.csv', true],
    ['data/d1.csv', false],
  ])('%s ignored: %s', (path, ignored) => {
    expect(isIgnored(rules, path)).toBe(ignored);
  });

  it('lists the context’s files, leaving ignored folders unwalked', () => {
    const root = mkdtempSync(join(tmpdir(), 'npu-fault-context-'));
    try {
      const files = [
        'a.ts',
        'test/x.ts',
        'cli/test/y.ts',
        'cli/z.test.ts',
        'x.log',
        'docs/keep.md',
        'docs/no.md',
      ];
      for (const file of files) {
        mkdirSync(dirname(join(root, file)), { recursive: true });
        writeFileSync(join(root, file), '');
      }
      expect(contextFiles(root, rules)).toEqual(['a.ts', 'cli/test/y.ts', 'docs/keep.md']);
      expect(contextFiles(root, parseDockerIgnore('cli\n'))).toEqual([
        'a.ts',
        'docs/keep.md',
        'docs/no.md',
        'test/x.ts',
        'x.log',
      ]);
      // An allowlist: everything out, then folders back in (their contents with them).
      expect(contextFiles(root, parseDockerIgnore('*\n!cli\n!docs/keep.md\n**/*.test.ts\n'))).toEqual([
        'cli/test/y.ts',
        'docs/keep.md',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

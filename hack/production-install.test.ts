/**
 * What a production install (`npm ci --omit=dev`, the image's `npm prune --omit=dev`) runs on:
 * the compiled build on plain Node, with none of the development dependencies (tsx among
 * them). The build goes to a folder of its own beside a node_modules without them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { builtinModules } from 'node:module';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** Every .js file under `dir`. */
function scripts(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.js'))
    .map((file) => join(dir, file));
}

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`), or undefined for a path. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:'))
    return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

describe('a production install', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'npu-fault-production-'));
    await run(process.execPath, [
      join(ROOT, 'node_modules/typescript/bin/tsc'),
      '-p',
      join(ROOT, 'tsconfig.build.json'),
      '--outDir',
      join(dir, 'dist'),
    ]);
    cpSync(join(ROOT, 'bin'), join(dir, 'bin'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
    // node_modules less the development dependencies: links to the installed packages.
    const dev = new Set(Object.keys(manifest.devDependencies));
    mkdirSync(join(dir, 'node_modules'));
    for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
      if (entry.startsWith('.')) continue;
      const members = entry.startsWith('@')
        ? readdirSync(join(ROOT, 'node_modules', entry)).map((member) => `${entry}/${member}`)
        : [entry];
      for (const name of members) {
        if (dev.has(name)) continue;
        if (name.includes('/')) mkdirSync(join(dir, 'node_modules', entry), { recursive: true });
        symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
      }
    }
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('holds tsx among the development dependencies only', () => {
    expect(Object.keys(manifest.dependencies)).not.toContain('tsx');
    expect(Object.keys(manifest.devDependencies)).toContain('tsx');
  });

  it('imports nothing but Node built-ins and the dependencies from the build', () => {
    const allowed = new Set([...Object.keys(manifest.dependencies), ...builtinModules]);
    const strays: string[] = [];
    for (const file of scripts(join(dir, 'dist'))) {
      const text = readFileSync(file, 'utf8');
      // Static imports and re-exports at the start of a statement, side-effect imports, import().
      const specifiers = [
        ...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s*['"]([^'"]+)['"]/gm),
        ...text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
        ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
      ];
      for (const match of specifiers) {
        const name = packageOf(match[1] as string);
        if (name !== undefined && !allowed.has(name)) strays.push(`${relative(dir, file)}: ${name}`);
      }
    }
    expect(strays).toEqual([]);
  });

  it('runs bin/npu-fault.js, the kubectl plugin and the image entry point on plain Node, without tsx', async () => {
    await expect(run(process.execPath, ['-e', "import('tsx/esm/api')"], { cwd: dir })).rejects.toMatchObject({
      stderr: expect.stringContaining('ERR_MODULE_NOT_FOUND'),
    });
    const help = await run(process.execPath, [join(dir, 'bin/npu-fault.js'), '--help']);
    expect(help.stdout).toMatch(/agent/);
    const plugin = await run(process.execPath, [join(dir, 'bin/kubectl-npu_fault'), 'agent', '--help']);
    expect(plugin.stdout).toMatch(/--tool-library-path/);
    // The Dockerfile's ENTRYPOINT, through the engine: one JSON line per status change.
    const replay = await run(process.execPath, [
      join(dir, 'dist/cli/run.js'),
      'replay',
      join(ROOT, 'golden/high-temp-3-of-5.jsonl'),
    ]);
    const lines = replay.stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ to: expect.any(String) });
  });
});

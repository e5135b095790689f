/**
 * The Dockerfile's build stage, reproduced without a container runtime: the build context as
 * .dockerignore leaves it (hack/docker-context.ts, Docker's matching rules) copied into a
 * temporary folder, then the stage's own commands there (`npm ci`, as a copy of the
 * checkout's node_modules explained below; `npm run build`; the declaration files deleted;
 * `npm prune --omit=dev`), then every role run from that tree on plain Node with production
 * dependencies only, as the image's ENTRYPOINT runs them. A second copy of the same context,
 * with one product file importing stack/, shows the compiler failing on it as `docker build`
 * would: the development folders are not in the context.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { builtinModules } from 'node:module';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { contextFiles, parseDockerIgnore } from './docker-context.js';

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const DEV_FOLDERS = ['stack', 'bench', 'hack', 'test'];
/** The product file the second copy plants an import of stack/ into. */
const PLANTED_FILE = 'cli/explain.ts';

// npm (a script run by the first `node` on PATH) and the npm scripts run on the Node running
// this test, as the image's build runs them on its base image's.
const env = { ...process.env, PATH: [dirname(process.execPath), process.env.PATH].join(delimiter) };

interface Outcome {
  code: number;
  output: string;
}

/** Runs `command` in `cwd`; resolves with its exit code and output, whatever the code. */
async function runIn(cwd: string, command: string, args: string[]): Promise<Outcome> {
  try {
    const { stdout, stderr } = await execFileAsync(command, args, { cwd, env, maxBuffer: 64 << 20 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : -1,
      output: `${failed.stdout}${failed.stderr}`,
    };
  }
}

/** The same, failing the test with the command's output when it exits non-zero. */
async function mustRun(cwd: string, command: string, args: string[]): Promise<string> {
  const outcome = await runIn(cwd, command, args);
  if (outcome.code !== 0)
    throw new Error(`${command} ${args.join(' ')} exited ${outcome.code}:\n${outcome.output.slice(-4000)}`);
  return outcome.output;
}

/** Every entry under `dir`, relative to it (callers pick files by their suffix). */
function entriesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' });
}

/**
 * Packages installed under `root`/node_modules at another version than package-lock.json
 * names (npm's record of the installed tree, node_modules/.package-lock.json, against the
 * lockfile `npm ci` installs from).
 */
function lockfileDrift(root: string): string[] {
  type Lock = { packages: Record<string, { version?: string }> };
  const wanted = (JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as Lock).packages;
  const installed = (JSON.parse(readFileSync(join(root, 'node_modules/.package-lock.json'), 'utf8')) as Lock)
    .packages;
  return Object.entries(installed)
    .filter(([path, entry]) => wanted[path]?.version !== entry.version)
    .map(([path, entry]) => `${path}: ${entry.version} installed, ${wanted[path]?.version ?? 'none'} locked`);
}

/**
 * What `tsc -p tsconfig.build.json` in `dir` reports about PLANTED_FILE, as tsc prints it
 * (`file(line,col): error TSnnnn: …`); code 0 when nothing.
 */
function plantedFileDiagnostics(dir: string): Outcome {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(dir, 'tsconfig.build.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error(`no tsconfig.build.json in ${dir}`);
  const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
  const file = program.getSourceFile(join(dir, PLANTED_FILE));
  if (!file) throw new Error(`${PLANTED_FILE} is not in the build`);
  const diagnostics = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)];
  const output = ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (name) => name,
    getCurrentDirectory: () => dir,
    getNewLine: () => '\n',
  });
  return { code: diagnostics.length === 0 ? 0 : 2, output };
}

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`), or undefined for a path. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:'))
    return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

describe('the image built from the Dockerfile’s context', () => {
  let base: string;
  let app: string;
  let copied: string[];
  let planted: Outcome;
  const started = Date.now();
  let buildSeconds = 0;

  beforeAll(async () => {
    base = mkdtempSync(join(tmpdir(), 'npu-fault-image-'));
    app = join(base, 'src');
    const rules = parseDockerIgnore(readFileSync(join(ROOT, '.dockerignore'), 'utf8'));
    copied = contextFiles(ROOT, rules);
    for (const file of copied) {
      mkdirSync(dirname(join(app, file)), { recursive: true });
      copyFileSync(join(ROOT, file), join(app, file));
    }
    // The second context: the same files, a product file importing the demo's stack, and the
    // first context's node_modules linked (read by the compiler before the prune changes it).
    const plantedDir = join(base, 'planted');
    cpSync(app, plantedDir, { recursive: true });
    const target = join(plantedDir, PLANTED_FILE);
    writeFileSync(
      target,
      `import { devCommands } from '../stack/index.js';\nexport const planted = devCommands;\n${readFileSync(target, 'utf8')}`,
    );

    // The Dockerfile's `npm ci`: the checkout's own node_modules, copied. A real `npm ci
    // --offline` here takes about 30 s on two cores (the `node` package's install script
    // unpacks a whole Node); a copy takes half that and yields the same tree, since the
    // checkout installed it with `npm ci` from this package-lock.json (checked first, so a
    // drifted node_modules fails here instead of testing a tree the image would not get).
    // A copy, not links: `npm prune` below rewrites files under node_modules.
    expect(lockfileDrift(ROOT)).toEqual([]);
    await mustRun(base, 'cp', ['-a', join(ROOT, 'node_modules'), join(app, 'node_modules')]);
    symlinkSync(join(app, 'node_modules'), join(plantedDir, 'node_modules'));
    const building = Date.now();
    const build = mustRun(app, 'npm', ['run', 'build']);
    // The planted file's diagnostics from the compiler the build runs (tsconfig.build.json of
    // that context), rather than a second whole build: the same TS2307, in a few seconds.
    planted = plantedFileDiagnostics(plantedDir);
    await build;
    buildSeconds = (Date.now() - building) / 1000;
    for (const file of entriesUnder(join(app, 'dist')))
      if (file.endsWith('.d.ts')) rmSync(join(app, 'dist', file));
    await mustRun(app, 'npm', ['prune', '--omit=dev', '--no-audit', '--no-fund']);
  }, 240_000);

  afterAll(() => {
    process.stdout.write(
      `image context: ${copied?.length ?? 0} files, builds ${buildSeconds.toFixed(1)} s, all ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('leaves the development folders out of the context, and so out of the build', () => {
    expect(copied).toContain('package-lock.json');
    expect(copied).toContain('cli/run.ts');
    const tops = new Set(copied.map((file) => file.split('/')[0]));
    expect(DEV_FOLDERS.filter((folder) => tops.has(folder))).toEqual([]);
    expect(copied.filter((file) => file.endsWith('.test.ts'))).toEqual([]);
    const built = new Set(readdirSync(join(app, 'dist')));
    expect(DEV_FOLDERS.filter((folder) => built.has(folder))).toEqual([]);
    expect(existsSync(join(app, 'dist/cli/run.js'))).toBe(true);
  });

  it('fails to build when a product file imports a development folder', () => {
    expect(planted.code).not.toBe(0);
    expect(planted.output).toMatch(
      new RegExp(
        `${PLANTED_FILE.replace('.', '\\.')}\\(1,\\d+\\): error TS2307: Cannot find module '\\.\\./stack/index\\.js'`,
      ),
    );
  });

  it('keeps only the production dependencies: no tsx, no compiler', async () => {
    expect(Object.keys(manifest.dependencies)).not.toContain('tsx');
    const installed = new Set(readdirSync(join(app, 'node_modules')));
    expect(['tsx', 'typescript', 'jest', 'eslint'].filter((name) => installed.has(name))).toEqual([]);
    for (const name of Object.keys(manifest.dependencies))
      expect(existsSync(join(app, 'node_modules', name, 'package.json'))).toBe(true);
    await expect(
      execFileAsync(process.execPath, ['-e', "import('tsx/esm/api')"], { cwd: app }),
    ).rejects.toMatchObject({ stderr: expect.stringContaining('ERR_MODULE_NOT_FOUND') });
  });

  it('holds nothing the build platform chooses, so one build serves amd64 and arm64 (the Dockerfile builds on $BUILDPLATFORM)', () => {
    // What would make the build stage's output depend on its platform: a package installed
    // only on some CPUs or systems (esbuild's @esbuild/linux-x64, say), an install script
    // (it may compile or download for the machine it runs on), or a Node addon (.node). Machine
    // code shipped for every platform alike (bare-fs's prebuilds, loaded only by the Bare
    // runtime) is the same bytes from any builder.
    type Entry = { os?: string[]; cpu?: string[]; hasInstallScript?: boolean };
    const locked = (
      JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as { packages: Record<string, Entry> }
    ).packages;
    const installed = Object.keys(
      (JSON.parse(readFileSync(join(app, 'node_modules/.package-lock.json'), 'utf8')) as { packages: object })
        .packages,
    );
    expect(installed.length).toBeGreaterThan(20);
    const chosen = installed.filter((path) => {
      const entry = locked[path] ?? {};
      const script = entry.hasInstallScript === true && !inertInstallScript(join(app, path));
      return entry.os !== undefined || entry.cpu !== undefined || script;
    });
    expect(chosen).toEqual([]);
    const addons = entriesUnder(join(app, 'node_modules')).filter((entry) => entry.endsWith('.node'));
    expect(addons).toEqual([]);
  });

  it('imports nothing but Node built-ins and the dependencies from the build', () => {
    const allowed = new Set([...Object.keys(manifest.dependencies), ...builtinModules]);
    const strays: string[] = [];
    for (const file of entriesUnder(join(app, 'dist')).filter((name) => name.endsWith('.js'))) {
      const text = readFileSync(join(app, 'dist', file), 'utf8');
      // Static imports and re-exports at the start of a statement, side-effect imports, import().
      const specifiers = [
        ...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s*['"]([^'"]+)['"]/gm),
        ...text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
        ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
      ];
      for (const match of specifiers) {
        const name = packageOf(match[1] as string);
        if (name !== undefined && !allowed.has(name)) strays.push(`dist/${file}: ${name}`);
      }
    }
    expect(strays).toEqual([]);
  });

  it.each([
    'controller',
    'function',
    'agent',
    'status',
    'explain',
    'clear',
    'remediation',
    'replay',
    'parse',
  ])('runs `%s --help` from dist/cli/run.js, the ENTRYPOINT', async (role) => {
    const { stdout } = await execFileAsync(process.execPath, ['dist/cli/run.js', role, '--help'], {
      cwd: app,
      env: { ...env, NODE_ENV: 'production' },
    });
    expect(stdout).toMatch(new RegExp(`^Usage: npu-fault ${role}\\b`));
  });

  it('lists the commands (the CMD) and says the development commands are not in this build', async () => {
    const help = await execFileAsync(process.execPath, ['dist/cli/run.js', '--help'], { cwd: app });
    expect(help.stdout).toMatch(/^ {2}controller /m);
    for (const command of ['demo', 'bench']) {
      const outcome = await runIn(app, process.execPath, ['dist/cli/run.js', command]);
      expect(outcome).toEqual({
        code: 3,
        output: `npu-fault ${command}: not in this build; run it from a checkout\n`,
      });
    }
  });

  it('replays a trace through the engine on plain Node', async () => {
    const replay = await execFileAsync(process.execPath, [
      join(app, 'dist/cli/run.js'),
      'replay',
      join(ROOT, 'golden/high-temp-3-of-5.jsonl'),
    ]);
    const lines = replay.stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ to: expect.any(String) });
  });

  it('runs bin/npu-fault.js and the kubectl plugin on that tree (a production install of a checkout)', async () => {
    cpSync(join(ROOT, 'bin'), join(app, 'bin'), { recursive: true });
    const help = await execFileAsync(process.execPath, [join(app, 'bin/npu-fault.js'), '--help']);
    expect(help.stdout).toMatch(/^ {2}agent /m);
    const plugin = await execFileAsync(process.execPath, [
      join(app, 'bin/kubectl-npu_fault'),
      'agent',
      '--help',
    ]);
    expect(plugin.stdout).toMatch(/--tool-library-path/);
  });

  it('runs the agent with the simulated collector, answering /healthz', async () => {
    const token = join(base, 'token');
    writeFileSync(token, 'image-context-test-token');
    // The function's URL is a loopback port nothing listens on: pushes fail and are retried,
    // which /healthz (the process is alive) does not depend on.
    const agent = spawn(
      process.execPath,
      [
        'dist/cli/run.js',
        'agent',
        '--collector=sim',
        '--sim-enabled',
        '--node=image-test-node',
        '--function-url=http://127.0.0.1:9',
        `--token-file=${token}`,
        '--listen=127.0.0.1:0',
        '--no-events-kmsg',
        '--no-events-device-nodes',
        '--no-inventory-enabled',
      ],
      { cwd: app, env: { ...env, NODE_ENV: 'production' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => agent.on('exit', (code) => resolve(code)));
    let stderr = '';
    agent.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      // The server logs one JSON line `listening` with the port it bound.
      const port = await new Promise<number>((resolve, reject) => {
        createInterface({ input: agent.stdout }).on('line', (line) => {
          const entry = JSON.parse(line) as { msg?: string; port?: number };
          if (entry.msg === 'listening' && typeof entry.port === 'number') resolve(entry.port);
        });
        void exited.then((code) => reject(new Error(`agent exited ${code} before listening: ${stderr}`)));
      });
      const response = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(response.status).toBe(200);
    } finally {
      agent.kill('SIGTERM');
      await exited;
    }
  });
});

/**
 * Install scripts read and known to write nothing, pinned to their exact text so a new
 * version's script counts again: protobufjs's postinstall only warns when a dependent names
 * another version scheme (it is also refused in package.json's allowScripts).
 */
const INERT_INSTALL_SCRIPTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  protobufjs: { postinstall: 'node scripts/postinstall' },
};

function inertInstallScript(packageDir: string): boolean {
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
    name: string;
    scripts?: Record<string, string>;
  };
  const known = INERT_INSTALL_SCRIPTS[manifest.name];
  if (known === undefined) return false;
  const lifecycle = ['preinstall', 'install', 'postinstall'].filter(
    (hook) => manifest.scripts?.[hook] !== undefined,
  );
  return lifecycle.length > 0 && lifecycle.every((hook) => manifest.scripts?.[hook] === known[hook]);
}

// Lint guards the architecture:
// - pure code (contracts, families, core) never imports I/O modules, reads a clock or the
//   process, and never imports the outer layers (platform, cli, components, hack, test);
// - the accelerator families (families/) sit beside contracts/: built from the snapshot's
//   building blocks (contracts/fields/, a leaf) and contracts/' types, composed by
//   contracts/snapshot.ts, so they never import core/ nor contracts/ at run time;
// - the product (what the image ships: contracts, core, platform, consumer, cli, the
//   components) never imports the development folders (stack, bench, hack, test), and the
//   benchmarks never import cli/ or test/ (they reach the demo's stack through stack/);
// - a folder with an index.ts is entered only through it (hack/lint/folder-doors.mjs);
// - promises are awaited or handled, and only Errors are thrown (typed rules).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import folderDoors from './hack/lint/folder-doors.mjs';

const ioModules = [
  'node:fs',
  'node:fs/promises',
  'node:net',
  'node:http',
  'node:child_process',
  'express',
  '@kubernetes/client-node',
];

// An ES import of node:http reads all its exports, and its lazy WebSocket getter then loads
// Node's bundled undici (~5 MiB in a process that never uses it): platform's nodeHttp requires it.
const nodeHttpImport = {
  name: 'node:http',
  allowTypeImports: true,
  message: "use nodeHttp from platform/ (an ES import of node:http loads Node's bundled undici, ~5 MiB)",
};

// The development folders: the local stack and the demo (stack/), the benchmarks, the control
// plane and build scripts (hack/), the integration tests. None of them is in the image.
const devFolders = {
  regex: String.raw`^(\.\./)+(stack|bench|hack|test)(/|$)`,
  message:
    'the product never imports stack/, bench/, hack/ or test/: they are left out of the build and the image (hack/image-context.test.ts)',
};

// What the build compiles: every file of these folders but the tests (a testing.ts is compiled
// too, so it is held to the same rule).
const productFolders = [
  'contracts',
  'families',
  'core',
  'platform',
  'consumer',
  'cli',
  'agent',
  'functions',
  'controller',
];

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { local: folderDoors },
    rules: {
      'local/folder-doors': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/only-throw-error': 'error',
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'max-depth': ['error', 4],
      'max-params': ['error', 5],
    },
  },
  {
    // Product files without a narrower rule below (cli/, platform/node-http.ts, testing.ts):
    // only the development folders are off limits. A later block replaces this one's options
    // for the files it matches, so each of them repeats devFolders.
    files: productFolders.map((folder) => `${folder}/**/*.ts`),
    ignores: ['**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [devFolders] }] },
  },
  {
    // The components are peers: each builds on contracts/, core/ and platform/ only, so any
    // one of them can ship, scale and be tested without the others.
    files: ['agent/**/*.ts', 'functions/**/*.ts', 'controller/**/*.ts'],
    ignores: ['**/*.test.ts', '**/testing.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [nodeHttpImport],
          patterns: [
            {
              regex: String.raw`^(\.\./)+(cli|agent|functions|controller|consumer)(/|$)`,
              message:
                'a component imports only contracts/, core/ and platform/, never another component or the outer tooling',
            },
            devFolders,
          ],
        },
      ],
    },
  },
  {
    files: ['platform/**/*.ts'],
    ignores: ['**/*.test.ts', '**/testing.ts', 'platform/node-http.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [nodeHttpImport], patterns: [devFolders] }] },
  },
  {
    // The consumer SDK ships into users' pods: it builds on contracts/ alone, and on no
    // Kubernetes client, web framework or process spawning.
    files: ['consumer/**/*.ts'],
    ignores: ['**/*.test.ts', '**/testing.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['@kubernetes/client-node', 'express', 'node:child_process'].map((name) => ({
            name,
            message: 'consumer/ ships into users’ pods: contracts/, Node built-ins and fetch only',
          })),
          patterns: [
            {
              regex: String.raw`^(\.\./)+(families|core|platform|cli|agent|functions|controller)(/|$)`,
              message: 'consumer/ imports only contracts/',
            },
            devFolders,
          ],
        },
      ],
    },
  },
  {
    files: ['contracts/**/*.ts', 'families/**/*.ts', 'core/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ioModules.map((name) => ({
            name,
            message: 'contracts/, families/ and core/ are pure: no I/O',
          })),
          patterns: [
            {
              regex: String.raw`^(\.\./)+(platform|cli|agent|functions|controller|consumer)(/|$)`,
              message: 'contracts/ and core/ are the inner layer: they never import the outer ones',
            },
            devFolders,
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'core/ is pure: pass configuration in' },
      ],
      'no-console': 'error',
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'core/ never reads a clock: take now as an argument',
        },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'core/ never reads a clock: take now as an argument' },
        {
          object: 'Math',
          property: 'random',
          message: 'core/ is deterministic: use a seeded generator (core/sim/prng.ts)',
        },
      ],
    },
  },
  {
    // The families are composed into contracts/' snapshot schema, so they stand below it: at
    // run time they import only the snapshot's building blocks (contracts/fields/), and
    // contracts/ for its types alone; never core/ or anything outside.
    files: ['families/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ioModules.map((name) => ({ name, message: 'families/ is pure: no I/O' })),
          patterns: [
            {
              regex: String.raw`^(\.\./)+(core|platform|cli|agent|functions|controller|consumer)(/|$)`,
              message: 'families/ stands below core/ and the outer layers: it never imports them',
            },
            devFolders,
          ],
        },
      ],
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: String.raw`^(\.\./)+contracts/index\.js$`,
              allowTypeImports: true,
              message:
                'contracts/ composes the families (a run-time import is a cycle): import contracts/fields/ at run time, contracts/ for types only',
            },
          ],
        },
      ],
    },
  },
  {
    // The snapshot's building blocks are a leaf: the families and the envelope both build on them.
    files: ['contracts/fields/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ioModules.map((name) => ({ name, message: 'contracts/fields/ is pure: no I/O' })),
          patterns: [
            {
              regex: String.raw`^\.\./`,
              message: 'contracts/fields/ is a leaf: it imports nothing of the project',
            },
          ],
        },
      ],
    },
  },
  {
    // The benchmarks measure the product through its doors and run it on stack/'s local
    // pipeline; the CLI's dev commands (stack/) call them, never the other way round.
    files: ['bench/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: String.raw`^(\.\./)+(cli|test)(/|$)`,
              message: 'bench/ imports stack/ and the product’s doors, never cli/ or test/',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['bin/**/*.js', '**/*.mjs', 'jest.config.js', 'eslint.config.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);

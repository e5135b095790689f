// Lint guards the architecture:
// - pure code (contracts, core) never imports I/O modules, reads a clock or the process, and
//   never imports the outer layers (platform, cli, components, hack, test);
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
  'execa',
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
              regex: String.raw`^(\.\./)+(cli|hack|test|bench|agent|functions|controller|consumer)(/|$)`,
              message:
                'a component imports only contracts/, core/ and platform/, never another component or the outer tooling',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['platform/**/*.ts'],
    ignores: ['**/*.test.ts', '**/testing.ts', 'platform/node-http.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [nodeHttpImport] }] },
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
          paths: ['@kubernetes/client-node', 'express', 'execa', 'node:child_process'].map((name) => ({
            name,
            message: 'consumer/ ships into users’ pods: contracts/, Node built-ins and fetch only',
          })),
          patterns: [
            {
              regex: String.raw`^(\.\./)+(core|platform|cli|hack|test|bench|agent|functions|controller)(/|$)`,
              message: 'consumer/ imports only contracts/',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['contracts/**/*.ts', 'core/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ioModules.map((name) => ({ name, message: 'contracts/ and core/ are pure: no I/O' })),
          patterns: [
            {
              regex: String.raw`^(\.\./)+(platform|cli|hack|test|bench|agent|functions|controller|consumer)(/|$)`,
              message: 'contracts/ and core/ are the inner layer: they never import the outer ones',
            },
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
    files: ['bin/**/*.js', '**/*.mjs', 'jest.config.js', 'eslint.config.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);

// Two projects: fast unit tests colocated with the code (x.test.ts beside x.ts), and
// integration tests in test/ that share one real control plane per run (test/setup/).
const tsJest = [
  'ts-jest',
  { useESM: true, tsconfig: { module: 'NodeNext', moduleResolution: 'NodeNext', isolatedModules: true } },
];
const common = {
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': tsJest },
  testEnvironment: 'node',
};

export default {
  reporters: ['default', '<rootDir>/test/setup/summary-reporter.mjs'],
  projects: [
    {
      ...common,
      displayName: 'unit',
      setupFiles: ['<rootDir>/test/setup/fast-check.ts'],
      testMatch: [
        '<rootDir>/{contracts,families,core,platform,cli,agent,functions,controller,consumer,hack,bench,stack}/**/*.test.ts',
      ],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      globalSetup: '<rootDir>/test/setup/global-setup.mjs',
      globalTeardown: '<rootDir>/test/setup/global-teardown.mjs',
      setupFilesAfterEnv: ['<rootDir>/test/setup/timeout.ts'],
    },
  ],
};

import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '../platform/index.js';
import { agentConfigSchema, libraryPathProblem } from './config.js';

const flags = { node: 'node-a', 'function-url': 'http://127.0.0.1:8090' };

/** The configuration from these flags and environment, or the lines of its ConfigError. */
function load(extra: Record<string, string>, env: Record<string, string> = {}) {
  try {
    return loadConfig(agentConfigSchema, { flags: { ...flags, ...extra }, env });
  } catch (error) {
    if (error instanceof ConfigError) return error.lines;
    throw error;
  }
}

describe('toolLibraryPath', () => {
  it('takes absolute directories separated by ":", from the flag or NPU_FAULT_TOOL_LIBRARY_PATH', () => {
    const path = '/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common';
    expect(load({ 'tool-library-path': path })).toMatchObject({ toolLibraryPath: path });
    expect(load({}, { NPU_FAULT_TOOL_LIBRARY_PATH: path })).toMatchObject({ toolLibraryPath: path });
    expect(load({})).not.toHaveProperty('toolLibraryPath');
  });

  it.each([
    ['', 'must name at least one absolute directory'],
    ['lib64', '"lib64" is not an absolute directory'],
    ['/a:lib', '"lib" is not an absolute directory'],
    ['/a::/b', 'has an empty entry (the loader would search the working directory)'],
    [':/a', 'has an empty entry (the loader would search the working directory)'],
    ['/a\n/b', 'must be one line'],
  ])('refuses %j with one line naming the setting: %s', (value, problem) => {
    expect(libraryPathProblem(value)).toBe(problem);
    expect(load({ 'tool-library-path': value })).toEqual([`--tool-library-path: ${problem}`]);
    expect(load({}, { NPU_FAULT_TOOL_LIBRARY_PATH: value })).toEqual([
      `NPU_FAULT_TOOL_LIBRARY_PATH: ${problem}`,
    ]);
  });
});

describe('the simulated fault API', () => {
  const sim = { collector: 'sim', 'sim-enabled': 'true' };
  it.each([['127.0.0.1:0'], ['127.10.0.1:8081'], ['localhost:8081'], ['[::1]:8081']])(
    'may go without a token on loopback (%s)',
    (listen) => {
      expect(load({ ...sim, listen })).toMatchObject({
        collector: 'sim',
        listen: { port: expect.any(Number) },
      });
    },
  );

  it.each([[':8081'], ['0.0.0.0:8081'], ['10.0.0.5:8081'], ['[::]:8081']])(
    'needs a token beyond loopback (%s), in one line naming the setting',
    (listen) => {
      const lines = load({ ...sim, listen });
      expect(lines).toEqual([
        expect.stringMatching(/^sim\.faultTokenFile: required: the fault API would listen beyond loopback/),
      ]);
      expect(load({ ...sim, listen, 'sim-fault-token-file': '/run/secrets/fault-token' })).toMatchObject({
        sim: { faultTokenFile: '/run/secrets/fault-token' },
      });
    },
  );

  it('asks nothing of an agent on a real collector', () => {
    expect(load({ collector: 'nvidia-smi', listen: ':8081' })).toMatchObject({ collector: 'nvidia-smi' });
  });
});

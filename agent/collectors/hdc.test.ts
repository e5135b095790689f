import { describe, expect, it } from '@jest/globals';
import { snapshotSchema } from '../../contracts/index.js';
import { ParseError, ValidationError } from '../../core/errors.js';
import { NotSnapshotError } from '../../core/parsers/index.js';
import { FakeClock } from '../../platform/index.js';
import { fakeExecTool } from '../probe/testing.js';
import { readExampleJson } from '../../test/fixtures.js';
import { createHdcCollector, hdcCollectorConfigSchema } from './hdc.js';

const never = (): AbortSignal => new AbortController().signal;
const collectorPrinting = (stdout: string) => {
  const exec = fakeExecTool(() => stdout);
  return {
    exec,
    collector: createHdcCollector(hdcCollectorConfigSchema.parse({}), { exec, clock: new FakeClock() }),
  };
};

describe('createHdcCollector', () => {
  const example = readExampleJson('snapshot-910b.json') as { payload: unknown; node: string };
  const expected = snapshotSchema.parse(example).payload;

  it('runs `hdc health -j` by default and returns the payload of the snapshot it prints', async () => {
    const { exec, collector } = collectorPrinting(JSON.stringify(example));
    await expect(collector.collect(never())).resolves.toEqual(expected);
    expect(exec.calls).toEqual([{ command: 'hdc', args: ['health', '-j'] }]);
  });

  it('accepts a bare payload, defaults filled in', async () => {
    await expect(
      collectorPrinting(JSON.stringify(example.payload)).collector.collect(never()),
    ).resolves.toEqual(expected);
  });

  it('runs the configured command and arguments', async () => {
    const exec = fakeExecTool(() => JSON.stringify(example.payload));
    const config = hdcCollectorConfigSchema.parse({
      command: '/opt/hdc/bin/hdc',
      args: ['health', '--json', '--all'],
    });
    await createHdcCollector(config, { exec, clock: new FakeClock() }).collect(never());
    expect(exec.calls).toEqual([{ command: '/opt/hdc/bin/hdc', args: ['health', '--json', '--all'] }]);
  });

  it.each([
    { name: 'not JSON', stdout: 'Segmentation fault (core dumped)', error: ParseError },
    { name: 'empty output', stdout: '', error: ParseError },
    {
      name: 'a value of the wrong type',
      stdout: '{"family":"910B","npus":[{"npu":0,"temp_c":"hot"}]}',
      error: ValidationError,
    },
    { name: 'a MindCluster ConfigMap', stdout: '{"DeviceInfo":{}}', error: NotSnapshotError },
  ])('fails on garbage output: $name', async ({ stdout, error }) => {
    await expect(collectorPrinting(stdout).collector.collect(never())).rejects.toThrow(error);
  });

  it('has defaults and refuses unknown keys', () => {
    expect(hdcCollectorConfigSchema.parse({})).toEqual({ command: 'hdc', args: ['health', '-j'] });
    expect(hdcCollectorConfigSchema.safeParse({ comand: 'hdc' }).success).toBe(false);
    expect(hdcCollectorConfigSchema.safeParse({ command: '' }).success).toBe(false);
  });
});

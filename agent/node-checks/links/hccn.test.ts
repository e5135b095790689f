import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecToolError, createExecTool } from '../../probe/index.js';
import { createFakeTool, fakeExecTool, isProcessGone, tempDir, waitFor } from '../../probe/testing.js';
import { nodeFileReader } from '../file-reader.js';
import { npusFromDeviceNodes, parseHccnLinkStatus, readHccnLinks } from './hccn.js';
import { HCCN_LINK_DOWN, HCCN_LINK_UP } from './testing.js';

describe('parseHccnLinkStatus', () => {
  it('reads the recorded answers', () => {
    expect(parseHccnLinkStatus(HCCN_LINK_UP)).toBe('UP');
    expect(parseHccnLinkStatus(HCCN_LINK_DOWN)).toBe('DOWN');
    expect(parseHccnLinkStatus('some banner\r\nlink status: DOWN \r\n')).toBe('DOWN');
  });

  it('refuses anything that is not one UP or DOWN, saying what it found', () => {
    expect(() => parseHccnLinkStatus('')).toThrow(/no "link status:" line/);
    expect(() => parseHccnLinkStatus('link status: FLAKY\n')).toThrow(
      /link status is "FLAKY", not UP or DOWN/,
    );
    expect(() => parseHccnLinkStatus('link status: UP\nlink status: DOWN\n')).toThrow(/conflicting/);
    expect(() => parseHccnLinkStatus('Device 0 not support\n')).toThrow(
      /no "link status:" line in "Device 0 not support"/,
    );
  });
});

describe('readHccnLinks', () => {
  const signal = new AbortController().signal;

  it('asks each NPU with `-i <n> -link -g` and keeps the order of the NPUs', async () => {
    const exec = fakeExecTool((_, args) => (args[1] === '1' ? HCCN_LINK_DOWN : HCCN_LINK_UP));
    const answers = await readHccnLinks([0, 1, 2, 3, 4, 5], {
      exec,
      path: '/hccn_tool',
      timeoutMs: 1000,
      signal,
    });
    expect(answers).toEqual([
      { npu: 0, status: 'UP' },
      { npu: 1, status: 'DOWN' },
      { npu: 2, status: 'UP' },
      { npu: 3, status: 'UP' },
      { npu: 4, status: 'UP' },
      { npu: 5, status: 'UP' },
    ]);
    expect(exec.calls[1]).toEqual({ command: '/hccn_tool', args: ['-i', '1', '-link', '-g'] });
  });

  it('answers a failed run with its kind and one line, and garbage as garbage', async () => {
    const exec = fakeExecTool((_, args) =>
      args[1] === '0'
        ? new ExecToolError('exit', 'hccn_tool exited with code 255: device 0 is not ready')
        : 'link status: maybe\n',
    );
    const answers = await readHccnLinks([0, 1], { exec, path: '/hccn_tool', timeoutMs: 1000, signal });
    expect(answers).toEqual([
      { npu: 0, failure: 'exit', error: 'hccn_tool exited with code 255: device 0 is not ready' },
      { npu: 1, failure: 'garbage', error: 'link status is "MAYBE", not UP or DOWN' },
    ]);
  });

  it('ends the round at its deadline: runs going are stopped, NPUs not reached get no answer', async () => {
    const exec = fakeExecTool(() => ({ hang: true }));
    const answers = await readHccnLinks([0, 1, 2, 3, 4, 5], {
      exec,
      path: '/hccn_tool',
      timeoutMs: 100,
      signal,
    });
    expect(answers.map((a) => [a.npu, 'failure' in a ? a.failure : a.status])).toEqual([
      [0, 'aborted'],
      [1, 'aborted'],
      [2, 'aborted'],
      [3, 'aborted'],
    ]);
    expect(exec.calls).toHaveLength(4);
  });

  describe('with a real tool process', () => {
    let dir: ReturnType<typeof tempDir>;
    beforeEach(() => {
      dir = tempDir('links-hccn-');
    });
    afterEach(() => dir.remove());

    it('kills a hanging hccn_tool and its child at the timeout, as an aborted read', async () => {
      const tool = createFakeTool(dir.path, 'hccn_tool');
      tool.respond('-i 0 -link -g', { stdout: HCCN_LINK_UP });
      tool.respond('-i 1 -link -g', { hang: true });
      const answers = await readHccnLinks([0, 1], {
        exec: createExecTool(),
        path: tool.path,
        timeoutMs: 1500,
        signal,
      });
      expect(answers[0]).toEqual({ npu: 0, status: 'UP' });
      expect(answers[1]).toMatchObject({ npu: 1, failure: 'aborted' });
      const pids = tool.pids();
      expect(pids).not.toBeNull();
      await waitFor(
        () => (pids as [number, number]).every(isProcessGone),
        'the hung tool and its child gone',
      );
    });

    it('answers spawn for a tool that cannot be started', async () => {
      const answers = await readHccnLinks([0], {
        exec: createExecTool(),
        path: join(dir.path, 'missing'),
        timeoutMs: 1000,
        signal,
      });
      expect(answers).toEqual([{ npu: 0, failure: 'spawn', error: expect.stringMatching(/ENOENT/) }]);
    });
  });
});

describe('npusFromDeviceNodes', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('links-dev-');
  });
  afterEach(() => dir.remove());

  it('lists davinci<N> in number order, not the control nodes', async () => {
    for (const name of ['davinci10', 'davinci2', 'davinci_manager', 'davinci0', 'hisi_hdc', 'davinciX'])
      writeFileSync(join(dir.path, name), '');
    mkdirSync(join(dir.path, 'pts'));
    await expect(npusFromDeviceNodes(nodeFileReader, dir.path)).resolves.toEqual([0, 2, 10]);
  });

  it('finds none where the directory does not exist', async () => {
    await expect(npusFromDeviceNodes(nodeFileReader, join(dir.path, 'nope'))).resolves.toEqual([]);
  });
});

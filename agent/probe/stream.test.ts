import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createStreamTool, type ToolStreamHandlers } from './stream.js';
import { isProcessGone, openFileDescriptors, tempDir, waitFor } from './testing.js';

const stream = createStreamTool();

/** Handlers that keep what they are told. */
function recorder(): ToolStreamHandlers & { lines: string[]; errors: string[]; ends: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  const ends: string[] = [];
  return {
    lines,
    errors,
    ends,
    onLine: (line) => lines.push(line),
    onStderr: (line) => errors.push(line),
    onEnd: (reason) => ends.push(reason),
  };
}

describe('createStreamTool (real processes)', () => {
  let dir: ReturnType<typeof tempDir>;
  const script = (name: string, body: string): string => {
    const path = join(dir.path, name);
    writeFileSync(path, `#!/bin/bash\n${body}\n`, { mode: 0o755 });
    return path;
  };
  beforeAll(() => {
    dir = tempDir('npu-fault-stream-');
  });
  afterAll(() => dir.remove());

  it('hands on stdout lines as they come (a line split across writes whole) and stderr lines apart, with the arguments as given', async () => {
    const tool = script(
      'loop',
      `printf 'args:%s|' "$@"; echo; i=0; while :; do printf 'row %d, ' $i; sleep 0.01; printf 'end\\n'; echo "warn $i" >&2; i=$((i+1)); sleep 0.02; done`,
    );
    const r = recorder();
    const running = stream(tool, ['--query-gpu=index,count', '-lms', '20'], r);
    await waitFor(() => r.lines.length >= 4 && r.errors.length >= 3, 'four lines');
    running.stop();
    expect(r.lines.slice(0, 4)).toEqual([
      'args:--query-gpu=index,count|args:-lms|args:20|',
      'row 0, end',
      'row 1, end',
      'row 2, end',
    ]);
    expect(r.errors.slice(0, 2)).toEqual(['warn 0', 'warn 1']);
    expect(r.ends).toEqual([]); // stop() is not an end
  });

  it('stop() kills the tool with its process group, closes the pipes, and nothing is called after it', async () => {
    const fdsBefore = openFileDescriptors();
    const pids = join(dir.path, 'pids');
    const tool = script(
      'forks',
      `sleep 1000 & echo "$$ $!" > '${pids}.tmp' && mv '${pids}.tmp' '${pids}'; while :; do echo tick; sleep 0.01; done`,
    );
    const r = recorder();
    const running = stream(tool, [], r);
    await waitFor(() => r.lines.length > 0, 'a line');
    const [toolPid, childPid] = readFileSync(pids, 'utf8').trim().split(' ').map(Number) as [number, number];
    running.stop();
    const seen = r.lines.length;
    await waitFor(() => isProcessGone(toolPid) && isProcessGone(childPid), 'the tool and its child gone');
    await waitFor(() => openFileDescriptors() <= fdsBefore, 'the pipes closed');
    expect(r.lines.length).toBe(seen);
    expect(r.ends).toEqual([]);
  });

  it('ends once when the tool exits, with its code and first stderr line, after its last lines', async () => {
    const tool = script(
      'dies',
      `echo 'row 0'; echo 'row 1'; echo 'NVML: Driver/library version mismatch' >&2; exit 9`,
    );
    const r = recorder();
    stream(tool, [], r);
    await waitFor(() => r.ends.length > 0, 'the end');
    expect(r.lines).toEqual(['row 0', 'row 1']);
    expect(r.ends).toEqual([`${tool} exited with code 9: NVML: Driver/library version mismatch`]);
  });

  it('ends when the tool is killed by a signal it was not sent by us', async () => {
    const tool = script('killed', `echo up; kill -KILL $$`);
    const r = recorder();
    stream(tool, [], r);
    await waitFor(() => r.ends.length > 0, 'the end');
    expect(r.ends).toEqual([`${tool} was killed by SIGKILL`]);
  });

  it('ends, once, when the tool cannot be started', async () => {
    const r = recorder();
    stream(join(dir.path, 'no-such-tool'), [], r);
    await waitFor(() => r.ends.length > 0, 'the end');
    await new Promise((resolve) => setImmediate(resolve));
    expect(r.ends).toEqual([`${join(dir.path, 'no-such-tool')} could not be started: ENOENT`]);
  });

  it('ends a tool printing a line longer than the cap, and kills it', async () => {
    const pidFile = join(dir.path, 'endless.pid');
    const tool = script(
      'endless',
      `echo $$ > '${pidFile}'; echo short; while :; do printf 'xxxxxxxxxxxxxxxx'; done`,
    );
    const r = recorder();
    stream(tool, [], r, { maxLineBytes: 4096 });
    await waitFor(() => r.ends.length > 0, 'the end');
    expect(r.lines).toEqual(['short']);
    expect(r.ends).toEqual([`${tool} printed a line longer than 4096 bytes`]);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await waitFor(() => isProcessGone(pid), 'the tool gone');
  });

  it('gives the stream the library path ahead of an inherited LD_LIBRARY_PATH, and leaves this process alone', async () => {
    const before = process.env.LD_LIBRARY_PATH;
    const withPath = createStreamTool({
      env: { PATH: process.env.PATH ?? '', LD_LIBRARY_PATH: '/usr/lib/inherited' },
      libraryPath: '/opt/driver/lib64',
    });
    const r = recorder();
    const ended = new Promise<void>((resolve) => {
      withPath('/bin/sh', ['-c', 'echo "$LD_LIBRARY_PATH"'], {
        ...r,
        onEnd: (reason) => {
          r.onEnd(reason);
          resolve();
        },
      });
    });
    await ended;
    expect(r.lines).toEqual(['/opt/driver/lib64:/usr/lib/inherited']);
    expect(r.ends).toEqual(['/bin/sh exited with code 0']);
    expect(process.env.LD_LIBRARY_PATH).toBe(before);
  });
});

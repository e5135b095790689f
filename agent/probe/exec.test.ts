import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecToolError, STDERR_HEAD_BYTES, STDERR_TAIL_BYTES, createExecTool } from './exec.js';
import {
  createFakeTool,
  isProcessGone,
  openFileDescriptors,
  tempDir,
  waitFor,
  type FakeTool,
} from './testing.js';

const exec = createExecTool();
const never = (): AbortSignal => new AbortController().signal;

/** The ExecToolError a run rejects with (fails the test when it resolves). */
async function failure(run: Promise<string>): Promise<ExecToolError> {
  const error = await run.then(
    (stdout) => new Error(`expected a failure, got ${JSON.stringify(stdout)}`),
    (e: unknown) => e,
  );
  if (!(error instanceof ExecToolError)) throw error;
  return error;
}

describe('createExecTool', () => {
  let dir: ReturnType<typeof tempDir>;
  let tool: FakeTool;
  beforeAll(() => {
    dir = tempDir('npu-fault-exec-');
    tool = createFakeTool(dir.path, 'tool');
  });
  afterAll(() => dir.remove());

  it('resolves with the whole stdout of a tool that exits 0, passing the arguments as given', async () => {
    tool.respond(['info', '-t', 'health'], { stdout: 'line 1\nline 2\n', stderr: 'a warning\n' });
    await expect(exec(tool.path, ['info', '-t', 'health'], { signal: never() })).resolves.toBe(
      'line 1\nline 2\n',
    );
    expect(tool.calls().at(-1)).toBe('info -t health');
  });

  it('fails a non-zero exit with one line naming the code and the first stderr line, keeping both outputs', async () => {
    tool.respond('exit', {
      stdout: 'partial row\n',
      stderr: '\ndcmi module initialize failed. ret is -8005\nmore\n',
      exitCode: 3,
    });
    const error = await failure(exec(tool.path, ['exit'], { signal: never() }));
    expect(error).toMatchObject({ kind: 'exit', exitCode: 3, stdout: 'partial row\n' });
    expect(error.message).toBe(
      `${tool.path} exited with code 3: dcmi module initialize failed. ret is -8005`,
    );
    expect(error.stderr).toContain('more');
  });

  it('names the first stdout line when the tool wrote nothing on stderr (nvidia-smi prints errors there)', async () => {
    tool.respond('lost', {
      stdout: 'Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.\n',
      exitCode: 15,
    });
    const error = await failure(exec(tool.path, ['lost'], { signal: never() }));
    expect(error.message).toMatch(
      /exited with code 15: Unable to determine the device handle for GPU 0000:3B:00\.0/,
    );
    expect(error.message).not.toContain('\n');
  });

  it('fails with kind spawn when the command is missing or not executable', async () => {
    const missing = await failure(exec(join(dir.path, 'no-such-tool'), [], { signal: never() }));
    expect(missing).toMatchObject({ kind: 'spawn' });
    expect(missing.message).toContain('ENOENT');
    const plain = join(dir.path, 'not-executable');
    writeFileSync(plain, '#!/bin/bash\necho hi\n', { mode: 0o644 });
    expect(await failure(exec(plain, [], { signal: never() }))).toMatchObject({ kind: 'spawn' });
  });

  it('on abort rejects at once and kills the tool with its process group, grandchild included', async () => {
    tool.respond('hang', { stdout: 'half a table\n', hang: true });
    const controller = new AbortController();
    const run = exec(tool.path, ['hang'], { signal: controller.signal });
    await waitFor(() => tool.pids() !== null, 'the tool wrote its pids');
    const [toolPid, grandchild] = tool.pids() ?? [0, 0];
    expect(isProcessGone(toolPid)).toBe(false);
    expect(isProcessGone(grandchild)).toBe(false);
    controller.abort(new Error('deadline passed'));
    const error = await failure(run);
    expect(error).toMatchObject({ kind: 'aborted' });
    expect(error.message).toContain('deadline passed');
    await waitFor(() => isProcessGone(toolPid) && isProcessGone(grandchild), 'both processes are gone', 2000);
  });

  it('fails with kind spawn, and lives on, when Node reports the failure only as an event with no pipes (EMFILE)', async () => {
    // What node:child_process does when the agent is out of file descriptors: no pipes, no
    // pid, and an 'error' event on the next tick.
    const outOfDescriptors = (() => {
      const child = new EventEmitter() as EventEmitter & { stdout: null; stderr: null; pid: undefined };
      Object.assign(child, { stdout: null, stderr: null, pid: undefined });
      process.nextTick(() =>
        child.emit('error', Object.assign(new Error('spawn EMFILE'), { code: 'EMFILE' })),
      );
      return child;
    }) as unknown as typeof spawn;
    const error = await failure(
      createExecTool({ spawn: outOfDescriptors })('npu-smi', [], { signal: never() }),
    );
    expect(error).toMatchObject({ kind: 'spawn' });
    expect(error.message).toBe('npu-smi could not be started: EMFILE');
  });

  it('does not start a tool when the signal is already aborted', async () => {
    const before = tool.calls().length;
    const controller = new AbortController();
    controller.abort(new Error('too late'));
    expect(await failure(exec(tool.path, ['never'], { signal: controller.signal }))).toMatchObject({
      kind: 'aborted',
    });
    expect(tool.calls()).toHaveLength(before);
  });

  it('does not wait for a child the tool left running: the group goes when the tool exits', async () => {
    const script = join(dir.path, 'forks');
    const pidFile = join(dir.path, 'forks.pid');
    // The child keeps stdout open: without the group kill the run would wait for it.
    writeFileSync(script, `#!/bin/bash\nsleep 1000 &\necho $! > '${pidFile}'\necho done\n`, { mode: 0o755 });
    await expect(exec(script, [], { signal: never() })).resolves.toBe('done\n');
    const { readFileSync } = await import('node:fs');
    const child = Number(readFileSync(pidFile, 'utf8'));
    await waitFor(() => isProcessGone(child), 'the left-over child is gone', 2000);
  });

  it('caps the output: a tool printing more than maxOutputBytes is killed and fails as output', async () => {
    const script = join(dir.path, 'floods');
    writeFileSync(script, '#!/bin/bash\nwhile true; do echo 0123456789abcdef; done\n', { mode: 0o755 });
    const error = await failure(exec(script, [], { signal: never(), maxOutputBytes: 64 * 1024 }));
    expect(error).toMatchObject({ kind: 'output' });
    expect(error.message).toContain('more than 65536 bytes');
  });

  it('reads the whole stdout of a tool that floods stderr: only stdout counts against the cap', async () => {
    const script = join(dir.path, 'noisy');
    // 2 MiB of warnings on stderr, well past a 64 KiB cap, then good output and exit 0.
    writeFileSync(
      script,
      '#!/bin/bash\nhead -c 2097152 /dev/zero | tr "\\0" w >&2\necho "row 1"\necho "row 2"\n',
      { mode: 0o755 },
    );
    await expect(exec(script, [], { signal: never(), maxOutputBytes: 64 * 1024 })).resolves.toBe(
      'row 1\nrow 2\n',
    );
  });

  it('keeps only the start and the end of a huge stderr on a failure', async () => {
    const script = join(dir.path, 'noisy-fail');
    writeFileSync(
      script,
      '#!/bin/bash\necho "first: dcmi failed" >&2\nhead -c 1048576 /dev/zero | tr "\\0" x >&2\necho "\nlast line" >&2\nexit 4\n',
      { mode: 0o755 },
    );
    const error = await failure(exec(script, [], { signal: never() }));
    expect(error).toMatchObject({ kind: 'exit', exitCode: 4 });
    expect(error.message).toBe(`${script} exited with code 4: first: dcmi failed`);
    expect(error.stderr.length).toBeLessThanOrEqual(STDERR_HEAD_BYTES + STDERR_TAIL_BYTES + 64);
    expect(error.stderr).toMatch(/^first: dcmi failed\n/);
    expect(error.stderr).toMatch(/\[\d+ bytes of stderr left out\]/);
    expect(error.stderr).toMatch(/last line\n$/);
  });

  it('reclaims read buffers as a big output streams in (a minor collection every reclaimEveryBytes)', async () => {
    let reclaimed = 0;
    const counting = createExecTool({ reclaim: () => reclaimed++, reclaimEveryBytes: 64 * 1024 });
    const script = join(dir.path, 'megabyte');
    writeFileSync(script, '#!/bin/bash\nhead -c 1048576 /dev/zero | tr "\\0" e >&2\necho ok\n', {
      mode: 0o755,
    });
    await expect(counting(script, [], { signal: never() })).resolves.toBe('ok\n');
    expect(reclaimed).toBeGreaterThanOrEqual(4);
    expect(reclaimed).toBeLessThanOrEqual(16);
  });

  it('never splits a UTF-8 character in the stderr excerpt', async () => {
    const whole = join(dir.path, 'utf8-whole');
    writeFileSync(
      whole,
      `#!/bin/bash\nprintf '%s' "$(head -c ${STDERR_HEAD_BYTES - 1} /dev/zero | tr '\\0' x)" >&2\nprintf 'é and more' >&2\nexit 1\n`,
      { mode: 0o755 },
    );
    expect((await failure(exec(whole, [], { signal: never() }))).stderr).toMatch(/xé and more$/);
    const cut = join(dir.path, 'utf8-cut');
    writeFileSync(cut, `#!/bin/bash\nfor i in $(seq 4000); do printf 'ééééé' >&2; done\nexit 1\n`, {
      mode: 0o755,
    });
    const error = await failure(exec(cut, [], { signal: never() }));
    expect(error.stderr).not.toContain('\ufffd');
    expect(error.stderr).toMatch(/^é+\n\[\d+ bytes of stderr left out\]\né+$/);
  });

  it('keeps nothing of the output of a run that printed too much', async () => {
    const script = join(dir.path, 'floods-too');
    writeFileSync(script, '#!/bin/bash\nwhile true; do echo 0123456789abcdef; done\n', { mode: 0o755 });
    const error = await failure(exec(script, [], { signal: never(), maxOutputBytes: 64 * 1024 }));
    expect({ kind: error.kind, stdout: error.stdout, stderr: error.stderr }).toEqual({
      kind: 'output',
      stdout: '',
      stderr: '',
    });
    expect(JSON.stringify(error).length + error.message.length).toBeLessThan(1024);
  });

  it('runs tools in the C locale, with the environment it was given', async () => {
    const script = join(dir.path, 'env');
    writeFileSync(script, '#!/bin/bash\necho "$LC_ALL $PROBE_TEST"\n', { mode: 0o755 });
    const withEnv = createExecTool({
      env: { PATH: process.env.PATH ?? '', PROBE_TEST: 'given', LC_ALL: 'de_DE.UTF-8' },
    });
    await expect(withEnv(script, [], { signal: never() })).resolves.toBe('C given\n');
  });

  it('puts libraryPath first in the tool’s LD_LIBRARY_PATH only, ahead of an inherited value', async () => {
    const before = process.env.LD_LIBRARY_PATH;
    const echo = ['-c', 'printf %s "$LD_LIBRARY_PATH"'];
    // From this process's environment (the agent's default): the child sees the drivers'
    // directories, the agent itself still has none of them.
    const fromProcess = createExecTool({ libraryPath: '/opt/driver/lib64:/opt/driver/lib64/common' });
    const ours = '/opt/driver/lib64:/opt/driver/lib64/common';
    await expect(fromProcess('/bin/sh', echo, { signal: never() })).resolves.toBe(
      before ? `${ours}:${before}` : ours,
    );
    expect(process.env.LD_LIBRARY_PATH).toBe(before);
    // An inherited value stays, after ours.
    const inherited = createExecTool({
      env: { PATH: process.env.PATH ?? '', LD_LIBRARY_PATH: '/usr/lib/inherited' },
      libraryPath: '/opt/driver/lib64',
    });
    await expect(inherited('/bin/sh', echo, { signal: never() })).resolves.toBe(
      '/opt/driver/lib64:/usr/lib/inherited',
    );
    // Without libraryPath the tool sees exactly what it was given.
    const plain = createExecTool({ env: { PATH: process.env.PATH ?? '' } });
    await expect(plain('/bin/sh', echo, { signal: never() })).resolves.toBe('');
  });

  it('leaks no file descriptors over many runs that succeed, fail and are aborted', async () => {
    tool.respond('ok', { stdout: 'fine\n' });
    tool.respond('bad', { stderr: 'no\n', exitCode: 1 });
    tool.respond('stall', { hang: true });
    const round = async (): Promise<void> => {
      await exec(tool.path, ['ok'], { signal: never() });
      await exec(tool.path, ['bad'], { signal: never() }).catch(() => undefined);
      const controller = new AbortController();
      const run = exec(tool.path, ['stall'], { signal: controller.signal });
      controller.abort(new Error('stop'));
      await run.catch(() => undefined);
    };
    await round(); // the first run opens what stays open (libuv's signal pipe)
    const baseline = openFileDescriptors();
    for (let i = 0; i < 5; i++) await round();
    // Closed pipes are released when their handles close, a turn after the run settles.
    await waitFor(() => openFileDescriptors() <= baseline, 'descriptors back to the baseline', 2000);
  });
});

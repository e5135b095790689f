import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMMANDS } from '../commands.js';
import { main } from '../main.js';
import { memoryIO } from '../testing.js';

describe('command line', () => {
  async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const io = memoryIO();
    const code = await main(args, io);
    return { code, out: io.out, err: io.err };
  }

  it('is registered and has help', async () => {
    expect(COMMANDS.status?.load).toBeDefined();
    const help = await cli(['status', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('--fail-stale');
    expect(help.out).toContain('-o, --output table|wide|json');
  });

  it.each([
    [['-o', 'yaml'], "-o must be table, wide or json, not 'yaml'"],
    [['--namespace', 'Bad_NS'], "--namespace 'Bad_NS' is not a namespace name"],
    [['--node', 'UPPER'], "--node 'UPPER' is not a Kubernetes node name"],
    [['--stale-after', 'soon'], '--stale-after must be a duration'],
    [['--bogus'], "unknown option '--bogus'"],
    [['extra'], "unexpected argument 'extra'"],
  ])('%j is a usage error, exit 2', async (args, message) => {
    const result = await cli(['status', ...args]);
    expect(result.code).toBe(2);
    expect(result.err).toContain(message);
    expect(result.err).toMatch(/^npu-fault status: .*; run 'npu-fault status --help'\n$/);
  });

  it('a bad kubeconfig or context is one line, exit 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'status-kc-'));
    const file = join(dir, 'config');
    writeFileSync(
      file,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\n' +
        'users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const result = await cli(['status', '--kubeconfig', file, '--context', 'nope']);
    expect(result).toEqual({
      code: 1,
      out: '',
      err: "npu-fault status: kubeconfig: no context named 'nope'\n",
    });
    const unreachable = await cli(['status', '--kubeconfig', file]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.err).toMatch(
      /^npu-fault status: cannot reach the Kubernetes API at https:\/\/127\.0\.0\.1:1: /,
    );
  });
});

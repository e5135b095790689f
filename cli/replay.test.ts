import { describe, expect, it } from '@jest/globals';
import { publishedDocumentSchema } from '../contracts/index.js';
import { isoAt, line, npuSnapshot } from '../core/engine/testing.js';
import { replay } from './replay.js';
import { memoryIO } from './testing.js';

async function run(
  args: string[],
  files: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const io = memoryIO(files);
  const code = await replay(args, io);
  return { code, stdout: io.out, stderr: io.err };
}

const trace = [0, 1, 2]
  .map((t) => line(npuSnapshot({ seq: t + 1, t }, [{ npu: 0, link: t === 2 ? 'down' : 'up', power: 100 }])))
  .join('\n');

describe('npu-fault replay', () => {
  it('prints one JSON line per transition, in the documented key order', async () => {
    const result = await run(['s.jsonl'], { 's.jsonl': `${trace}\n\n` });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout.split('\n')).toEqual([
      `{"at":"${isoAt(0)}","node":"node-a","npu":"npu0","from":"unknown","to":"healthy","reason":null}`,
      `{"at":"${isoAt(2)}","node":"node-a","npu":"npu0","from":"healthy","to":"failed","reason":"pcie-link-down"}`,
      '',
    ]);
  });

  it('prints the final document with --published (publisher replay, term 0, timestamp = final now)', async () => {
    const result = await run(['--published', 's.jsonl'], { 's.jsonl': trace });
    const doc = publishedDocumentSchema.parse(JSON.parse(result.stdout));
    expect(doc).toMatchObject({
      timestamp: isoAt(2),
      publisher: { identity: 'replay', term: 0 },
      node_count: 1,
    });
    expect(doc.nodes['node-a']?.npus.map((d) => [d.id, d.status, d.reason])).toEqual([
      ['npu0', 'failed', 'pcie-link-down'],
    ]);
  });

  it('applies a rules file and reports a bad one with its line and field', async () => {
    const good = await run(['s.jsonl', '--rules', 'r.yaml'], {
      's.jsonl': trace,
      'r.yaml': 'offline_power_w: 500\n',
    });
    expect(good.stdout).toContain('"reason":"npu-offline"');
    const bad = await run(['s.jsonl', '--rules=r.yaml'], {
      's.jsonl': trace,
      'r.yaml': 'high_temp:\n  threshold_c: hot\n',
    });
    expect(bad).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^npu-fault replay: r\.yaml:2: high_temp\.threshold_c: .*number.*\n$/),
    });
  });

  it.each([
    {
      name: 'invalid JSON',
      text: `${trace.split('\n')[0]}\n{oops`,
      error: /^npu-fault replay: s\.jsonl:2: invalid JSON: /,
    },
    {
      name: 'schema violation names the field',
      text: `${trace.split('\n')[0]}\n${JSON.stringify({ ...JSON.parse(trace.split('\n')[0] as string), seq: -1 })}`,
      error: /^npu-fault replay: s\.jsonl:2: seq: /,
    },
    {
      name: 'payload field',
      text: JSON.stringify({
        ...JSON.parse(trace.split('\n')[0] as string),
        payload: { family: '910B', npus: [{ npu: 0, temp_c: 'x' }] },
      }),
      error: /^npu-fault replay: s\.jsonl:1: payload\.npus\[0\]\.temp_c: /,
    },
  ])('stops at the first bad line ($name) with exit 1 and nothing on stdout', async ({ text, error }) => {
    const result = await run(['s.jsonl'], { 's.jsonl': `${text}\n${trace}` });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(error);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 1 on an unreadable file', async () => {
    const result = await run(['missing.jsonl'], {});
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: 'npu-fault replay: missing.jsonl: cannot read (ENOENT)\n',
    });
  });

  it.each([
    { name: 'no file', args: [] },
    { name: 'two files', args: ['a', 'b'] },
    { name: 'unknown flag', args: ['a', '--fast'] },
    { name: '--rules without value', args: ['a', '--rules'] },
  ])('exits 2 on bad usage: $name', async ({ args }) => {
    const result = await run(args, {});
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^npu-fault replay: .*; run 'npu-fault replay --help'\n$/);
  });

  it('prints help, saying that the first bad line stops the replay', async () => {
    const result = await run(['--help'], {});
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      'Usage: npu-fault replay <snapshots.jsonl|-> [--rules <file>] [--published]',
    );
    expect(result.stdout).toContain('The first bad line stops the replay');
  });

  it('prints nothing for an empty file, and an empty valid document with --published', async () => {
    expect(await run(['e.jsonl'], { 'e.jsonl': '\n' })).toEqual({ code: 0, stdout: '', stderr: '' });
    const doc = publishedDocumentSchema.parse(
      JSON.parse((await run(['e.jsonl', '--published'], { 'e.jsonl': '' })).stdout),
    );
    expect(doc.node_count).toBe(0);
  });

  it("reads standard input for '-'", async () => {
    const result = await run(['-'], { '-': trace });
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n')).toHaveLength(2);
  });

  it.each([
    { name: '--rules=<file>', args: ['s.jsonl', '--rules=r.yaml'] },
    { name: '--rules <file>', args: ['--rules', 'r.yaml', 's.jsonl'] },
  ])('takes options in either spelling: $name', async ({ args }) => {
    const result = await run(args, { 's.jsonl': trace, 'r.yaml': 'offline_power_w: 500\n' });
    expect(result.stdout).toContain('"reason":"npu-offline"');
  });

  it('names the line of an over-long line without echoing it', async () => {
    const huge = `{"x":"${'a'.repeat(17 * 1024 * 1024)}"}`;
    const result = await run(['s.jsonl'], { 's.jsonl': `${trace}\n${huge}\n` });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /^npu-fault replay: s\.jsonl:4: longer than \d+ bytes; not a snapshot line\n$/,
    );
  });

  it('quotes at most a short excerpt of a bad line', async () => {
    const result = await run(['s.jsonl'], { 's.jsonl': `{"schema": ${' '.repeat(80_000)}x\n` });
    expect(result.code).toBe(1);
    expect(result.stderr.length).toBeLessThan(300);
    expect(result.stderr).not.toContain('\r');
  });
});

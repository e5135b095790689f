import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { replay } from './replay.js';
import { memoryIO } from './testing.js';

const dir = new URL('../golden/', import.meta.url);
const cases = readdirSync(dir)
  .filter((name) => name.endsWith('.jsonl') && !name.endsWith('.expected.jsonl'))
  .map((name) => name.slice(0, -'.jsonl'.length))
  .sort();

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const io = memoryIO({}, { fallback: (path) => readFileSync(new URL(path, dir), 'utf8'), chunkSize: 4096 });
  const code = await replay(args, io);
  return { code, stdout: io.out, stderr: io.err };
}

describe('golden vectors (golden/*.jsonl through npu-fault replay)', () => {
  it('has the committed cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(18);
    for (const name of cases) expect(existsSync(new URL(`${name}.expected.jsonl`, dir))).toBe(true);
  });

  it.each(cases)('%s', async (name) => {
    const rules = existsSync(new URL(`${name}.rules.yaml`, dir)) ? ['--rules', `${name}.rules.yaml`] : [];
    const result = await run([`${name}.jsonl`, ...rules]);
    expect(result).toEqual({
      code: 0,
      stdout: readFileSync(new URL(`${name}.expected.jsonl`, dir), 'utf8'),
      stderr: '',
    });
    if (existsSync(new URL(`${name}.published.json`, dir))) {
      const published = await run([`${name}.jsonl`, ...rules, '--published']);
      expect(published.stdout).toBe(readFileSync(new URL(`${name}.published.json`, dir), 'utf8'));
    }
  });
});

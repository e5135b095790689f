import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { snapshotSchema } from '../contracts/index.js';
import { nodeNameFromFile, parse } from './parse.js';
import { memoryIO, type MemoryIO } from './testing.js';
import { REAL_FIXTURES_DIR, describeWithRealFixtures, examplePath } from '../test/fixtures.js';

const REAL = REAL_FIXTURES_DIR;

/** A CliIO over an in-memory file table; real fixtures and examples are read from disk by path. */
function fakeIO(files: Record<string, string> = {}): MemoryIO {
  return memoryIO(files, {
    fallback: (path) => (path.startsWith('/') ? readFileSync(path, 'utf8') : undefined),
  });
}

describe("npu-fault parse (the repository's own samples)", () => {
  it('prints one valid snapshot for an example hdc envelope, keeping its node', async () => {
    const io = fakeIO();
    expect(await parse(['--from', 'hdc', examplePath('snapshot-910b.json')], io)).toBe(0);
    expect(io.err).toBe('');
    const snapshot = snapshotSchema.parse(JSON.parse(io.out));
    expect(snapshot.node).toBe('ascend-train-07');
    expect(snapshot.payload.family === '910B' && snapshot.payload.npus).toHaveLength(8);
  });

  it("reads standard input for '-', naming it <stdin> in errors", async () => {
    const table = readFileSync(examplePath('snapshot-nvidia.json'), 'utf8');
    const io = fakeIO({ '-': table });
    expect(await parse(['--from=hdc', '--node=gpu-1', '-'], io)).toBe(0);
    expect(JSON.parse(io.out)).toMatchObject({ node: 'gpu-1' });
    const bad = fakeIO({ '-': '{"family":"nvidia","gpus":[{"index":-1}]}' });
    expect(await parse(['--from', 'hdc', '-'], bad)).toBe(1);
    expect(bad.err).toMatch(/^npu-fault parse: <stdin>: payload\.gpus\[0\]\.index: /);
  });
});

describe('npu-fault parse', () => {
  it('lets --node name the node of a whole hdc envelope, and reads a JSON file with a BOM', async () => {
    const envelope = JSON.stringify({
      schema: 'hdc.health/v1',
      node: 'from-the-file',
      seq: 3,
      collected_at: '2026-11-29T08:00:00Z',
      collector: 'hdc',
      payload: { family: 'nvidia', gpus: [{ index: 0, temperature_gpu: 40 }] },
    });
    const io = fakeIO({ 'snap.json': `\uFEFF${envelope}` });
    expect(await parse(['--from', 'hdc', '--node', 'gpu-7', 'snap.json'], io)).toBe(0);
    expect(JSON.parse(io.out)).toMatchObject({ node: 'gpu-7', seq: 3 });
    const kept = fakeIO({ 'snap.json': envelope });
    expect(await parse(['--from', 'hdc', 'snap.json'], kept)).toBe(0);
    expect(JSON.parse(kept.out)).toMatchObject({ node: 'from-the-file' });
  });

  it('uses --fields for a noheader CSV', async () => {
    const io = fakeIO({ 'gpus.csv': '0, NVIDIA A40, 61\n1, NVIDIA A40, 62\n' });
    expect(
      await parse(['--from', 'nvidia-smi', '--fields', 'index,name,temperature.gpu', 'gpus.csv'], io),
    ).toBe(0);
    expect((JSON.parse(io.out) as { payload: { gpus: unknown[] } }).payload.gpus).toHaveLength(2);
  });

  it.each([
    [[], /missing file to parse/],
    [['a'], /--from is required/],
    [['--from', 'dcgm', 'x'], /--from must be one of hdc, npu-smi, nvidia-smi, not 'dcgm'/],
    [['--from', 'hdc'], /missing file to parse/],
    [['--from', 'hdc', 'a', 'b'], /one file to parse expected, got 2/],
    [['--from', 'hdc', '--verbose', 'a'], /unknown option '--verbose'/],
    [['--from', 'hdc', '--node', 'Bad_Name', 'a'], /--node 'Bad_Name' is not a Kubernetes node name/],
    [['--from'], /--from needs a value/],
  ])('bad usage %j exits 2 with one line pointing at --help', async (args, message) => {
    const io = fakeIO();
    expect(await parse(args, io)).toBe(2);
    expect(io.err).toMatch(message);
    expect(io.err).toMatch(/^npu-fault parse: .*; run 'npu-fault parse --help'\n$/);
    expect(io.out).toBe('');
  });

  it('--help prints the help and exits 0', async () => {
    const io = fakeIO();
    expect(await parse(['--help'], io)).toBe(0);
    expect(io.out).toMatch(/file's base name/);
  });

  it('a schema violation names the field; a missing file is one line', async () => {
    const io = fakeIO({ 'x.json': '{"family":"nvidia","gpus":[{"index":-1}]}' });
    expect(await parse(['--from', 'hdc', 'x.json'], io)).toBe(1);
    expect(io.err).toMatch(/^npu-fault parse: x\.json: payload\.gpus\[0\]\.index: /);
    const missing = fakeIO();
    expect(await parse(['--from', 'hdc', 'nope.json'], missing)).toBe(1);
    expect(missing.err).toBe('npu-fault parse: nope.json: cannot read (ENOENT)\n');
  });
});

describeWithRealFixtures('npu-fault parse on real tool outputs', () => {
  it('prints one valid snapshot for an npu-smi table, node from the file name', async () => {
    const io = fakeIO();
    const code = await parse(['--from', 'npu-smi', `${REAL}npu-smi-910b4-8npu-1.txt`], io);
    expect(code).toBe(0);
    expect(io.err).toBe('');
    expect(io.out).toMatch(/^\{\n {2}"schema": "hdc.health\/v1",\n/);
    const snapshot = snapshotSchema.parse(JSON.parse(io.out));
    expect(snapshot).toMatchObject({
      node: 'npu-smi-910b4-8npu-1',
      seq: 1,
      boot_id: '',
      collector: 'npu-smi',
    });
    expect(snapshot.payload.family === '910B' && snapshot.payload.npus).toHaveLength(8);
  });

  it('takes --node and the output timestamp (nvidia-smi table date line)', async () => {
    const io = fakeIO();
    const code = await parse(
      [`${REAL}nvidia-smi-h200-table-1.txt`, '--from=nvidia-smi', '--node', 'gpu-7'],
      io,
    );
    expect(code).toBe(0);
    const snapshot = JSON.parse(io.out) as { node: string; collected_at: string; collector: string };
    expect(snapshot).toMatchObject({
      node: 'gpu-7',
      collected_at: '2026-07-03T22:11:09.000Z',
      collector: 'nvidia-smi',
    });
  });

  it.each([
    [
      'npu-smi',
      'npu-smi-error-8005-1.txt',
      /: line 2: npu-smi failed: dcmi module initialize failed\. ret is -8005$/,
    ],
    [
      'npu-smi',
      'npu-smi-t-board-910a-1.txt',
      /: line 1: this is `npu-smi info -t board` output, not a device snapshot/,
    ],
    ['nvidia-smi', 'nvidia-smi-q-h100-truncated-3.txt', /: line 91: the output ends inside the block/],
    ['hdc', 'mindx-deviceinfo-1.json', /MindCluster device-info ConfigMap/],
  ])(
    'bad input (--from %s %s) exits 1 with one line naming the file and line',
    async (from, name, message) => {
      const io = fakeIO();
      expect(await parse(['--from', from, REAL + name], io)).toBe(1);
      expect(io.err.startsWith(`npu-fault parse: ${REAL}${name}: `)).toBe(true);
      expect(io.err.trimEnd()).toMatch(message);
      expect(io.err.trimEnd()).not.toContain('\n');
      expect(io.out).toBe('');
    },
  );
});

describe('nodeNameFromFile', () => {
  it.each([
    ['/tmp/GPU_Node 7.txt', 'gpu-node-7'],
    ['dir/atlas900-node-042.json', 'atlas900-node-042'],
    ['__.txt', 'node'],
    ['C:\\logs\\Host.Name.log', 'host.name'],
  ])('%s -> %s', (path, name) => {
    expect(nodeNameFromFile(path)).toBe(name);
  });
});

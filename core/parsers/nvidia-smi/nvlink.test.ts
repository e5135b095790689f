import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { isPrintableText } from '../../../contracts/fields/index.js';
import { ParseError } from '../../errors.js';
import { ToolError } from '../common.js';
import { NVLINK_LIMITS, parseNvlinkStatus, type NvlinkGpu } from './nvlink.js';
import {
  NVLINK_A100,
  NVLINK_B200_ALL_INACTIVE,
  NVLINK_GB200,
  NVLINK_H100_PCIE_BRIDGED,
  NVLINK_NONE,
  NVLINK_V100_TWO_DOWN,
  nvlinkH200,
  nvlinkUuid,
} from './testing.js';

/** Each GPU's index and its links' states as one string (`a` active, `i` inactive, `?` unknown). */
const states = (gpus: readonly NvlinkGpu[]): Array<[number, string]> =>
  gpus.map((gpu) => [
    gpu.index,
    gpu.links.map((link) => ({ active: 'a', inactive: 'i', unknown: '?' })[link.state]).join(''),
  ]);

describe('parseNvlinkStatus on recorded outputs', () => {
  it('A100 SXM4: 12 links at 25 GB/s per GPU, with names and UUIDs', () => {
    const gpus = parseNvlinkStatus(NVLINK_A100);
    expect(states(gpus)).toEqual([
      [0, 'a'.repeat(12)],
      [1, 'a'.repeat(12)],
    ]);
    expect(gpus[0]).toMatchObject({
      name: 'NVIDIA A100-SXM4-80GB',
      uuid: 'GPU-ff8a40d4-abc6-08d1-f939-15848b5d4e05',
      note: null,
    });
    expect(gpus[0]?.links[11]).toEqual({ link: 11, state: 'active', speedGBps: 25 });
  });

  it('V100 with two links down, blank-indented, the UUID elided', () => {
    const [gpu] = parseNvlinkStatus(NVLINK_V100_TWO_DOWN);
    expect(gpu).toMatchObject({ index: 3, name: 'Tesla V100-SXM2-32GB', uuid: '...' });
    expect(states([gpu as NvlinkGpu])).toEqual([[3, 'aaaiai']]);
    expect(gpu?.links[0]?.speedGBps).toBe(25.781);
  });

  it('GB200 and H200: 18 links each', () => {
    expect(states(parseNvlinkStatus(NVLINK_GB200)).map(([, s]) => s)).toEqual([
      'a'.repeat(18),
      'a'.repeat(18),
    ]);
    const h200 = parseNvlinkStatus(nvlinkH200((gpu, link) => gpu === 5 && link === 9));
    expect(h200).toHaveLength(8);
    expect(h200[5]?.uuid).toBe(nvlinkUuid(5));
    expect(states(h200)[5]).toEqual([5, `${'a'.repeat(9)}i${'a'.repeat(8)}`]);
    expect(h200[0]?.links[0]?.speedGBps).toBe(26.562);
  });

  it('H100 PCIe bridged: the six links left out by design read inactive', () => {
    expect(states(parseNvlinkStatus(NVLINK_H100_PCIE_BRIDGED))).toEqual([
      [0, 'aaaaiiaaaaiiaaaaii'],
      [1, 'aaaaiiaaaaiiaaaaii'],
    ]);
  });

  it('B200 whose links are all down: NVML’s note instead of links', () => {
    expect(parseNvlinkStatus(NVLINK_B200_ALL_INACTIVE)).toEqual([
      { index: 2, name: 'NVIDIA B200', uuid: 'GPU-xxx', note: 'all-inactive', links: [] },
    ]);
  });

  it('GPUs without NVLink: the verdict after the UUID, or no links; an empty output is no GPU', () => {
    const gpus = parseNvlinkStatus(NVLINK_NONE);
    expect(gpus.map((gpu) => [gpu.index, gpu.note, gpu.links.length])).toEqual([
      [0, 'unsupported', 0],
      [1, null, 0],
    ]);
    expect(parseNvlinkStatus('')).toEqual([]);
    expect(parseNvlinkStatus('\n\n')).toEqual([]);
  });

  it('reads a link status it does not know as unknown, never as up', () => {
    const [gpu] = parseNvlinkStatus(
      'GPU 0: NVIDIA H100 (UUID: GPU-a)\n\t Link 0: N/A\n\t Link 1: <Unknown>\n\t Link 2:\n',
    );
    expect(gpu?.links.map((link) => link.state)).toEqual(['unknown', 'unknown', 'unknown']);
    const other = parseNvlinkStatus(
      'GPU 0: NVIDIA H100 (UUID: GPU-a)\nNVML: Unable to retrieve NVLink information: Unknown Error\n',
    );
    expect(other[0]?.note).toBe('unknown');
  });

  it('a header without a UUID is read with the rest as its name', () => {
    expect(parseNvlinkStatus('GPU 0: NVIDIA H100\nLink 0: 26.562 GB/s\n')).toEqual([
      {
        index: 0,
        name: 'NVIDIA H100',
        uuid: null,
        note: null,
        links: [{ link: 0, state: 'active', speedGBps: 26.562 }],
      },
    ]);
  });
});

describe('parseNvlinkStatus on truncated and hostile outputs', () => {
  it('an output cut anywhere loses only what was cut: every link kept is one that was printed', () => {
    const whole = nvlinkH200((gpu, link) => gpu === 2 && link === 4);
    const full = parseNvlinkStatus(whole);
    for (let cut = 0; cut <= whole.length; cut += 37) {
      let gpus: NvlinkGpu[];
      try {
        gpus = parseNvlinkStatus(whole.slice(0, cut));
      } catch (error) {
        // A cut inside `Link 1` or a UUID is unreadable, never misread.
        expect(error).toBeInstanceOf(ParseError);
        continue;
      }
      for (const gpu of gpus)
        for (const link of gpu.links) {
          const printed = full[gpu.index]?.links[link.link];
          if (link.state !== 'unknown') expect(link.state).toBe(printed?.state);
        }
    }
  });

  it.each<[string, string, RegExp]>([
    ['a link before any GPU', '\t Link 0: 25 GB/s\n', /line 1: expected a GPU line/],
    [
      'a line of no known kind',
      'GPU 0: NVIDIA H100 (UUID: GPU-a)\n\t Link 0: 25 GB/s\nrm -rf /\n',
      /line 3: GPU 0: expected a link line/,
    ],
    ['a GPU listed twice', 'GPU 0: A (UUID: GPU-a)\nGPU 0: A (UUID: GPU-a)\n', /line 2: GPU 0 listed twice/],
    [
      'a link listed twice',
      'GPU 0: A (UUID: GPU-a)\nLink 1: 25 GB/s\nLink 1: <inactive>\n',
      /line 3: GPU 0: link 1 listed twice/,
    ],
    ['a UUID not closed', 'GPU 0: A (UUID: GPU-a\n', /line 1: GPU 0: unreadable UUID/],
    ['a UUID with blanks', 'GPU 0: A (UUID: GPU a)\n', /unreadable UUID/],
    ['HTML', '<html><body>500</body></html>\n', /line 1: expected a GPU line, found '<html>/],
  ])('%s is a ParseError naming the line', (_name, text, message) => {
    expect(() => parseNvlinkStatus(text)).toThrow(ParseError);
    expect(() => parseNvlinkStatus(text)).toThrow(message);
  });

  it('more GPUs or links than any system has is refused', () => {
    const gpus = Array.from(
      { length: NVLINK_LIMITS.gpus + 1 },
      (_, i) => `GPU ${i}: X (UUID: GPU-${i})`,
    ).join('\n');
    expect(() => parseNvlinkStatus(gpus)).toThrow(/more than 256 GPUs/);
    const many = [
      'GPU 0: X (UUID: GPU-a)',
      ...Array.from({ length: 65 }, (_, i) => `Link ${i}: 25 GB/s`),
    ].join('\n');
    expect(() => parseNvlinkStatus(many)).toThrow(/more than 64 links/);
  });

  it('nvidia-smi’s own failures are ToolErrors', () => {
    expect(() => parseNvlinkStatus('Failed to initialize NVML: Driver/library version mismatch\n')).toThrow(
      ToolError,
    );
    expect(() =>
      parseNvlinkStatus("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"),
    ).toThrow(ToolError);
  });

  it('a hostile name is kept printable and bounded', () => {
    const [gpu] = parseNvlinkStatus(`GPU 0: \u001b[2J${'x'.repeat(5000)} (UUID: GPU-a)\n`);
    expect(gpu?.name.length).toBeLessThanOrEqual(97);
    expect(isPrintableText(gpu?.name ?? '\u0000')).toBe(true);
  });

  it('never throws anything but ParseError or ToolError, whatever it reads', () => {
    const unit = fc.constantFrom(
      'GPU 0: A (UUID: GPU-a)',
      '\t Link 1: 25 GB/s',
      'Link 2: <inactive>',
      'NVML: x',
      ' ',
      '(',
      'GPU 1: ',
      ':',
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(unit, fc.string({ maxLength: 20 })), { maxLength: 30 }), (parts) => {
        try {
          parseNvlinkStatus(parts.join('\n'));
        } catch (error) {
          expect(error instanceof ParseError || error instanceof ToolError).toBe(true);
        }
      }),
    );
  });
});

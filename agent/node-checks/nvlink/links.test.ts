import { describe, expect, it } from '@jest/globals';
import { parseNvlinkStatus } from '../../../core/parsers/index.js';
import {
  NVLINK_A100,
  NVLINK_B200_ALL_INACTIVE,
  NVLINK_H100_PCIE_BRIDGED,
  NVLINK_NONE,
  nvlinkH200,
  nvlinkUuid,
} from '../../../core/parsers/nvidia-smi/testing.js';
import { NvlinkMemory, describeDown, findDownLinks, gpuKey, type DownLinks } from './links.js';

/** `[gpu, links, allLinks, why]` of each finding, for compact comparisons. */
const brief = (down: readonly DownLinks[]): Array<[number, number[], boolean, string]> =>
  down.map((found) => [found.index, found.links, found.allLinks, found.why]);

/** Reads `texts` in turn with one memory; the findings of the last read. */
function reads(texts: readonly string[], comparePeers = true): DownLinks[] {
  const memory = new NvlinkMemory();
  let last: DownLinks[] = [];
  for (const text of texts) last = findDownLinks(parseNvlinkStatus(text), memory, comparePeers);
  return last;
}

/** An H200 node with `down` = [gpu, link] pairs inactive. */
const h200 = (...down: Array<[number, number]>): string =>
  nvlinkH200((gpu, link) => down.some(([g, l]) => g === gpu && l === link));

describe('findDownLinks: a link that was up and is inactive now', () => {
  it('finds it, on its GPU, whether or not the peers are compared', () => {
    expect(brief(reads([h200(), h200([5, 9])], false))).toEqual([[5, [9], false, 'was-up']]);
    expect(brief(reads([h200(), h200([5, 9], [5, 2])], true))).toEqual([[5, [2, 9], false, 'was-up']]);
  });

  it('tells the links seen going down from those only the peers have up, on the same GPU', () => {
    expect(brief(reads([h200([7, 1]), h200([7, 1], [7, 0])]))).toEqual([
      [7, [0], false, 'was-up'],
      [7, [1], false, 'peers-up'],
    ]);
    expect(brief(reads([h200([7, 1]), h200([7, 1], [7, 0])], false))).toEqual([[7, [0], false, 'was-up']]);
  });

  it('forgets the problem once the link is up again, and finds it again when it drops again', () => {
    const memory = new NvlinkMemory();
    const read = (text: string): DownLinks[] => findDownLinks(parseNvlinkStatus(text), memory, false);
    read(h200());
    expect(read(h200([1, 0]))).toHaveLength(1);
    expect(read(h200())).toEqual([]);
    expect(brief(read(h200([1, 0])))).toEqual([[1, [0], false, 'was-up']]);
  });

  it('NVML’s "all links are inActive" for a GPU whose links were up is all its links down', () => {
    const before = 'GPU 2: NVIDIA B200 (UUID: GPU-xxx)\n\t Link 0: 50 GB/s\n\t Link 1: 50 GB/s\n';
    expect(brief(reads([before, NVLINK_B200_ALL_INACTIVE], false))).toEqual([[2, [], true, 'was-up']]);
  });

  it('knows a GPU by its UUID, so a renumbered GPU keeps what was seen of it', () => {
    const renumbered = nvlinkH200((gpu, link) => gpu === 0 && link === 3).replace(
      `GPU 0: NVIDIA H200 (UUID: ${nvlinkUuid(0)})`,
      `GPU 9: NVIDIA H200 (UUID: ${nvlinkUuid(0)})`,
    );
    expect(brief(reads([h200(), renumbered], false))).toEqual([[9, [3], false, 'was-up']]);
    expect(gpuKey({ index: 4, uuid: null })).toBe('#4');
  });
});

describe('findDownLinks: a link down that every other GPU has up', () => {
  it('finds it on the first read (a link down before the agent started)', () => {
    expect(brief(reads([h200([3, 17])]))).toEqual([[3, [17], false, 'peers-up']]);
    expect(reads([h200([3, 17])], false)).toEqual([]);
  });

  it('does not when another GPU has that link down too (bridged PCIe cards leave links unwired)', () => {
    expect(reads([NVLINK_H100_PCIE_BRIDGED])).toEqual([]);
    expect(reads([h200([3, 17], [4, 17])])).toEqual([]);
  });

  it('needs two peers at least: with one, a pair’s shared link is down at both ends', () => {
    const pair = NVLINK_A100.replace(/(GPU 1:[\s\S]*)Link 11: 25 GB\/s/, '$1Link 11: <inactive>');
    expect(parseNvlinkStatus(pair)[1]?.links[11]?.state).toBe('inactive');
    expect(reads([pair])).toEqual([]);
  });

  it('a GPU whose links NVML calls all inactive, beside GPUs with links up', () => {
    const node = `${nvlinkH200().split('GPU 2:')[0] ?? ''}${NVLINK_B200_ALL_INACTIVE}`;
    expect(brief(reads([node]))).toEqual([[2, [], true, 'peers-up']]);
  });

  it('nothing on a node whose GPUs are all without links up (no NVLink, or no bridges)', () => {
    const none = [0, 1, 2]
      .map(
        (gpu) =>
          `GPU ${gpu}: NVIDIA L40S (UUID: GPU-${gpu})\nNVML: Unable to retrieve NVLink information as all links are inActive`,
      )
      .join('\n');
    expect(reads([none])).toEqual([]);
    expect(reads([NVLINK_NONE, NVLINK_NONE])).toEqual([]);
    expect(reads([''])).toEqual([]);
  });
});

describe('findDownLinks: what a read does not say is not down', () => {
  it('a link whose state is unknown, or a GPU NVML says nothing certain about', () => {
    const unknown = h200().replace(/(GPU 4:[\s\S]*?)Link 6: 26\.562 GB\/s/, '$1Link 6: N/A');
    expect(parseNvlinkStatus(unknown)[4]?.links[6]?.state).toBe('unknown');
    expect(reads([h200(), unknown])).toEqual([]);
    const noted = h200().replace(
      /(GPU 4: [^\n]*\n)(\t Link[^\n]*\n)+/,
      '$1NVML: Unable to retrieve NVLink information: Unknown Error\n',
    );
    expect(parseNvlinkStatus(noted)[4]).toMatchObject({ note: 'unknown', links: [] });
    expect(reads([h200(), noted])).toEqual([]);
  });

  it('a cut output: the links not listed are not down', () => {
    const whole = h200();
    const cut = whole.slice(0, whole.indexOf('\t Link 9', whole.indexOf('GPU 5:')));
    expect(parseNvlinkStatus(cut).map((gpu) => gpu.links.length)).toEqual([18, 18, 18, 18, 18, 9]);
    expect(reads([whole, cut])).toEqual([]);
  });
});

describe('NvlinkMemory and describeDown', () => {
  it('keeps at most maxGpus GPUs, the oldest forgotten first', () => {
    const memory = new NvlinkMemory(2);
    memory.remember('a', [1]);
    memory.remember('b', [1]);
    memory.remember('c', [1]);
    expect([...memory.get('a')]).toEqual([]);
    expect([...memory.get('c')]).toEqual([1]);
  });

  it('says which links and why', () => {
    expect(describeDown({ index: 3, uuid: null, links: [5], allLinks: false, why: 'was-up' }, 7)).toBe(
      'GPU 3: link 5 down (was up)',
    );
    expect(describeDown({ index: 3, uuid: null, links: [5, 9], allLinks: false, why: 'peers-up' }, 7)).toBe(
      'GPU 3: links 5, 9 down (7 other GPUs have them up)',
    );
    expect(describeDown({ index: 2, uuid: null, links: [], allLinks: true, why: 'peers-up' }, 7)).toBe(
      'GPU 2: all links down (7 other GPUs have theirs up)',
    );
    const many = Array.from({ length: 12 }, (_, i) => i);
    expect(describeDown({ index: 0, uuid: null, links: many, allLinks: false, why: 'was-up' }, 7)).toBe(
      'GPU 0: links 0, 1, 2, 3, 4, 5, 6, 7 +4 more down (were up)',
    );
  });
});

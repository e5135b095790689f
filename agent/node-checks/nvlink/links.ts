/**
 * Which NVLinks are down, from one `nvidia-smi nvlink --status` read and what earlier reads
 * showed. Pure: the memory of links seen up is the caller's (NvlinkMemory), passed in.
 *
 * A link is down when the read says it is inactive (`<inactive>`, or NVML's "all links are
 * inActive" for the GPU) and either
 * - it was seen active before, by this agent (the transition: a link that went down), or
 * - with `comparePeers`, every other GPU that lists the same link (two at least) has it
 *   active (a link down before the agent started: on an NVSwitch board every GPU has the
 *   same links up). A GPU whose links NVML calls all inactive is down by its peers when two
 *   other GPUs at least list links and each has some up.
 *
 * Not down: a link never seen up whose peers have it down too (bridged PCIe cards leave some
 * links unwired by design, and a board without NVLink lists every link inactive); a GPU with
 * no links at all, or that NVML says has no NVLink; a link whose state the read does not say
 * (unknown, or not listed: a cut output says nothing about what was cut).
 */
import type { NvlinkGpu } from '../../../core/parsers/index.js';

/** Links of one GPU found down for one reason (a GPU can have one finding of each). */
export interface DownLinks {
  /** nvidia-smi's index of the GPU. */
  index: number;
  uuid: string | null;
  /** The link numbers down, ascending; empty when `allLinks`. */
  links: number[];
  /** NVML says all the GPU's links are inactive (no numbers listed). */
  allLinks: boolean;
  /** `was-up`: this agent saw the links up before; `peers-up`: the other GPUs have them up. */
  why: 'was-up' | 'peers-up';
}

/** Links seen active, per GPU (UUID, or `#index` without one); bounded. */
export class NvlinkMemory {
  readonly #seen = new Map<string, Set<number>>();
  constructor(readonly maxGpus = 512) {}

  /** The links of `key` seen active so far. */
  get(key: string): ReadonlySet<number> {
    return this.#seen.get(key) ?? new Set();
  }

  /** Remembers that `key`'s `links` were active (a GPU never seen before pushes out the oldest past maxGpus). */
  remember(key: string, links: readonly number[]): void {
    if (links.length === 0) return;
    let seen = this.#seen.get(key);
    if (!seen) {
      if (this.#seen.size >= this.maxGpus) {
        const oldest = this.#seen.keys().next();
        if (!oldest.done) this.#seen.delete(oldest.value);
      }
      seen = new Set();
      this.#seen.set(key, seen);
    }
    for (const link of links) seen.add(link);
  }
}

/** What identifies a GPU across reads. */
export function gpuKey(gpu: Pick<NvlinkGpu, 'index' | 'uuid'>): string {
  return gpu.uuid ?? `#${gpu.index}`;
}

const activeLinks = (gpu: NvlinkGpu): number[] =>
  gpu.links.filter((link) => link.state === 'active').map((link) => link.link);

/** True when two other GPUs at least list `link` and every one of them has it active. */
function peersHaveUp(gpu: NvlinkGpu, link: number, gpus: readonly NvlinkGpu[]): boolean {
  let listing = 0;
  for (const peer of gpus) {
    if (peer === gpu) continue;
    const state = peer.links.find((candidate) => candidate.link === link)?.state;
    if (state === undefined) continue;
    if (state !== 'active') return false;
    listing++;
  }
  return listing >= 2;
}

/** True when two other GPUs at least list links and each has some up. */
function peersHaveAnyUp(gpu: NvlinkGpu, gpus: readonly NvlinkGpu[]): boolean {
  const listing = gpus.filter((peer) => peer !== gpu && peer.links.length > 0);
  return listing.length >= 2 && listing.every((peer) => activeLinks(peer).length > 0);
}

/** The down links of one GPU, by the rules of the file comment: one finding per reason. */
function downOf(
  gpu: NvlinkGpu,
  gpus: readonly NvlinkGpu[],
  seen: ReadonlySet<number>,
  comparePeers: boolean,
): DownLinks[] {
  const base = { index: gpu.index, uuid: gpu.uuid };
  if (gpu.note === 'all-inactive' && gpu.links.length === 0) {
    if (seen.size > 0) return [{ ...base, links: [], allLinks: true, why: 'was-up' }];
    const byPeers = comparePeers && peersHaveAnyUp(gpu, gpus);
    return byPeers ? [{ ...base, links: [], allLinks: true, why: 'peers-up' }] : [];
  }
  const inactive = gpu.links
    .filter((link) => link.state === 'inactive')
    .map((link) => link.link)
    .sort((a, b) => a - b);
  const wasUp = inactive.filter((link) => seen.has(link));
  const peersUp = comparePeers
    ? inactive.filter((link) => !seen.has(link) && peersHaveUp(gpu, link, gpus))
    : [];
  return [
    ...(wasUp.length > 0 ? [{ ...base, links: wasUp, allLinks: false, why: 'was-up' as const }] : []),
    ...(peersUp.length > 0 ? [{ ...base, links: peersUp, allLinks: false, why: 'peers-up' as const }] : []),
  ];
}

/** How many other GPUs list links: the peers a finding compares with. */
export function listingPeers(down: Pick<DownLinks, 'index'>, gpus: readonly NvlinkGpu[]): number {
  return gpus.filter((gpu) => gpu.index !== down.index && gpu.links.length > 0).length;
}

/**
 * The GPUs with links down in `gpus` (one read), then remembers the links this read shows
 * active. Linear in the links read, times the GPUs for the peer comparison (at most 256 × 64).
 */
export function findDownLinks(
  gpus: readonly NvlinkGpu[],
  memory: NvlinkMemory,
  comparePeers: boolean,
): DownLinks[] {
  const down: DownLinks[] = [];
  for (const gpu of gpus) {
    // NVML's other notes say nothing about the links: neither down nor up this round.
    if (gpu.note === 'unknown' || gpu.note === 'unsupported') continue;
    down.push(...downOf(gpu, gpus, memory.get(gpuKey(gpu)), comparePeers));
  }
  for (const gpu of gpus) memory.remember(gpuKey(gpu), activeLinks(gpu));
  return down;
}

/** `GPU 3: links 5, 9 down (were up)`, `GPU 4: all links down (2 other GPUs have theirs up)`. */
export function describeDown(down: DownLinks, peers: number): string {
  const which = down.allLinks
    ? 'all links'
    : `link${down.links.length === 1 ? '' : 's'} ${down.links.slice(0, 8).join(', ')}${down.links.length > 8 ? ` +${down.links.length - 8} more` : ''}`;
  const why =
    down.why === 'was-up'
      ? down.allLinks
        ? 'were up'
        : `${down.links.length === 1 ? 'was' : 'were'} up`
      : `${peers} other GPUs have ${down.allLinks ? 'theirs' : down.links.length === 1 ? 'it' : 'them'} up`;
  return `GPU ${down.index}: ${which} down (${why})`;
}

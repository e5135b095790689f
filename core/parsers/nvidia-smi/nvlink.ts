/**
 * `nvidia-smi nvlink --status` (`-s`): each GPU's NVLinks and whether each is up. The layout,
 * the same from the R418 drivers (V100) to R570 (B200, GB200):
 *
 * ```
 * GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-2b9f…)
 * 	 Link 0: 26.562 GB/s
 * 	 Link 1: <inactive>
 * ```
 *
 * A link with a bandwidth is active; `<inactive>` is down; anything else (`N/A`, a status a
 * later driver adds) is unknown, never taken as up or down. A GPU whose links are all down may
 * instead say so in one line of NVML (`NVML: Unable to retrieve NVLink information as all
 * links are inActive`, on its own line or after the UUID), and one without NVLink says that
 * (`Device does not have or support Nvlink`) or lists nothing at all. A system with no NVLink
 * may print nothing.
 *
 * Garbage (a link before any GPU, a line of no known kind, a GPU or link listed twice, more
 * GPUs or links than any system has) is a ParseError naming the line; nvidia-smi's own failure
 * messages a ToolError. A truncated output loses only what was cut off: a GPU with fewer links
 * listed says nothing about the rest. Linear in the input; every regular expression passes
 * the backtracking audit (linear-time.test.ts).
 */
import { ParseError, excerpt, quoted } from '../../errors.js';
import { splitLines } from '../common.js';
import { checkNvidiaSmiToolError } from './tool-error.js';

/** What one link's line says: up (a bandwidth), down (`<inactive>`), or something else. */
export type NvlinkLinkState = 'active' | 'inactive' | 'unknown';

/** One NVLink of a GPU. */
export interface NvlinkLink {
  /** The link's number on its GPU (`Link 3`). */
  link: number;
  state: NvlinkLinkState;
  /** The bandwidth an active link shows, GB/s; null otherwise. */
  speedGBps: number | null;
}

/**
 * What NVML said about a GPU's NVLink as a whole instead of listing links: all of them are
 * inactive, the GPU has none, or another NVML message (the state is unknown).
 */
export type NvlinkNote = 'all-inactive' | 'unsupported' | 'unknown';

/** One GPU of the output. */
export interface NvlinkGpu {
  /** nvidia-smi's index. */
  index: number;
  /** The product name, printable, at most 96 characters. */
  name: string;
  /** `GPU-…` (or `MIG-…`) when the header names one; null otherwise. */
  uuid: string | null;
  /** What NVML said instead of links; null when it said nothing. */
  note: NvlinkNote | null;
  /** The links listed, in output order. */
  links: NvlinkLink[];
}

/** More than any system has (the largest: 72 GPUs of an NVL72 rack, 18 links each). */
export const NVLINK_LIMITS = { gpus: 256, linksPerGpu: 64 } as const;

/** `GPU 0: ` */
const GPU_HEADER = /^GPU (\d{1,4}): /;
/** `Link 12: ` (the line trimmed), or `Link 12:` with nothing after it. */
const LINK_LINE = /^Link (\d{1,3}):(?: |$)/;
/** `26.562 GB/s`, `25 GB/s`. */
const SPEED = /^(\d{1,5}(?:\.\d{1,6})?) GB\/s$/;
/** The UUID between `(UUID: ` and `)`. */
const UUID = /^[A-Za-z0-9.-]{1,96}$/;

const UUID_OPEN = ' (UUID: ';

/** What a note of NVML (or the text after a header's UUID) says. */
function noteOf(text: string): NvlinkNote {
  const lower = text.toLowerCase();
  if (lower.includes('all links are inactive')) return 'all-inactive';
  if (lower.includes('not have or support nvlink') || lower.includes('not supported')) return 'unsupported';
  return 'unknown';
}

/** A GPU header line (`GPU 0: name (UUID: GPU-…)[ note]`), or null when the line is not one. */
function readHeader(line: string, number: number): NvlinkGpu | null {
  const head = GPU_HEADER.exec(line);
  if (!head) return null;
  const rest = line.slice(head[0].length);
  const open = rest.indexOf(UUID_OPEN);
  const gpu: NvlinkGpu = { index: Number(head[1]), name: '', uuid: null, note: null, links: [] };
  if (open < 0) return { ...gpu, name: excerpt(rest.trim(), 96) };
  const close = rest.indexOf(')', open);
  const uuid = close < 0 ? '' : rest.slice(open + UUID_OPEN.length, close);
  if (!UUID.test(uuid)) throw new ParseError(`GPU ${gpu.index}: unreadable UUID in ${quoted(line)}`, number);
  const trailing = rest.slice(close + 1).trim();
  return {
    ...gpu,
    name: excerpt(rest.slice(0, open).trim(), 96),
    uuid,
    note: trailing === '' ? null : noteOf(trailing),
  };
}

/** A link line's link, or null when the line is not one. */
function readLink(line: string): NvlinkLink | null {
  const match = LINK_LINE.exec(line);
  if (!match) return null;
  const value = line.slice(match[0].length).trim();
  const speed = SPEED.exec(value);
  if (speed) return { link: Number(match[1]), state: 'active', speedGBps: Number(speed[1]) };
  return { link: Number(match[1]), state: value === '<inactive>' ? 'inactive' : 'unknown', speedGBps: null };
}

/** Adds a link to its GPU: at most once per number, at most NVLINK_LIMITS.linksPerGpu. */
function addLink(gpu: NvlinkGpu, link: NvlinkLink, number: number): void {
  if (gpu.links.some((known) => known.link === link.link))
    throw new ParseError(`GPU ${gpu.index}: link ${link.link} listed twice`, number);
  if (gpu.links.length >= NVLINK_LIMITS.linksPerGpu)
    throw new ParseError(`GPU ${gpu.index}: more than ${NVLINK_LIMITS.linksPerGpu} links`, number);
  gpu.links.push(link);
}

/**
 * Reads `nvidia-smi nvlink --status`: every GPU with its links, in output order; empty for
 * an empty output. Throws ToolError for nvidia-smi's failure messages and ParseError (with the
 * line) for anything it cannot read; see the file comment.
 */
export function parseNvlinkStatus(text: string): NvlinkGpu[] {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const gpus: NvlinkGpu[] = [];
  const seen = new Set<number>();
  let current: NvlinkGpu | null = null;
  for (const [at, raw] of lines.entries()) {
    const number = at + 1;
    const line = raw.trim();
    if (line === '') continue;
    const header = readHeader(line, number);
    if (header !== null) {
      if (seen.has(header.index)) throw new ParseError(`GPU ${header.index} listed twice`, number);
      if (gpus.length >= NVLINK_LIMITS.gpus)
        throw new ParseError(`more than ${NVLINK_LIMITS.gpus} GPUs`, number);
      seen.add(header.index);
      gpus.push(header);
      current = header;
      continue;
    }
    if (current === null) throw new ParseError(`expected a GPU line, found ${quoted(line)}`, number);
    const link = readLink(line);
    if (link !== null) addLink(current, link, number);
    else if (line.startsWith('NVML: ')) current.note = noteOf(line);
    else throw new ParseError(`GPU ${current.index}: expected a link line, found ${quoted(line)}`, number);
  }
  return gpus;
}

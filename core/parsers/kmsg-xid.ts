/**
 * NVIDIA XID events from the kernel log (`dmesg`, `dmesg -T`, `dmesg --time-format=iso`,
 * journal/kmsg), and their attachment to an nvidia payload's GPUs by bus id. The GPU tools
 * do not print XIDs; the kernel log is where a GPU that fell off the bus leaves its trace.
 */
import type { Gpu } from '../../contracts/index.js';
import { ctimeToIso, normaliseBusId, splitLines } from './common.js';

/** One XID line of the kernel log (where it was seen and on which GPU); the snapshot carries only its {xid, at}. */
export interface KernelXidEvent {
  /** Normalised PCI address of the GPU (`0000:91:00.0`). */
  bus_id: string;
  xid: number;
  /** ISO time when the line carries an absolute timestamp; null for uptime stamps or none. */
  at: string | null;
  /** 1-based line number in the log. */
  line: number;
  /** The log line as printed (trailing blanks removed). */
  text: string;
  /** True when no Xid line was printed and the event was inferred from "fallen off the bus" (as 79). */
  inferred?: true;
}

/** `NVRM: Xid (PCI:0000:91:00): 79, …`: the bus and the XID number. */
export const XID_LINE =
  /NVRM: Xid \(PCI:([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d+)\b/;
/** `The NVIDIA GPU 0000:b3:00.0 ... fallen off the bus` (multi-line) or `GPU 0000:91:00.0: GPU has fallen off the bus.` */
export const GPU_ADDRESS =
  /NVRM: (?:The NVIDIA )?GPU (?:at PCI:)?([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)/;
/** The NVIDIA driver's words for a GPU that left the PCIe bus. */
export const FALLEN = /fallen off the bus/i;

/** XID of a GPU that fell off the bus; used for the inferred events. */
export const XID_FALLEN_OFF_BUS = 79;

/** `2024-11-15T12:02:03,470068+00:00`: date and time, optional fraction and zone. */
const ISO_TIME = /(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[,.](\d+))?(Z|[+-]\d{2}:?\d{2})?/;

/**
 * `kern  :warn  : ` (dmesg -x): two words, each followed by blanks and a colon, then blanks.
 * Checked by splitting at the colons: a pattern such as `\S+\s*:\S+\s*:` backtracks
 * quadratically on a long run of colons and letters.
 */
function isFacilityPrefix(prefix: string): boolean {
  const parts = prefix.split(':');
  if (parts.length !== 3 || (parts[2] ?? '').trim() !== '') return false;
  const [facility = '', level = ''] = parts;
  return /^\S+\s*$/.test(facility) && /^\S+\s*$/.test(level);
}

/**
 * The absolute time at the start of a kernel-log line: `[Sun Feb 23 16:24:18 2025]` (dmesg -T
 * and --ctime, read as UTC) or `2024-11-15T12:02:03,470068+00:00` (--time-format=iso, possibly
 * after a `kern  :warn  : ` facility prefix). Uptime stamps (`[ 123.456]`) give null.
 */
export function lineTimestamp(line: string): string | null {
  const ctime = /^\s*\[([A-Z][a-z]{2} [A-Z][a-z]{2}\s+\d{1,2} \d{2}:\d{2}:\d{2} \d{4})\]/.exec(line);
  if (ctime?.[1]) return ctimeToIso(ctime[1]);
  const iso = ISO_TIME.exec(line);
  // The ISO time starts the line, or follows a `kern  :warn  : ` facility prefix.
  if (!iso?.[1] || (iso.index > 0 && !isFacilityPrefix(line.slice(0, iso.index)))) return null;
  const fraction = iso[2] ? `.${iso[2].slice(0, 3)}` : '';
  const date = new Date(`${iso[1]}${fraction}${iso[3] ?? 'Z'}`);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** Finds the GPU address for a "fallen off the bus" line: on it, or up to 3 lines above (the open driver wraps it). */
function fallenAddress(lines: readonly string[], index: number): { bus: string; line: number } | null {
  for (let i = index; i >= Math.max(0, index - 3); i--) {
    const match = GPU_ADDRESS.exec(lines[i] ?? '');
    const bus = match?.[1] ? normaliseBusId(match[1]) : null;
    if (bus !== null) return { bus, line: i };
  }
  return null;
}

/**
 * Extracts XID events from kernel-log text, in log order. A "fallen off the bus" message with
 * no Xid 79 line for that GPU before it gives an event with xid 79 and `inferred: true`.
 * Lines that are not NVIDIA driver messages are ignored, so a whole dmesg can be passed.
 */
export function parseXidEvents(text: string): KernelXidEvent[] {
  const lines = splitLines(text);
  const events: KernelXidEvent[] = [];
  // Buses with an Xid 79 already, so that each echo of "fallen off the bus" is one lookup.
  const fallen = new Set<string>();
  for (const [index, line] of lines.entries()) {
    const xid = XID_LINE.exec(line);
    const bus = xid?.[1] ? normaliseBusId(xid[1]) : null;
    if (xid && bus !== null) {
      events.push({ bus_id: bus, xid: Number(xid[2]), at: lineTimestamp(line), line: index + 1, text: line });
      if (Number(xid[2]) === XID_FALLEN_OFF_BUS) fallen.add(bus);
      continue;
    }
    if (!FALLEN.test(line)) continue;
    const address = fallenAddress(lines, index);
    if (address === null) continue;
    if (fallen.has(address.bus)) continue;
    fallen.add(address.bus);
    const first = lines[address.line] ?? line;
    events.push({
      bus_id: address.bus,
      xid: XID_FALLEN_OFF_BUS,
      at: lineTimestamp(first),
      line: address.line + 1,
      text: first,
      inferred: true,
    });
  }
  return events;
}

/** The result of attaching events: the GPUs with their events, and events no GPU matched. */
export interface AttachedXids<G extends Pick<Gpu, 'bus_id' | 'xid_events'>> {
  gpus: G[];
  /** Events whose bus id no GPU carries (a GPU the tool no longer lists, or another host's log). */
  unmatched: KernelXidEvent[];
}

/**
 * Appends each event to the GPU with the same bus id, as `{xid, at}`, keeping the GPUs'
 * order and earlier events. Returns new GPU objects; the input is not changed.
 */
export function attachXidEvents<G extends Pick<Gpu, 'bus_id' | 'xid_events'>>(
  gpus: readonly G[],
  events: readonly KernelXidEvent[],
): AttachedXids<G> {
  const byBus = new Map<string, G>();
  const out = gpus.map((gpu) => ({ ...gpu, xid_events: [...gpu.xid_events] }));
  for (const gpu of out) {
    const bus = gpu.bus_id === null ? null : normaliseBusId(gpu.bus_id);
    if (bus !== null) byBus.set(bus, gpu);
  }
  const unmatched: KernelXidEvent[] = [];
  for (const event of events) {
    const gpu = byBus.get(event.bus_id);
    if (gpu) gpu.xid_events.push({ xid: event.xid, at: event.at });
    else unmatched.push(event);
  }
  return { gpus: out, unmatched };
}

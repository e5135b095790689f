/**
 * NVIDIA XID events from kernel-log text (`dmesg` in any time format, `dmesg -x`, syslog and
 * journal lines, /dev/kmsg records: what `npu-fault parse` is given), and their attachment to
 * an nvidia payload's GPUs by bus id. The GPU tools do not print XIDs; the kernel log is where
 * a GPU that fell off the bus leaves its trace. The lines are read by KernelLogScanner
 * (kmsg-events.ts), so a file counts exactly the messages the agent's follower counts: the
 * kernel's own, each starting with the driver's prefix (see the rules there).
 */
import type { Gpu } from '../../contracts/index.js';
import { normaliseBusId, splitLines } from './common.js';
import { KernelLogScanner } from './kmsg-events.js';

export { XID_FALLEN_OFF_BUS } from './kmsg-events.js';

/** One XID line of the kernel log (where it was seen and on which GPU); the snapshot carries only its {xid, at}. */
export interface KernelXidEvent {
  /** Normalised PCI address of the GPU (`0000:91:00.0`). */
  bus_id: string;
  xid: number;
  /** ISO time when the line carries an absolute timestamp; null for uptime stamps or none. */
  at: string | null;
  /** 1-based number of the line that completes the event (for a wrapped message, its last). */
  line: number;
  /** That line as printed (trailing blanks removed). */
  text: string;
  /** True when no Xid line was printed and the event was inferred from "fallen off the bus" (as 79). */
  inferred?: true;
}

/**
 * Extracts XID events from kernel-log text, in log order. A "fallen off the bus" message with
 * no Xid 79 line for that GPU before it gives an event with xid 79 and `inferred: true`.
 * Lines that are not the NVIDIA driver's messages are ignored, so a whole dmesg can be passed.
 */
export function parseXidEvents(text: string): KernelXidEvent[] {
  const scanner = new KernelLogScanner();
  const events: KernelXidEvent[] = [];
  for (const [index, line] of splitLines(text).entries()) {
    for (const event of scanner.push(line)) {
      if (event.kind !== 'xid' || event.busId === null || event.xid === undefined) continue;
      events.push({
        bus_id: event.busId,
        xid: event.xid,
        at: event.at,
        line: index + 1,
        text: line,
        ...(event.inferred ? { inferred: true as const } : {}),
      });
    }
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

/**
 * Device events in the kernel log, read one line at a time as the agent follows it: NVIDIA
 * XIDs, PCIe AER errors, and devices leaving the bus. The messages recognised (formats of
 * Linux 2.6 to 6.x and of the NVIDIA drivers):
 *
 * - `NVRM: Xid (PCI:0000:91:00): 79, …`: an XID (kmsg-xid.ts's pattern). Xid 79 also means
 *   the GPU is gone, so it is reported as removed too.
 * - `NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.`, `NVRM: GPU at PCI:…`, and the open
 *   driver's wrapped `NVRM: The NVIDIA GPU 0000:b3:00.0` / `… fallen off the bus …`: removed.
 *   With no Xid 79 before it for that GPU it also gives xid 79, as parseXidEvents infers; the
 *   driver's later repeats give nothing.
 * - `pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0` (and
 *   `Multiple …`, `Correctable error message received from …`, the old `received: id=3b00`):
 *   aer, on the device that sent the error message.
 * - `nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=…`: aer, on
 *   the device the line names. The `device [10de:2330] error status/mask=…` and `[14] CmpltTO`
 *   lines that follow only detail it and give no event of their own.
 * - `pcieport 0000:00:03.0: DPC: containment event, status:0x1f01 source:0x3b00`: aer, fatal
 *   (the port cut the link after an uncorrectable error), on the source device when named.
 * - `pcieport 0000:00:03.0: pciehp: Slot(3): Link Down` / `Card not present` (and the 4.x
 *   `pciehp 0000:00:03.0:pcie004: Slot(3): …` spelling): removed, on the slot's port (the line
 *   does not name the card).
 * - `pci 0000:3b:00.0: Removing from iommu group 42` and `… Unable to change power state from
 *   D3cold to D0, device inaccessible`: removed.
 *
 * Severity: `Corrected`/`Correctable` is corrected, `(Non-Fatal)` uncorrected, `(Fatal)`
 * fatal. Every regular expression here passes the backtracking audit (linear-time.test.ts).
 */
import { isBlank, normaliseBusId, splitLines } from './common.js';
import { FALLEN, GPU_ADDRESS, XID_FALLEN_OFF_BUS, XID_LINE, lineTimestamp } from './kmsg-xid.js';

/** What a kernel-log event says happened. */
export type KernelEventKind = 'xid' | 'aer' | 'removed';

/** PCIe AER severity: corrected by the link, uncorrected (non-fatal), or fatal. */
export type AerSeverity = 'corrected' | 'uncorrected' | 'fatal';

/** One device event found in the kernel log. */
export interface KernelLogEvent {
  kind: KernelEventKind;
  /** Normalised PCI address (`0000:3B:00.0`) of the device the message names; null when none. */
  busId: string | null;
  /** The XID number (kind xid). */
  xid?: number;
  /** The AER severity (kind aer). */
  severity?: AerSeverity;
  /** ISO time when the line carries an absolute one (dmesg -T, --time-format=iso); else null. */
  at: string | null;
  /** The message line (a kmsg record's text, unescaped), cut to MAX_EVENT_LINE characters. */
  line: string;
}

/** Longest `line` an event carries: a hostile 5 MB line must not travel into logs and snapshots. */
export const MAX_EVENT_LINE = 1000;

/** Lines above a "fallen off the bus" message searched for its address (the open driver wraps it). */
const CONTEXT_LINES = 3;
/** GPUs remembered as fallen; past this the memory starts again (a node has at most a few dozen). */
const MAX_FALLEN = 1024;

/** `6,1234,5678901,-;`: a /dev/kmsg record's priority, sequence number, µs since boot and flags. */
const KMSG_HEADER = /^(\d{1,3}),(\d{1,20}),(\d{1,20}),[^;]{0,256};/;
/** /dev/kmsg writes bytes outside printable ASCII (line breaks included) as `\xNN`. */
const KMSG_ESCAPE = /\\x([0-9A-Fa-f]{2})/g;

const AER_RECEIVED =
  /([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])(?::pcie\d{1,4})?: (?:AER: )?(?:Multiple )?(Correct(?:ed|able)|Uncorrect(?:ed|able) \((?:Non-)?Fatal\)) error (?:message )?received(?::| from)(?: id=([0-9A-Fa-f]{1,4})\b| ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]))?/;
const AER_BUS_ERROR =
  /([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])(?::pcie\d{1,4})?: (?:AER: )?PCIe Bus Error: severity=(Correct(?:ed|able)|Uncorrect(?:ed|able) \((?:Non-)?Fatal\))/;
const DPC_CONTAINMENT =
  /([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])(?::pcie\d{1,4})?: DPC:? containment event, status:0x[0-9A-Fa-f]{1,8},? source:0x([0-9A-Fa-f]{1,4})/;
const HOTPLUG_DOWN =
  /([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])(?::pcie\d{1,4})?: (?:pciehp: )?(?:[Ss]lot\([^)]{0,64}\): (?:Link Down|Card not present)|Card not present on Slot\()/;
const IOMMU_REMOVED = /([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): Removing from iommu group \d/;
const INACCESSIBLE =
  /([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): Unable to change power state from [A-Za-z0-9]{1,8} to D0, device inaccessible/;

/** An event before it is given its time and line. */
type Found = Omit<KernelLogEvent, 'at' | 'line'>;

/** The sequence number of a /dev/kmsg record (`6,1234,…;text` gives 1234), or null for other text. */
export function kmsgSequence(record: string): number | null {
  const header = KMSG_HEADER.exec(record);
  return header ? Number(header[2]) : null;
}

/** A record's text with its `\xNN` escapes decoded as the UTF-8 bytes they stand for. */
function unescapeKmsg(text: string): string {
  if (!text.includes('\\x')) return text;
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  let last = 0;
  const pushText = (part: string): void => {
    for (const byte of encoder.encode(part)) bytes.push(byte);
  };
  for (const match of text.matchAll(KMSG_ESCAPE)) {
    pushText(text.slice(last, match.index));
    bytes.push(Number.parseInt(match[1] ?? '0', 16));
    last = match.index + match[0].length;
  }
  pushText(text.slice(last));
  return new TextDecoder().decode(Uint8Array.from(bytes));
}

/** `Corrected`, `Correctable`, `Uncorrected (Non-Fatal)`, `Uncorrectable (Fatal)`, … */
function aerSeverity(text: string): AerSeverity {
  if (text.startsWith('Correct')) return 'corrected';
  return text.includes('Non-Fatal') ? 'uncorrected' : 'fatal';
}

/**
 * The device of a 16-bit PCIe requester id (bus << 8 | device << 3 | function), in the PCI
 * domain of `port` (the reporting port), as old kernels print it (`id=3b00`).
 */
function requesterBusId(port: string, id: string): string | null {
  const value = Number.parseInt(id, 16);
  const domain = port.slice(0, port.indexOf(':'));
  const hex = (n: number): string => n.toString(16).padStart(2, '0');
  return normaliseBusId(`${domain}:${hex(value >> 8)}:${hex((value >> 3) & 0x1f)}.${value & 7}`);
}

/** The AER or DPC event of one message, if it is one. */
function aerEvent(text: string): Found | null {
  const received = AER_RECEIVED.exec(text);
  if (received) {
    const port = normaliseBusId(received[1] ?? '');
    const source = received[4]
      ? normaliseBusId(received[4])
      : received[3] && port !== null
        ? requesterBusId(port, received[3])
        : port;
    return { kind: 'aer', busId: source, severity: aerSeverity(received[2] ?? '') };
  }
  const busError = AER_BUS_ERROR.exec(text);
  if (busError) {
    return {
      kind: 'aer',
      busId: normaliseBusId(busError[1] ?? ''),
      severity: aerSeverity(busError[2] ?? ''),
    };
  }
  return null;
}

/** The DPC, hotplug and removal events of one message, if it is one. */
function pciEvent(text: string): Found | null {
  if (text.includes('DPC')) {
    const dpc = DPC_CONTAINMENT.exec(text);
    const port = dpc ? normaliseBusId(dpc[1] ?? '') : null;
    if (dpc && port !== null) {
      const source = dpc[2] && Number.parseInt(dpc[2], 16) !== 0 ? requesterBusId(port, dpc[2]) : port;
      return { kind: 'aer', busId: source, severity: 'fatal' };
    }
  }
  for (const [needle, pattern] of [
    ['lot(', HOTPLUG_DOWN],
    ['iommu group', IOMMU_REMOVED],
    ['device inaccessible', INACCESSIBLE],
  ] as const) {
    const match = text.includes(needle) ? pattern.exec(text) : null;
    if (match) return { kind: 'removed', busId: normaliseBusId(match[1] ?? '') };
  }
  return null;
}

/**
 * Reads kernel-log lines one at a time and says which device events each completes. It keeps
 * what a line alone cannot tell: the lines just above (a wrapped message's address), whether
 * the last line was a /dev/kmsg record (its ` KEY=value` lines are metadata), the time of the
 * dmesg record a continuation line belongs to, and which GPUs already fell off the bus.
 *
 * Accepts, line by line and mixed: /dev/kmsg records (`6,1234,5678901,-;text`, escapes
 * decoded, one event list per line of the text), dmesg with any time format, `-x` facility
 * or `-r` priority prefix (a line starting with blanks continues the record above), and
 * syslog or journal lines. Unrelated and garbage lines give no events. Pure and linear in
 * its input.
 */
export class KernelLogScanner {
  #recent: string[] = [];
  #inKmsgRecord = false;
  #recordAt: string | null = null;
  #fallen = new Set<string>();

  /** Reads one line (without its line ending) and returns the events it carries. */
  push(line: string): KernelLogEvent[] {
    const text = line.trimEnd();
    if (text === '') return [];
    const header = KMSG_HEADER.exec(text);
    if (header) {
      this.#inKmsgRecord = true;
      this.#recordAt = null;
      return splitLines(unescapeKmsg(text.slice(header[0].length))).flatMap((message) =>
        this.#message(message, message, null),
      );
    }
    // ` SUBSYSTEM=pci`, ` DEVICE=+pci:0000:00:1c.0`: a kmsg record's dictionary.
    if (this.#inKmsgRecord && text.startsWith(' ')) return [];
    this.#inKmsgRecord = false;
    if (isBlank(text[0] ?? '')) return this.#message(text.trim(), text, this.#recordAt);
    this.#recordAt = lineTimestamp(text);
    return this.#message(text, text, this.#recordAt);
  }

  /** The events of one message line; `printed` is what the event's `line` shows. */
  #message(message: string, printed: string, at: string | null): KernelLogEvent[] {
    const found = message.trim() === '' ? [] : this.#classify(message);
    this.#recent.push(message);
    if (this.#recent.length > CONTEXT_LINES) this.#recent.shift();
    const line = printed.length > MAX_EVENT_LINE ? `${printed.slice(0, MAX_EVENT_LINE)}…` : printed;
    return found.map((event) => ({ ...event, at, line }));
  }

  #classify(text: string): Found[] {
    if (text.includes('NVRM')) {
      const nvidia = this.#nvidia(text);
      if (nvidia !== null) return nvidia;
    }
    const aer = text.includes('AER') || text.includes('PCIe Bus Error') ? aerEvent(text) : null;
    if (aer !== null) return [aer];
    const pci = pciEvent(text);
    return pci === null ? [] : [pci];
  }

  /** An Xid line, or a "fallen off the bus" message; null for other NVRM lines. */
  #nvidia(text: string): Found[] | null {
    const xid = XID_LINE.exec(text);
    const xidBus = xid?.[1] ? normaliseBusId(xid[1]) : null;
    if (xid && xidBus !== null) {
      const number = Number(xid[2]);
      const events: Found[] = [{ kind: 'xid', busId: xidBus, xid: number }];
      if (number === XID_FALLEN_OFF_BUS && this.#markFallen(xidBus))
        events.push({ kind: 'removed', busId: xidBus });
      return events;
    }
    if (!FALLEN.test(text)) return null;
    const bus = this.#fallenAddress(text);
    if (!this.#markFallen(bus ?? '')) return [];
    if (bus === null) return [{ kind: 'removed', busId: null }];
    return [
      { kind: 'xid', busId: bus, xid: XID_FALLEN_OFF_BUS },
      { kind: 'removed', busId: bus },
    ];
  }

  /** The GPU a "fallen off the bus" message is about: on its line, or up to 3 lines above. */
  #fallenAddress(text: string): string | null {
    for (const candidate of [text, ...this.#recent.toReversed()]) {
      const match = GPU_ADDRESS.exec(candidate);
      const bus = match?.[1] ? normaliseBusId(match[1]) : null;
      if (bus !== null) return bus;
    }
    return null;
  }

  /** Records that `bus` fell off; false when it already had (its repeats add nothing). */
  #markFallen(bus: string): boolean {
    if (this.#fallen.has(bus)) return false;
    if (this.#fallen.size >= MAX_FALLEN) this.#fallen.clear();
    this.#fallen.add(bus);
    return true;
  }
}

/** Every device event of a whole kernel log, in log order (a KernelLogScanner over its lines). */
export function parseKernelEvents(text: string): KernelLogEvent[] {
  const scanner = new KernelLogScanner();
  return splitLines(text).flatMap((line) => scanner.push(line));
}

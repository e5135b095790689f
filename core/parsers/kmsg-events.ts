/**
 * Device events in the kernel log, read one line at a time as the agent follows it: NVIDIA
 * XIDs, PCIe AER errors, and devices leaving the bus. The messages recognised (formats of
 * Linux 2.6 to 6.x and of the NVIDIA drivers), each only where it starts the message:
 *
 * - `NVRM: Xid (PCI:0000:91:00): 79, …`: an XID. Xid 79 also means the GPU is gone, so it is
 *   reported as removed too.
 * - `NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.`, `NVRM: GPU at PCI:…: GPU has fallen
 *   off the bus.`, and the open driver's three-line `NVRM: The NVIDIA GPU 0000:b3:00.0` /
 *   `NVRM: (PCI ID: 10de:26b5) installed in this system has` / `NVRM: fallen off the bus and is
 *   not responding to commands.`: removed. With no Xid 79 before it for that GPU it also gives
 *   xid 79 (`inferred`); the driver's later repeats give nothing.
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
 * Only the kernel's own messages count (issue 26: a tenant who can write to /dev/kmsg, or name
 * a file, a process or a device that the kernel then prints, must not fail a GPU):
 *
 * - A /dev/kmsg record counts only with facility 0 (`PRI,SEQ,µs,FLAGS;text`, PRI < 8): the
 *   kernel gives every record written from user space a non-zero facility (devkmsg_write
 *   enforces LOG_USER). Fragments that continue a line (flag `+`, older kernels) start
 *   mid-message and do not count either.
 * - A message must start with its driver's prefix: `NVRM: …`, or the PCI core's
 *   `<driver> <domain:bus:dev.fn>: …`. Text the kernel prints later in its own line (a file
 *   name, a USB string) cannot start one; a process name that starts one (`comm[pid]:
 *   segfault`) is 15 bytes at most, and the kernel's own text follows it.
 * - Only the first line of a message can start an event. Its later lines (a record's escaped
 *   line breaks, the lines dmesg indents under it) only complete the open driver's three-line
 *   message, and only after its first line: the NVIDIA driver prints the version string a
 *   client sends (`NVRM: API mismatch: …`), line breaks and all.
 * - A text line (a file, FIFO or `npu-fault parse` input) counts unless it says it is not the
 *   kernel's: a /dev/kmsg record of another facility, `dmesg -x` with another facility than
 *   `kern`, `dmesg -r` with a priority of 8 or more, a syslog or journal line
 *   (`Feb  5 15:41:33 host prog: `) whose program is not `kernel`. A plain `dmesg` line says
 *   nothing and counts: a text source is trusted to hold kernel messages only (`dmesg
 *   --facility=kern`, or `-x`); journal and syslog files can be forged through /dev/log.
 *
 * Severity: `Corrected`/`Correctable` is corrected, `(Non-Fatal)` uncorrected, `(Fatal)`
 * fatal. Every regular expression here passes the backtracking audit (linear-time.test.ts).
 *
 * The scanner also hands the node-problem messages (kmsg-node.ts: hung tasks, lockups, OOM
 * kills, filesystem errors, machine checks) to its `onNodeEvent` option, by the same rules.
 */
import { ctimeToIso, isBlank, normaliseBusId, splitLines } from './common.js';
import { nodeKernelMessage, type NodeKernelLogEvent } from './kmsg-node.js';

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
  /** True when no Xid line was printed and xid 79 comes from a "fallen off the bus" message. */
  inferred?: true;
  /** The AER severity (kind aer). */
  severity?: AerSeverity;
  /** ISO time when the line carries an absolute one (dmesg -T, --time-format=iso); else null. */
  at: string | null;
  /** The message line (a kmsg record's text, unescaped), cut to MAX_EVENT_LINE characters. */
  line: string;
}

/**
 * Why a record or line was ignored: `facility`, it says it is not the kernel's (user space
 * wrote it); `fragment`, an older kernel's continuation fragment, which starts mid-message.
 */
export type KernelLogIgnoredReason = 'facility' | 'fragment';

/** What a scanner reports besides events. */
export interface KernelLogScannerOptions {
  /** Called once per record or line ignored (a tenant can write many: count them, do not log each). */
  onIgnored?: (reason: KernelLogIgnoredReason) => void;
  /**
   * Called once per node-problem message (kmsg-node.ts: hung tasks, lockups, OOM kills,
   * filesystem errors, machine checks), in log order, by the same rules of whose message
   * counts as the device events. Without it those messages are not even read.
   */
  onNodeEvent?: (event: NodeKernelLogEvent) => void;
}

/** Longest `line` an event carries: a hostile 5 MB line must not travel into logs and snapshots. */
export const MAX_EVENT_LINE = 1000;

/** XID of a GPU that fell off the bus; also inferred from the driver's "fallen off the bus" messages. */
export const XID_FALLEN_OFF_BUS = 79;

/** GPUs remembered as fallen; past this the memory starts again (a node has at most a few dozen). */
const MAX_FALLEN = 1024;

/**
 * `6,1234,5678901,-;`: a /dev/kmsg record's priority (facility × 8 + level; a user's can take 4
 * digits), sequence number, µs since boot and flags (newer kernels add `,caller=T1`).
 */
const KMSG_HEADER = /^(\d{1,5}),(\d{1,20}),(\d{1,20}),([^;]{0,256});/;
/** /dev/kmsg writes bytes outside printable ASCII (line breaks and `\` included) as `\xNN`. */
const KMSG_ESCAPE = /\\x([0-9A-Fa-f]{2})/g;

// The prefixes of a text line, in the order they come (kernelTextLine).
/** `<3>` (dmesg -r): the record's priority, facility × 8 + level. */
const RAW_PRIORITY = /^<(\d{1,5})>/;
/** `kern  :warn  : ` (dmesg -x): facility and level, each padded with blanks. */
const DMESG_FACILITY = /^([a-z]{2,8}[0-7]?) {0,8}:[a-z]{3,6} {0,8}: /;
/** `2024-11-15T12:02:03,470068+00:00` (dmesg --time-format=iso, journalctl -o short-iso). */
const ISO_TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[,.](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})? ?/;
/** `[ 1234.567890] `, `[Sun Feb 23 16:24:18 2025] `, `[Feb23 16:24] `, `[<    0.000004>] `: checked by timeLike. */
const BRACKET = /^\[([^\]]{1,40})\] ?/;
/** Uptime and delta stamps: digits, blanks, `.`, `+`, `<` and `>`. */
const UPTIME = /^[\d .+<>]{1,40}$/;
/** A time of day inside a bracket (`16:24:18`, `16:24`). */
const CLOCK = /\d{1,2}:\d{2}/;
/** `[    T123] `: the caller id newer kernels print after the time. */
const CALLER = /^\[ {0,10}[TC]\d{1,10}\] ?/;
/** `Feb  5 15:41:33 ` (syslog, journalctl): no year, so no absolute time. */
const SYSLOG_TIME = /^[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d{1,9})? /;
/** `hostname kernel: `, `hostname myapp[123]: `: the host and the program that logged the line. */
const SYSLOG_SOURCE = /^[^\s\][]{1,255} ([^\s:\][]{1,64})(?:\[\d{1,10}\])?: /;
/** `kernel: ` left of a message copied from a syslog line. */
const KERNEL_TAG = /^kernel: /;

/** Facility names dmesg -x prints; another word there is not a facility prefix. */
const DMESG_FACILITIES = new Set([
  'kern',
  'user',
  'mail',
  'daemon',
  'auth',
  'syslog',
  'lpr',
  'news',
  'uucp',
  'cron',
  'authpriv',
  'ftp',
  'res0',
  'res1',
  'res2',
  'res3',
  ...['local0', 'local1', 'local2', 'local3', 'local4', 'local5', 'local6', 'local7'],
]);

// The NVIDIA driver's messages, anchored at the start of the message (`%04x` domains).
/** `NVRM: Xid (PCI:0000:91:00): 79, …`: the bus and the XID number. */
const XID_LINE =
  /^NVRM: Xid \(PCI:([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d{1,5})(?:,|$)/;
/** `NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.`, `NVRM: GPU at PCI:0000:3b:00: …`, or no address. */
const GPU_FALLEN =
  /^NVRM: (?:GPU (?:at PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?): )?GPU has fallen off the bus/;
/** The open driver's wrapped message, line 1 of 3: the whole line is the address. */
const WRAPPED_FIRST = /^NVRM: The NVIDIA GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$/;
/** Line 2 of 3. */
const WRAPPED_SECOND = /^NVRM: \(PCI ID: [0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}\) installed in this system has$/;
/** Line 3 of 3. */
const WRAPPED_THIRD = /^NVRM: fallen off the bus and is not responding to commands/;

/**
 * `pcieport 0000:00:01.0: `, `pciehp 0000:00:03.0:pcie004: `: the PCI core's prefix (dev_printk:
 * driver, device), which starts every PCI message below; the patterns that follow read the rest.
 */
const PCI_DEVICE =
  /^[A-Za-z0-9_.-]{1,40} ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])(?::pcie\d{1,4})?: /;
const AER_RECEIVED =
  /^(?:AER: )?(?:Multiple )?(Correct(?:ed|able)|Uncorrect(?:ed|able) \((?:Non-)?Fatal\)) error (?:message )?received(?::| from)(?: id=([0-9A-Fa-f]{1,4})\b| ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]))?/;
const AER_BUS_ERROR =
  /^(?:AER: )?PCIe Bus Error: severity=(Correct(?:ed|able)|Uncorrect(?:ed|able) \((?:Non-)?Fatal\))/;
const DPC_CONTAINMENT = /^DPC:? containment event, status:0x[0-9A-Fa-f]{1,8},? source:0x([0-9A-Fa-f]{1,4})/;
const HOTPLUG_DOWN =
  /^(?:pciehp: )?(?:[Ss]lot\([^)]{0,64}\): (?:Link Down|Card not present)|Card not present on Slot\()/;
const IOMMU_REMOVED = /^Removing from iommu group \d/;
const INACCESSIBLE = /^Unable to change power state from [A-Za-z0-9]{1,8} to D0, device inaccessible/;

/** An event before it is given its time and line. */
type Found = Omit<KernelLogEvent, 'at' | 'line'>;

/** A /dev/kmsg record's header: the facility, whether it continues a fragment, and its length. */
interface RecordHeader {
  facility: number;
  fragment: boolean;
  length: number;
}

function recordHeader(text: string): RecordHeader | null {
  const header = KMSG_HEADER.exec(text);
  if (!header) return null;
  return {
    facility: Number(header[1]) >> 3,
    fragment: (header[4] ?? '').startsWith('+'),
    length: header[0].length,
  };
}

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

/** Whose message a text line says it is: the kernel's, another's, or it does not say (plain dmesg). */
export type KernelLineOrigin = 'kernel' | 'other' | 'unstated';

/** A text line of the kernel log taken apart: whose it says it is, its time, and the message. */
export interface KernelTextLine {
  origin: KernelLineOrigin;
  /** ISO time when the line carries an absolute one (dmesg -T, --time-format=iso); else null. */
  at: string | null;
  /** The message, as the kernel printed it (its first character is the message's first). */
  message: string;
}

/** True for a bracket's contents that dmesg prints as a time: uptime, delta, or a time of day. */
function timeLike(inside: string): boolean {
  return (UPTIME.test(inside) && /\d/.test(inside)) || CLOCK.test(inside);
}

/** `2024-11-15T12:02:03,470068+00:00` as an ISO instant (milliseconds; UTC when no zone). */
function isoInstant(match: RegExpExecArray): string | null {
  const fraction = match[2] ? `.${match[2].slice(0, 3)}` : '';
  const date = new Date(`${match[1] ?? ''}${fraction}${match[3] ?? 'Z'}`);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/**
 * Takes a text line of the kernel log apart: `<3>` (dmesg -r), `kern  :warn  : ` (dmesg -x),
 * a time (`[ 123.456]`, `[Sun Feb 23 16:24:18 2025]`, `2024-11-15T12:02:03,470068+00:00`, or
 * syslog's `Feb  5 15:41:33`), a caller id, a syslog `host program: `, in that order and each
 * optional; the rest is the message. Any prefix that names a facility or program other than
 * the kernel makes the origin `other`.
 */
export function kernelTextLine(line: string): KernelTextLine {
  let rest = line;
  let origin: KernelLineOrigin = 'unstated';
  // A prefix that says "not the kernel" wins over one that says "kernel".
  const says = (kernel: boolean): void => {
    origin = origin === 'other' || !kernel ? 'other' : 'kernel';
  };
  const take = (match: RegExpExecArray | null): RegExpExecArray | null => {
    if (match) rest = rest.slice(match[0].length);
    return match;
  };
  const raw = take(RAW_PRIORITY.exec(rest));
  if (raw) says(Number(raw[1]) >> 3 === 0);
  const facility = DMESG_FACILITY.exec(rest);
  if (facility && DMESG_FACILITIES.has(facility[1] ?? '')) {
    take(facility);
    says(facility[1] === 'kern');
  }
  let at: string | null = null;
  // Only syslog's own time says a program name follows; after dmesg's times (which journalctl
  // -o short-iso and short-monotonic share) a message can itself look like `word word: `.
  let syslog = false;
  let timed = true;
  const iso = take(ISO_TIME.exec(rest));
  const bracket = iso ? null : BRACKET.exec(rest);
  if (iso) {
    at = isoInstant(iso);
  } else if (bracket && timeLike(bracket[1] ?? '')) {
    take(bracket);
    at = ctimeToIso(bracket[1] ?? '');
  } else {
    syslog = take(SYSLOG_TIME.exec(rest)) !== null;
    timed = syslog;
  }
  take(CALLER.exec(rest));
  const source = timed ? SYSLOG_SOURCE.exec(rest) : null;
  const tagged = source?.[1] === 'kernel' || (source === null && KERNEL_TAG.test(rest));
  if (source && (tagged || syslog)) {
    take(source);
    says(tagged);
  } else if (tagged) {
    take(KERNEL_TAG.exec(rest));
    says(true);
  }
  // Old syslog lines keep the kernel's uptime after `kernel: `.
  const uptime = tagged ? BRACKET.exec(rest) : null;
  if (uptime && UPTIME.test(uptime[1] ?? '')) take(uptime);
  return { origin, at, message: rest };
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

/** The AER or DPC event of a PCI message from `device`, `rest` being the text after its prefix. */
function aerEvent(device: string, rest: string): Found | null {
  const received = AER_RECEIVED.exec(rest);
  if (received) {
    const source = received[3]
      ? normaliseBusId(received[3])
      : received[2]
        ? requesterBusId(device, received[2])
        : device;
    return { kind: 'aer', busId: source, severity: aerSeverity(received[1] ?? '') };
  }
  const busError = AER_BUS_ERROR.exec(rest);
  if (busError) return { kind: 'aer', busId: device, severity: aerSeverity(busError[1] ?? '') };
  const dpc = DPC_CONTAINMENT.exec(rest);
  if (dpc) {
    const source = dpc[1] && Number.parseInt(dpc[1], 16) !== 0 ? requesterBusId(device, dpc[1]) : device;
    return { kind: 'aer', busId: source, severity: 'fatal' };
  }
  return null;
}

/** The hotplug and removal events of a PCI message from `device`. */
function removalEvent(device: string, rest: string): Found | null {
  const removed = HOTPLUG_DOWN.test(rest) || IOMMU_REMOVED.test(rest) || INACCESSIBLE.test(rest);
  return removed ? { kind: 'removed', busId: device } : null;
}

/** The event of a message that starts with the PCI core's `<driver> <device>: ` prefix. */
function pciEvent(message: string): Found | null {
  const prefix = PCI_DEVICE.exec(message);
  const device = prefix ? normaliseBusId(prefix[1] ?? '') : null;
  if (!prefix || device === null) return null;
  const rest = message.slice(prefix[0].length);
  return aerEvent(device, rest) ?? removalEvent(device, rest);
}

/**
 * Reads kernel-log lines one at a time and says which device events each completes, by the
 * rules in the file comment. It keeps what a line alone cannot tell: whether the lines that
 * start with a blank continue a counted message (rather than a /dev/kmsg record's dictionary
 * or an ignored line); the time of the dmesg record a continuation line belongs to; how far
 * the open driver's three-line message has come; and which GPUs already fell off the bus.
 *
 * `push` reads text, line by line and mixed: /dev/kmsg records (`6,1234,5678901,-;text`,
 * escapes decoded), dmesg with any time format, `-x` facility or `-r` priority prefix, and
 * syslog or journal lines. `pushRecord` reads one record as /dev/kmsg returns it, and nothing
 * else. Unrelated and garbage lines give no events. Pure and linear in its input.
 */
export class KernelLogScanner {
  readonly #onIgnored: (reason: KernelLogIgnoredReason) => void;
  readonly #onNodeEvent: ((event: NodeKernelLogEvent) => void) | undefined;
  /** What a line starting with a blank continues: a counted message, or nothing to read. */
  #continues: 'message' | 'nothing' = 'nothing';
  #recordAt: string | null = null;
  /** The open driver's wrapped message: its GPU, and the line it waits for. */
  #wrapped: { bus: string; next: 'second' | 'third' } | null = null;
  #fallen = new Set<string>();

  constructor(options: KernelLogScannerOptions = {}) {
    this.#onIgnored = options.onIgnored ?? (() => undefined);
    this.#onNodeEvent = options.onNodeEvent;
  }

  /** Reads one text line (without its line ending) and returns the events it carries. */
  push(line: string): KernelLogEvent[] {
    const text = line.trimEnd();
    if (text === '') return [];
    const header = recordHeader(text);
    if (header) return this.#record(header, text);
    // dmesg indents a record's later lines; after a kmsg record they are its dictionary.
    if (isBlank(text[0] ?? '')) {
      return this.#continues === 'message' ? this.#later(text.trimStart(), text, this.#recordAt) : [];
    }
    const parsed = kernelTextLine(text);
    if (parsed.origin === 'other') return this.#ignore('facility');
    this.#continues = 'message';
    this.#recordAt = parsed.at;
    return this.#first(parsed.message, text, parsed.at);
  }

  /**
   * Reads one /dev/kmsg read: `PRI,SEQ,µs,FLAGS;text` and its ` KEY=value` dictionary lines.
   * Anything that is not a record gives nothing (its reader counts it).
   */
  pushRecord(record: string): KernelLogEvent[] {
    const end = record.indexOf('\n');
    const text = (end < 0 ? record : record.slice(0, end)).trimEnd();
    const header = recordHeader(text);
    return header ? this.#record(header, text) : [];
  }

  #record(header: RecordHeader, text: string): KernelLogEvent[] {
    // User space cannot write facility 0 (devkmsg_write gives it LOG_USER at least).
    if (header.facility !== 0) return this.#ignore('facility');
    if (header.fragment) return this.#ignore('fragment');
    this.#continues = 'nothing';
    this.#recordAt = null;
    const [first = '', ...later] = splitLines(unescapeKmsg(text.slice(header.length)));
    return [...this.#first(first, first, null), ...later.flatMap((line) => this.#later(line, line, null))];
  }

  #ignore(reason: KernelLogIgnoredReason): KernelLogEvent[] {
    this.#continues = 'nothing';
    this.#wrapped = null;
    this.#onIgnored(reason);
    return [];
  }

  /** The first line of a message: any event may start here. */
  #first(message: string, printed: string, at: string | null): KernelLogEvent[] {
    // Syslog writes each line of a multi-line record as a line of its own.
    const wrapped = this.#wrappedNext(message);
    if (wrapped !== null) return this.#events(wrapped, printed, at);
    this.#wrapped = null;
    if (message.startsWith('NVRM: ')) return this.#events(this.#nvidia(message), printed, at);
    const pci = pciEvent(message);
    if (pci !== null) return this.#events([pci], printed, at);
    this.#node(message, printed, at);
    return [];
  }

  /** A node-problem message, to onNodeEvent (first lines only, as every event). */
  #node(message: string, printed: string, at: string | null): void {
    if (this.#onNodeEvent === undefined) return;
    const found = nodeKernelMessage(message);
    if (found !== null) this.#onNodeEvent({ ...found, at, line: boundedLine(printed) });
  }

  /** A later line of a message: it can only go on with the open driver's wrapped message. */
  #later(message: string, printed: string, at: string | null): KernelLogEvent[] {
    const wrapped = this.#wrappedNext(message);
    if (wrapped === null) this.#wrapped = null;
    return this.#events(wrapped ?? [], printed, at);
  }

  /** Lines 2 and 3 of the wrapped message, when it waits for them; null for any other line. */
  #wrappedNext(message: string): Found[] | null {
    const wrapped = this.#wrapped;
    if (wrapped?.next === 'second' && WRAPPED_SECOND.test(message)) {
      this.#wrapped = { bus: wrapped.bus, next: 'third' };
      return [];
    }
    if (wrapped?.next === 'third' && WRAPPED_THIRD.test(message)) {
      this.#wrapped = null;
      return this.#fellOff(wrapped.bus);
    }
    return null;
  }

  #events(found: readonly Found[], printed: string, at: string | null): KernelLogEvent[] {
    const line = boundedLine(printed);
    return found.map((event) => ({ ...event, at, line }));
  }

  /** An Xid line, a "fallen off the bus" line, or the first line of the wrapped message. */
  #nvidia(message: string): Found[] {
    const xid = XID_LINE.exec(message);
    const xidBus = xid ? normaliseBusId(xid[1] ?? '') : null;
    if (xid && xidBus !== null) {
      const number = Number(xid[2]);
      const events: Found[] = [{ kind: 'xid', busId: xidBus, xid: number }];
      if (number === XID_FALLEN_OFF_BUS && this.#markFallen(xidBus))
        events.push({ kind: 'removed', busId: xidBus });
      return events;
    }
    const first = WRAPPED_FIRST.exec(message);
    const firstBus = first ? normaliseBusId(first[1] ?? '') : null;
    if (firstBus !== null) {
      this.#wrapped = { bus: firstBus, next: 'second' };
      return [];
    }
    const fallen = GPU_FALLEN.exec(message);
    if (!fallen) return [];
    return this.#fellOff(fallen[1] ? normaliseBusId(fallen[1]) : null);
  }

  /** A GPU fell off the bus: xid 79 (inferred) and removed, once per GPU. */
  #fellOff(bus: string | null): Found[] {
    if (!this.#markFallen(bus ?? '')) return [];
    if (bus === null) return [{ kind: 'removed', busId: null }];
    return [
      { kind: 'xid', busId: bus, xid: XID_FALLEN_OFF_BUS, inferred: true },
      { kind: 'removed', busId: bus },
    ];
  }

  /** Records that `bus` fell off; false when it already had (its repeats add nothing). */
  #markFallen(bus: string): boolean {
    if (this.#fallen.has(bus)) return false;
    if (this.#fallen.size >= MAX_FALLEN) this.#fallen.clear();
    this.#fallen.add(bus);
    return true;
  }
}

/** A line as an event carries it: at most MAX_EVENT_LINE characters. */
function boundedLine(printed: string): string {
  return printed.length > MAX_EVENT_LINE ? `${printed.slice(0, MAX_EVENT_LINE)}…` : printed;
}

/** Every device event of a whole kernel log, in log order (a KernelLogScanner over its lines). */
export function parseKernelEvents(text: string): KernelLogEvent[] {
  const scanner = new KernelLogScanner();
  return splitLines(text).flatMap((line) => scanner.push(line));
}

/**
 * Every node-problem message of a whole kernel log, in log order (a KernelLogScanner over its
 * lines, so the same messages count as for the agent's follower).
 */
export function parseNodeKernelEvents(text: string): NodeKernelLogEvent[] {
  const events: NodeKernelLogEvent[] = [];
  const scanner = new KernelLogScanner({ onNodeEvent: (event) => events.push(event) });
  for (const line of splitLines(text)) scanner.push(line);
  return events;
}

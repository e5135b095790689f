/**
 * Node problems in the kernel log: the kernel's own messages about hung tasks, locked-up
 * CPUs, OOM kills, filesystem errors and read-only remounts, and machine checks. The agent's
 * kernel check (agent/node-checks/kernel) turns them into node problems; KernelLogScanner
 * (kmsg-events.ts) hands each counted message's first line here, so the rules of that file
 * about whose message counts apply unchanged (from /dev/kmsg, records of facility 0 only).
 *
 * The messages recognised, each only where it starts the message (the sources are named in
 * core/parsers/testing.ts beside a sample of each):
 *
 * - hung-task: `INFO: task <comm>:<pid> blocked for more than <n> seconds.` (kernel/hung_task.c).
 * - soft-lockup: `[watchdog: |NMI watchdog: ]BUG: soft lockup - CPU#<n> stuck for <n>s!
 *   [<comm>:<pid>]` (kernel/watchdog.c), and the hard lockup `[watchdog: ][CPU<n>: ]Watchdog
 *   detected hard LOCKUP on cpu <n>`: a CPU that stopped taking interrupts.
 * - oom-kill: `Out of memory: Killed process <pid> (<comm>) total-vm:…` (4.19 and later;
 *   also `Out of memory (oom_kill_allocating_task): …`) and the older `Out of memory: Kill
 *   process <pid> (<comm>) score <n> or sacrifice child` (mm/oom_kill.c): the whole node ran
 *   out of memory. The older kernels' second line (`Killed process …`, no prefix) and the
 *   `oom-kill:constraint=…` summary repeat the same kill and are not counted.
 * - cgroup-oom-kill: the same with `Memory cgroup out of memory: `: a cgroup (a pod or a
 *   container) reached its own memory limit. Reported apart, so that a consumer can tell a
 *   pod's problem from the node's.
 * - fs-error: `EXT4-fs error (device <dev>): …` and `EXT4-fs error (device <dev>) in …`
 *   (fs/ext4/super.c, also for ext2 and ext3 mounted by ext4), `Aborting journal on device
 *   <dev>.` (jbd2), and XFS's `XFS (<dev>): ` followed by a shutdown (`xfs_do_force_shutdown(`,
 *   `Filesystem has been shut down`, `Corruption of in-memory data detected`), corruption
 *   (`Corruption detected`, `Metadata corruption detected`, `Metadata CRC error detected`,
 *   `Internal error`) or an I/O error (`Log I/O Error`, `log I/O error`, `Metadata I/O error`,
 *   `I/O Error`). EXT4's warnings and its daily `error count since last fsck` reminder are not
 *   errors of their own.
 * - fs-readonly: `EXT4-fs (<dev>): Remounting filesystem read-only` (ext4 after an error,
 *   with errors=remount-ro).
 * - machine-check: `mce: [Hardware Error]: CPU <n>: Machine Check[ Exception]: <mcgstatus>
 *   Bank <n>: <status>` (arch/x86 mce) when it is an exception or its status says uncorrected
 *   (bit 61, UC): corrected errors are the EDAC counters' business (another check reads them
 *   from sysfs); `mce: Uncorrected hardware memory error in user-access at <addr>`; `Memory
 *   failure: <pfn>: recovery action for <page>: <result>` (mm/memory-failure.c: a poisoned page
 *   handled, one line per page); and APEI's `{<n>}[Hardware Error]: event severity: fatal` or
 *   `recoverable` (drivers/firmware/efi/cper.c, also on arm64).
 *
 * Why a tenant cannot fake one: each pattern is anchored at the start of the message and reads
 * the kernel's whole format up to the fields it needs. Text a tenant chooses that the kernel
 * prints at the start of a line is a task's comm (15 bytes at most: `comm[pid]: segfault …`,
 * `comm invoked oom-killer: …`) or a network interface name (no blanks), always followed by
 * the kernel's own fixed text; none of these patterns fits in 15 bytes or a blank-free name,
 * and none continues with the text the kernel prints after a name. A comm inside a message
 * (the hung task's, the OOM victim's) is read as at most 15 characters followed by the rest of
 * the kernel's format, so a comm holding "soft lockup" or "Out of memory" stays that task's
 * name. Every comm and device name in `subject` and `detail` is made printable and bounded.
 * Every regular expression here passes the backtracking audit (linear-time.test.ts).
 */
import { excerpt } from '../errors.js';

/** What a node-problem message of the kernel says happened (see the file comment). */
export const NODE_KERNEL_EVENT_KINDS = [
  'hung-task',
  'soft-lockup',
  'oom-kill',
  'cgroup-oom-kill',
  'fs-error',
  'fs-readonly',
  'machine-check',
] as const;

/** One of NODE_KERNEL_EVENT_KINDS. */
export type NodeKernelEventKind = (typeof NODE_KERNEL_EVENT_KINDS)[number];

/** A node-problem message of the kernel, read. */
export interface NodeKernelMessage {
  kind: NodeKernelEventKind;
  /**
   * What the message is about, printable and at most MAX_SUBJECT characters: the task
   * (`python3:1234`), the CPU (`CPU#3`), the filesystem's device (`sda1`), the page
   * (`0x1a2b3c`) or the APEI source (`APEI`).
   */
  subject: string;
  /** What was seen, for a person: printable, at most MAX_DETAIL characters. */
  detail: string;
}

/** A node-problem message found in the kernel log: what it says, when, and the line. */
export interface NodeKernelLogEvent extends NodeKernelMessage {
  /** ISO time when the line carries an absolute one (dmesg -T, --time-format=iso); else null. */
  at: string | null;
  /** The message line, cut to MAX_EVENT_LINE characters (kmsg-events.ts). */
  line: string;
}

/** Longest `subject`. */
export const MAX_SUBJECT = 40;
/** Longest `detail`. */
export const MAX_DETAIL = 160;
/** Longest comm the kernel prints (TASK_COMM_LEN 16, less its NUL). */
const COMM = 15;

// Every comm below is `[\s\S]{1,15}`: any character (a comm may hold blanks, `:`, `)` and
// line separators), at most 15 of them, and the kernel's fixed text right after it.
/** kernel/hung_task.c. */
const HUNG_TASK = /^INFO: task ([\s\S]{1,15}):(\d{1,10}) blocked for more than (\d{1,10}) seconds\./;
/** kernel/watchdog.c; `watchdog: ` (pr_fmt) since 4.15, `NMI watchdog: ` before, nothing on 3.x. */
const SOFT_LOCKUP =
  /^(?:(?:NMI )?watchdog: )?BUG: soft lockup - CPU#(\d{1,5}) stuck for (\d{1,10})s!(?: \[([\s\S]{1,15}):(\d{1,10})\])?/;
/** kernel/watchdog_hld.c, kernel/watchdog.c (6.x names the reporting CPU first). */
const HARD_LOCKUP =
  /^(?:(?:NMI )?watchdog: )?(?:CPU\d{1,5}: )?Watchdog detected hard LOCKUP on cpu (\d{1,5})/;
/** mm/oom_kill.c: the kill of 4.19 and later (`Killed process … total-vm:`) and before (`Kill process … score`). */
const OOM_KILL =
  /^(Out of memory(?: \(oom_kill_allocating_task\))?|Memory cgroup out of memory): Kill(?:ed)? process (\d{1,10}) \(([\s\S]{0,15})\) (?:total-vm:|score )/;
/** fs/ext4/super.c: __ext4_error and friends (`): func:line: …`) and __ext4_std_error (`) in func:line: …`). */
const EXT4_ERROR = /^EXT4-fs error \(device ([^\s()]{1,64})\)(?::| in) /;
/** fs/ext4/super.c: ext4_handle_error with errors=remount-ro. */
const EXT4_READONLY = /^EXT4-fs \(([^\s()]{1,64})\): Remounting filesystem read-only/;
/** fs/jbd2/journal.c: jbd2_journal_abort (`sda1-8`: the device and the journal's inode). */
const JOURNAL_ABORT = /^Aborting journal on device (\S{1,64})\./;
/** fs/xfs/xfs_message.c: every XFS message starts with the device. */
const XFS_PREFIX = /^XFS \(([^\s()]{1,64})\): /;
/** The XFS messages that say the filesystem shut down, is corrupt or failed I/O. */
const XFS_ERROR =
  /^(?:xfs_do_force_shutdown\(|Filesystem has been shut down|Corruption (?:of in-memory data )?detected|Metadata (?:corruption|CRC error) detected|Internal error |(?:[Ll]og |Metadata )?I\/O [Ee]rror)/;
/** arch/x86/kernel/cpu/mce/core.c __print_mce: CPU, exception or not, MCG status, bank, status. */
const MCE_RECORD =
  /^mce: \[Hardware Error\]: CPU (\d{1,5}): Machine Check( Exception)?: [0-9A-Fa-f]{1,16} Bank (\d{1,3}): ([0-9A-Fa-f]{16})/;
/** arch/x86/kernel/cpu/mce/core.c kill_me_maybe. */
const MCE_USER_ACCESS = /^mce: Uncorrected hardware memory error in user-access at ([0-9A-Fa-f]{1,16})/;
/** mm/memory-failure.c action_result (pr_fmt `Memory failure: `). */
const MEMORY_FAILURE =
  /^Memory failure: (0x[0-9A-Fa-f]{1,16}): recovery action for ([^:]{1,64}): ([\s\S]{1,64})/;
/** drivers/firmware/efi/cper.c through ghes.c: `{seq}[Hardware Error]: event severity: …`. */
const APEI_SEVERITY = /^\{\d{1,10}\}\[Hardware Error\]: event severity: (fatal|recoverable)/;

/** MCi_STATUS bit 61 (UC): the error was not corrected. Its hex digit 0 holds bits 63..60. */
const UC_BIT_OF_FIRST_DIGIT = 0x2;

/** `text` as a printable excerpt of at most `max` characters. */
const shown = (text: string, max: number): string => excerpt(text, max);

/** A comm as the message says it, printable (a comm may hold any byte but NUL). */
const comm = (text: string): string => shown(text, COMM * 2);

function found(kind: NodeKernelEventKind, subject: string, detail: string): NodeKernelMessage {
  return { kind, subject: shown(subject, MAX_SUBJECT), detail: shown(detail, MAX_DETAIL) };
}

function hungTask(message: string): NodeKernelMessage | null {
  const match = HUNG_TASK.exec(message);
  if (!match) return null;
  const task = `${comm(match[1] ?? '')}:${match[2] ?? ''}`;
  return found('hung-task', task, `task ${task} blocked for more than ${match[3] ?? ''} s`);
}

function lockup(message: string): NodeKernelMessage | null {
  const soft = SOFT_LOCKUP.exec(message);
  if (soft) {
    const cpu = `CPU#${soft[1] ?? ''}`;
    const task = soft[3] === undefined ? '' : ` [${comm(soft[3])}:${soft[4] ?? ''}]`;
    return found('soft-lockup', cpu, `${cpu} stuck for ${soft[2] ?? ''} s${task}`);
  }
  const hard = HARD_LOCKUP.exec(message);
  if (!hard) return null;
  const cpu = `CPU#${hard[1] ?? ''}`;
  return found('soft-lockup', cpu, `${cpu} hard lockup (no interrupts)`);
}

function oomKill(message: string): NodeKernelMessage | null {
  const match = OOM_KILL.exec(message);
  if (!match) return null;
  const kind = match[1]?.startsWith('Memory cgroup') ? 'cgroup-oom-kill' : 'oom-kill';
  const task = `${comm(match[3] ?? '')}:${match[2] ?? ''}`;
  const scope = kind === 'oom-kill' ? 'node out of memory' : 'cgroup out of memory';
  return found(kind, task, `${scope}: killed process ${match[2] ?? ''} (${comm(match[3] ?? '')})`);
}

function filesystem(message: string): NodeKernelMessage | null {
  const ext4 = EXT4_ERROR.exec(message);
  if (ext4) {
    const device = ext4[1] ?? '';
    return found('fs-error', device, `EXT4-fs error on ${device}: ${message.slice(ext4[0].length)}`);
  }
  const readOnly = EXT4_READONLY.exec(message);
  if (readOnly)
    return found('fs-readonly', readOnly[1] ?? '', `${readOnly[1] ?? ''} remounted read-only (ext4)`);
  const journal = JOURNAL_ABORT.exec(message);
  if (journal) return found('fs-error', journal[1] ?? '', `journal aborted on ${journal[1] ?? ''}`);
  const xfs = XFS_PREFIX.exec(message);
  if (!xfs) return null;
  const rest = message.slice(xfs[0].length);
  if (!XFS_ERROR.test(rest)) return null;
  return found('fs-error', xfs[1] ?? '', `XFS error on ${xfs[1] ?? ''}: ${rest}`);
}

function machineCheck(message: string): NodeKernelMessage | null {
  const record = MCE_RECORD.exec(message);
  if (record) {
    const status = record[4] ?? '';
    const uncorrected = (Number.parseInt(status[0] ?? '0', 16) & UC_BIT_OF_FIRST_DIGIT) !== 0;
    if (!uncorrected && record[2] === undefined) return null;
    const what = record[2] === undefined ? 'uncorrected' : 'exception';
    const cpu = `CPU ${record[1] ?? ''}`;
    return found(
      'machine-check',
      cpu,
      `${cpu} bank ${record[3] ?? ''} ${what}, status 0x${status.toLowerCase()}`,
    );
  }
  const user = MCE_USER_ACCESS.exec(message);
  if (user) {
    const address = `0x${(user[1] ?? '').toLowerCase()}`;
    return found('machine-check', address, `uncorrected memory error in user access at ${address}`);
  }
  const failure = MEMORY_FAILURE.exec(message);
  if (failure) {
    const pfn = (failure[1] ?? '').toLowerCase();
    return found(
      'machine-check',
      pfn,
      `memory failure at pfn ${pfn}: ${failure[2] ?? ''}: ${failure[3] ?? ''}`,
    );
  }
  const apei = APEI_SEVERITY.exec(message);
  return apei ? found('machine-check', 'APEI', `hardware error, severity ${apei[1] ?? ''} (APEI)`) : null;
}

/**
 * The node problem a kernel message (its first line, without time or facility prefixes)
 * reports, or null. Pure; each pattern is anchored, so the cost is a constant per line.
 */
export function nodeKernelMessage(message: string): NodeKernelMessage | null {
  switch (message[0]) {
    case 'I':
      return hungTask(message);
    case 'B':
    case 'w':
    case 'N':
    case 'W':
    case 'C':
      return lockup(message);
    case 'O':
      return oomKill(message);
    case 'E':
    case 'A':
    case 'X':
      return filesystem(message);
    case 'M':
      return message.startsWith('Memory cgroup') ? oomKill(message) : machineCheck(message);
    case 'm':
    case '{':
      return machineCheck(message);
    default:
      return null;
  }
}

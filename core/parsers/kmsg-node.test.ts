import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { isPrintableText } from '../../contracts/fields/index.js';
import { KernelLogScanner, parseKernelEvents, parseNodeKernelEvents } from './kmsg-events.js';
import { MAX_DETAIL, MAX_SUBJECT, nodeKernelMessage, type NodeKernelLogEvent } from './kmsg-node.js';
import { FORGED_NODE_KERNEL_RECORDS, KMSG, NODE_KERNEL_SAMPLES } from './testing.js';

/** The kind and subject of each node event of a text. */
const brief = (text: string): Array<[string, string]> =>
  parseNodeKernelEvents(text).map((event) => [event.kind, event.subject]);

describe('parseNodeKernelEvents on the recorded lines', () => {
  it.each(NODE_KERNEL_SAMPLES.map((sample) => [sample.source, sample] as const))('%s', (_source, sample) => {
    expect(brief(sample.line)).toEqual(sample.expected === null ? [] : [sample.expected]);
  });

  it('reads every sample of a whole log in order, and gives no device events for them', () => {
    const log = NODE_KERNEL_SAMPLES.map((sample) => sample.line).join('\n');
    const expected = NODE_KERNEL_SAMPLES.flatMap((sample) =>
      sample.expected === null ? [] : [sample.expected],
    );
    expect(brief(log)).toEqual(expected);
    expect(parseKernelEvents(log)).toEqual([]);
  });

  it('says what was seen, with the numbers of the line', () => {
    const [hung, lockup, oom] = parseNodeKernelEvents(
      [
        '[24288.377534] INFO: task kworker/1:2:10762 blocked for more than 120 seconds.',
        '[405108.698255] watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [chia_plot:29632]',
        'Out of memory: Killed process 41234 (python3) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB',
      ].join('\n'),
    );
    expect(hung?.detail).toBe('task kworker/1:2:10762 blocked for more than 120 s');
    expect(lockup?.detail).toBe('CPU#2 stuck for 22 s [chia_plot:29632]');
    expect(oom?.detail).toBe('node out of memory: killed process 41234 (python3)');
  });

  it('keeps a line’s own time and the line itself', () => {
    const [event] = parseNodeKernelEvents(
      '2025-01-21T02:21:33,498559+00:00 EXT4-fs (dm-4): Remounting filesystem read-only',
    );
    expect(event).toEqual({
      kind: 'fs-readonly',
      subject: 'dm-4',
      detail: 'dm-4 remounted read-only (ext4)',
      at: '2025-01-21T02:21:33.498Z',
      line: '2025-01-21T02:21:33,498559+00:00 EXT4-fs (dm-4): Remounting filesystem read-only',
    });
  });

  it('reads the machine check status: UC (bit 61) or an exception counts, a corrected error does not', () => {
    const line = (exception: string, status: string): string =>
      `mce: [Hardware Error]: CPU 3: Machine Check${exception}: 0 Bank 7: ${status}`;
    expect(brief(line('', 'b200000000070f0f'))).toEqual([['machine-check', 'CPU 3']]);
    expect(brief(line('', '9c00000000070f0f'))).toEqual([]);
    expect(brief(line(' Exception', '9c00000000070f0f'))).toEqual([['machine-check', 'CPU 3']]);
    expect(parseNodeKernelEvents(line('', 'BE00000000800400'))[0]?.detail).toBe(
      'CPU 3 bank 7 uncorrected, status 0xbe00000000800400',
    );
  });
});

describe('only the kernel’s own messages count (issue 26)', () => {
  it.each(FORGED_NODE_KERNEL_RECORDS.map((record) => [record] as const))('%s reports nothing', (record) => {
    const events: NodeKernelLogEvent[] = [];
    const scanner = new KernelLogScanner({ onNodeEvent: (event) => events.push(event) });
    scanner.pushRecord(record);
    scanner.push(record);
    expect(events).toEqual([]);
  });

  it('the same messages count from the kernel (facility 0), not from user space', () => {
    const events: NodeKernelLogEvent[] = [];
    const scanner = new KernelLogScanner({ onNodeEvent: (event) => events.push(event) });
    scanner.pushRecord('3,1,1000,-;INFO: task python3:1234 blocked for more than 120 seconds.');
    scanner.pushRecord('11,2,1000,-;INFO: task python3:1234 blocked for more than 120 seconds.');
    scanner.pushRecord('2,3,1000,-;EXT4-fs (sda1): Remounting filesystem read-only');
    scanner.pushRecord('26,4,1000,-;EXT4-fs (sda1): Remounting filesystem read-only');
    expect(events.map((event) => event.kind)).toEqual(['hung-task', 'fs-readonly']);
  });

  it('a later line of a record or an indented dmesg line starts nothing', () => {
    expect(brief('3,1,1000,-;x\\x0aINFO: task python3:1234 blocked for more than 120 seconds.')).toEqual([]);
    expect(brief('[ 1.0] x\n        EXT4-fs (sda1): Remounting filesystem read-only')).toEqual([]);
  });

  it('a comm holding a line break hides its own hung task but fakes nothing', () => {
    const record =
      '3,1,1000,-;INFO: task a\\x0aBUG: soft lockup - CPU#1 stuck for 22s! [x:1]:7 blocked for more than 120 seconds.';
    expect(brief(record)).toEqual([]);
  });

  it('a comm of control characters and invalid UTF-8 is shown printable and bounded', () => {
    const [event] = parseNodeKernelEvents(
      '3,1,1000,-;INFO: task \\x1b[2J\\xff\\xfe\\x07\\x7fa:99 blocked for more than 120 seconds.',
    );
    expect(event?.kind).toBe('hung-task');
    expect(isPrintableText(event?.subject ?? '')).toBe(true);
    expect(isPrintableText(event?.detail ?? '')).toBe(true);
    expect(event?.subject).toContain(':99');
  });

  it('the device events of the same log are unchanged beside the node events', () => {
    const log = `${KMSG}\n${NODE_KERNEL_SAMPLES.map((sample) => sample.line).join('\n')}`;
    expect(parseKernelEvents(log)).toEqual(parseKernelEvents(KMSG));
  });
});

describe('nodeKernelMessage on any text', () => {
  it('never throws, and bounds and cleans what it returns', () => {
    const prefixes = [
      'INFO: task ',
      'watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [',
      'Out of memory: Killed process 1 (',
      'EXT4-fs error (device sda1): ',
      'XFS (sda1): Metadata corruption detected',
      'Memory failure: 0x1: recovery action for ',
      'mce: [Hardware Error]: CPU 1: Machine Check Exception: 0 Bank 1: ',
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...prefixes),
        fc.string({ unit: 'binary', maxLength: 400 }),
        (prefix, rest) => {
          const found = nodeKernelMessage(prefix + rest);
          if (found === null) return;
          expect(found.subject.length).toBeLessThanOrEqual(MAX_SUBJECT + 1);
          expect(found.detail.length).toBeLessThanOrEqual(MAX_DETAIL + 1);
          expect(isPrintableText(found.subject)).toBe(true);
          expect(isPrintableText(found.detail)).toBe(true);
        },
      ),
    );
  });

  it('a 1 MB filesystem error gives a bounded detail', () => {
    const found = nodeKernelMessage(`EXT4-fs error (device sda1): ${'x'.repeat(1 << 20)}`);
    expect(found?.kind).toBe('fs-error');
    expect(found?.detail.length).toBeLessThanOrEqual(MAX_DETAIL + 1);
  });
});

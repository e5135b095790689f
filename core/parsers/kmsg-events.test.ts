import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { readdirSync } from 'node:fs';
import {
  KernelLogScanner,
  MAX_EVENT_LINE,
  kernelTextLine,
  kmsgSequence,
  parseKernelEvents,
  type KernelLogIgnoredReason,
} from './kmsg-events.js';
import { parseXidEvents } from './kmsg-xid.js';
import { KMSG } from './testing.js';
import { REAL_FIXTURES_DIR, describeWithRealFixtures, readRealFixture } from '../../test/fixtures.js';

/** kind, bus, xid or severity of each event: what a table row compares. */
const brief = (text: string): Array<[string, string | null, number | string | undefined]> =>
  parseKernelEvents(text).map((e) => [e.kind, e.busId, e.xid ?? e.severity]);

describe('parseKernelEvents: PCIe AER messages', () => {
  // Each line in a layout the kernel prints; the sources are named where they were read.
  it.each<[string, string, Array<[string, string | null, number | string | undefined]>]>([
    [
      '5.x "error received: <source>" names the device that sent the error, not the port',
      'pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0',
      [['aer', '0000:3B:00.0', 'fatal']],
    ],
    [
      '6.x "error message received from" (Red Hat KB 7128107)',
      'kernel: pcieport 0000:00:1b.2: AER: Uncorrectable (Fatal) error message received from 0000:03:04.0',
      [['aer', '0000:03:04.0', 'fatal']],
    ],
    [
      '6.x correctable, "received from" without "message" (Red Hat KB 7128107)',
      'kernel: pcieport 0000:00:1b.2: AER: Correctable error received from 0000:03:04.0',
      [['aer', '0000:03:04.0', 'corrected']],
    ],
    [
      'Multiple … (Non-Fatal) in a syslog line (minisforum-docs/MS-02-Ultra#10)',
      'Sep 22 09:59:09 pve kernel: pcieport 0000:80:1b.4: AER: Uncorrectable (Non-Fatal) error message received from 0000:80:1b.4',
      [['aer', '0000:80:1B.4', 'uncorrected']],
    ],
    [
      'Multiple … (Fatal), non-zero domain (enjoy-digital/litex_m2sdr#156)',
      'pcieport 0004:00:00.0: AER: Multiple Uncorrectable (Fatal) error message received from 0004:00:00.0',
      [['aer', '0004:00:00.0', 'fatal']],
    ],
    [
      'RHEL 6 requester id=0008: bus 00, device 01, function 0 (Red Hat KB 56302)',
      'pcieport 0000:00:01.0: AER: Corrected error received: id=0008',
      [['aer', '0000:00:01.0', 'corrected']],
    ],
    [
      'RHEL 7 id=ae00 in the port’s 5-digit VMD domain (Red Hat KB 56302)',
      'Feb  5 15:41:33 hostname kernel: pcieport 10003:00:00.0: AER: Multiple Corrected error received: id=ae00',
      [['aer', '10003:AE:00.0', 'corrected']],
    ],
    [
      'PCIe Bus Error on the GPU itself, uncorrected',
      'nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)',
      [['aer', '0000:3B:00.0', 'uncorrected']],
    ],
    [
      'PCIe Bus Error, 6.x spelling (Red Hat KB 7128107)',
      'kernel: pcieport 0000:03:04.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Receiver ID)',
      [['aer', '0000:03:04.0', 'fatal']],
    ],
    [
      'PCIe Bus Error, RHEL 6 spelling with id=…(Transmitter ID) (Red Hat KB 56302)',
      'hpsa 0000:04:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, id=0400(Transmitter ID)',
      [['aer', '0000:04:00.0', 'corrected']],
    ],
    [
      'the device line details the error only',
      'nvidia 0000:3b:00.0:   device [10de:2330] error status/mask=00004000/00000000',
      [],
    ],
    [
      'the bit line details the error only',
      'pcieport 0000:03:04.0:    [ 5] SDES                   (First)',
      [],
    ],
    [
      'the agent line details the error only',
      'ath10k_pci 0000:07:00.0: AER:   Error of this Agent is reported first',
      [],
    ],
    [
      'DPC containment with no source: the port',
      'pcieport 0000:00:03.0: DPC: containment event, status:0x1f01 source:0x0000',
      [['aer', '0000:00:03.0', 'fatal']],
    ],
    [
      'DPC containment naming its source requester',
      'pcieport 0000:00:03.0: DPC: containment event, status:0x1f01 source:0x3b00',
      [['aer', '0000:3B:00.0', 'fatal']],
    ],
  ])('%s', (_name, line, expected) => {
    expect(brief(line)).toEqual(expected);
  });
});

describe('parseKernelEvents: devices leaving the bus', () => {
  it.each<[string, string, Array<[string, string | null, number | string | undefined]>]>([
    [
      'pciehp 5.x+: the slot’s port',
      'pcieport 0000:00:03.0: pciehp: Slot(3): Link Down',
      [['removed', '0000:00:03.0', undefined]],
    ],
    [
      'pciehp 4.x',
      'pciehp 0000:00:03.0:pcie004: Slot(3): Card not present',
      [['removed', '0000:00:03.0', undefined]],
    ],
    [
      'pciehp 3.x "slot(6): Link Down event" (lnls-dig/bpm-gw#73)',
      '[Ter Set 19 06:01:41 2017] pciehp 0000:02:05.0:pcie24: slot(6): Link Down event',
      [['removed', '0000:02:05.0', undefined]],
    ],
    [
      'pciehp 3.x "Card not present on Slot(0)"',
      'pciehp 0000:00:1c.0:pcie04: Card not present on Slot(0)',
      [['removed', '0000:00:1C.0', undefined]],
    ],
    ['a link coming up is no removal', 'pcieport 0000:00:03.0: pciehp: Slot(3): Link Up', []],
    ['a card arriving is no removal', 'pcieport 0000:00:03.0: pciehp: Slot(3): Card present', []],
    [
      'the PCI core removing the device',
      'pci 0000:3b:00.0: Removing from iommu group 42',
      [['removed', '0000:3B:00.0', undefined]],
    ],
    ['a device added is no removal', '[    9.753113] pci 0000:85:0e.6: Adding to iommu group 100', []],
    [
      'a device that no longer answers config reads',
      'nvidia 0000:3b:00.0: Unable to change power state from D3cold to D0, device inaccessible',
      [['removed', '0000:3B:00.0', undefined]],
    ],
    [
      'NVRM "GPU at PCI:…" fallen off the bus: Xid 79 inferred, and removed',
      'NVRM: GPU at PCI:0000:3b:00: GPU has fallen off the bus.',
      [
        ['xid', '0000:3B:00.0', 79],
        ['removed', '0000:3B:00.0', undefined],
      ],
    ],
    [
      'an Xid 79 line is the XID and the removal',
      'NVRM: Xid (PCI:0000:91:00): 79, pid=1, GPU has fallen off the bus.',
      [
        ['xid', '0000:91:00.0', 79],
        ['removed', '0000:91:00.0', undefined],
      ],
    ],
    [
      'NVSwitch SXids are not GPU XIDs',
      'nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 63 LTSSM Fault Up',
      [],
    ],
  ])('%s', (_name, line, expected) => {
    expect(brief(line)).toEqual(expected);
  });

  it('reports a GPU falling off once however often the driver repeats it', () => {
    const line = 'NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.\n';
    expect(brief(`NVRM: Xid (PCI:0000:02:00): 79, pid=1\n${line.repeat(1000)}`)).toEqual([
      ['xid', '0000:02:00.0', 79],
      ['removed', '0000:02:00.0', undefined],
    ]);
  });

  it('still reports each other XID of a fallen GPU', () => {
    const text = 'NVRM: Xid (PCI:0000:02:00): 79, pid=1\nNVRM: Xid (PCI:0000:02:00): 79, pid=1\n';
    expect(brief(text)).toEqual([
      ['xid', '0000:02:00.0', 79],
      ['removed', '0000:02:00.0', undefined],
      ['xid', '0000:02:00.0', 79],
    ]);
  });

  it('a fallen-off message naming no GPU is one removal of an unknown device', () => {
    expect(brief('NVRM: GPU has fallen off the bus.\nNVRM: GPU has fallen off the bus.\n')).toEqual([
      ['removed', null, undefined],
    ]);
  });
});

describe('KernelLogScanner: line formats', () => {
  it('reads a /dev/kmsg record and ignores its dictionary lines', () => {
    const scanner = new KernelLogScanner();
    expect(
      scanner.push('3,1234,5678901,-;pcieport 0000:00:01.0: AER: Corrected error received: 0000:3b:00.0'),
    ).toEqual([
      {
        kind: 'aer',
        busId: '0000:3B:00.0',
        severity: 'corrected',
        at: null,
        line: 'pcieport 0000:00:01.0: AER: Corrected error received: 0000:3b:00.0',
      },
    ]);
    // The dictionary names the port; it must not read as a message (nor a continuation).
    expect(scanner.push(' SUBSYSTEM=pci')).toEqual([]);
    expect(scanner.push(' DEVICE=+pci:0000:00:01.0 pci 0000:3b:00.0: Removing from iommu group 1')).toEqual(
      [],
    );
  });

  it('decodes a record’s \\xNN escapes: line breaks split it, UTF-8 bytes join up', () => {
    const record =
      '4,77,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: (PCI ID: 10de:26b5) installed in this system has\\x0aNVRM: fallen off the bus and is not responding to commands \\xc3\\xa9 \\x5c.';
    const events = new KernelLogScanner().push(record);
    expect(events.map((e) => [e.kind, e.busId, e.xid])).toEqual([
      ['xid', '0000:B3:00.0', 79],
      ['removed', '0000:B3:00.0', undefined],
    ]);
    expect(events[0]?.line).toBe('NVRM: fallen off the bus and is not responding to commands é \\.');
  });

  it('accepts records with extra header fields (caller ids of newer kernels)', () => {
    expect(brief('6,5,6,-,caller=T1;pci 0000:3b:00.0: Removing from iommu group 3')).toEqual([
      ['removed', '0000:3B:00.0', undefined],
    ]);
  });

  it.each([
    ['dmesg --time-format=iso', '2024-11-15T12:02:03,470068+00:00 ', '2024-11-15T12:02:03.470Z'],
    ['dmesg -T', '[Sun Feb 23 16:24:18 2025] ', '2025-02-23T16:24:18.000Z'],
    ['dmesg -x', 'kern  :err   : 2025-01-21T02:21:33,498559+02:00 ', '2025-01-21T00:21:33.498Z'],
    ['dmesg (uptime)', '[ 1234.567890] ', null],
    ['dmesg -r', '<3>[ 1234.567890] ', null],
    ['journalctl -k', 'Feb 05 15:41:33 host kernel: ', null],
  ])('%s: the time of the line, or null', (_name, prefix, at) => {
    const [event] = parseKernelEvents(`${prefix}pci 0000:3b:00.0: Removing from iommu group 3`);
    expect(event).toMatchObject({ kind: 'removed', busId: '0000:3B:00.0', at });
  });

  it('a dmesg continuation line has the time of its record', () => {
    const events = parseKernelEvents(
      [
        '[Sun Feb 23 16:24:18 2025] NVRM: The NVIDIA GPU 0000:b3:00.0',
        '                           NVRM: (PCI ID: 10de:2330) installed in this system has',
        '                           NVRM: fallen off the bus and is not responding to commands.',
      ].join('\n'),
    );
    expect(events.map((e) => [e.kind, e.busId, e.at])).toEqual([
      ['xid', '0000:B3:00.0', '2025-02-23T16:24:18.000Z'],
      ['removed', '0000:B3:00.0', '2025-02-23T16:24:18.000Z'],
    ]);
  });

  it('kmsgSequence reads the sequence number of a record only', () => {
    expect(kmsgSequence('6,1234,5678901,-;text')).toBe(1234);
    expect(kmsgSequence('[ 1.0] 6,1234,5678901,-;text')).toBeNull();
    expect(kmsgSequence('garbage')).toBeNull();
  });

  it('the synthetic log of testing.ts gives the XIDs parseXidEvents finds, plus the removals', () => {
    expect(brief(KMSG)).toEqual([
      ['xid', '0000:27:00.0', 13],
      ['xid', '0000:2A:00.0', 79],
      ['removed', '0000:2A:00.0', undefined],
      ['xid', '0000:B3:00.0', 79],
      ['removed', '0000:B3:00.0', undefined],
    ]);
  });
});

/** A scanner that also records what it ignored. */
function scannerWithIgnored(): { scanner: KernelLogScanner; ignored: KernelLogIgnoredReason[] } {
  const ignored: KernelLogIgnoredReason[] = [];
  return { scanner: new KernelLogScanner({ onIgnored: (reason) => ignored.push(reason) }), ignored };
}

/** The events of /dev/kmsg reads, as the agent's follower hands them on. */
const fromRecords = (...records: string[]): Array<[string, string | null, number | string | undefined]> => {
  const scanner = new KernelLogScanner();
  return records.flatMap((r) => scanner.pushRecord(r)).map((e) => [e.kind, e.busId, e.xid ?? e.severity]);
};

/**
 * Hand-written kernel messages in the real drivers' layouts (bus ids and pids made up), so that
 * the anchoring is tested without ../shared: each gives the events beside it.
 */
const KERNEL_MESSAGES: ReadonlyArray<[string, Array<[string, string | null, number | string | undefined]>]> =
  [
    [
      "NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x1 partition 2, subpartition 1.",
      [['xid', '0000:3B:00.0', 48]],
    ],
    [
      "NVRM: Xid (PCI:0000:5e:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
      [
        ['xid', '0000:5E:00.0', 79],
        ['removed', '0000:5E:00.0', undefined],
      ],
    ],
    [
      'NVRM: GPU 0000:61:00.0: GPU has fallen off the bus.',
      [
        ['xid', '0000:61:00.0', 79],
        ['removed', '0000:61:00.0', undefined],
      ],
    ],
    [
      'NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:2330) installed in this system has\nNVRM: fallen off the bus and is not responding to commands.',
      [
        ['xid', '0000:B3:00.0', 79],
        ['removed', '0000:B3:00.0', undefined],
      ],
    ],
    [
      'pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:19:00.0',
      [['aer', '0000:19:00.0', 'fatal']],
    ],
    ['pci 0000:1a:00.0: Removing from iommu group 27', [['removed', '0000:1A:00.0', undefined]]],
  ];

/** `text` as /dev/kmsg serves it: bytes below 0x20, from 0x7f, and `\` written as `\xNN`. */
function kmsgEscape(text: string): string {
  return [...new TextEncoder().encode(text)]
    .map((b) =>
      b < 0x20 || b >= 0x7f || b === 0x5c ? `\\x${b.toString(16).padStart(2, '0')}` : String.fromCharCode(b),
    )
    .join('');
}

/** One /dev/kmsg read: `priority` is facility × 8 + level. */
const record = (priority: number, text: string, flags = '-'): string =>
  `${priority},7,1000,${flags};${kmsgEscape(text)}\n SUBSYSTEM=pci\n DEVICE=+pci:0000:00:01.0\n`;

describe('KernelLogScanner: only the kernel’s own messages count (issue 26)', () => {
  it('the three forged lines of the issue give no XID and no removal', () => {
    const { scanner, ignored } = scannerWithIgnored();
    const events = [
      // User space writes `myapp: …` to /dev/kmsg: the kernel gives it facility 1 (PRI 14).
      record(14, 'myapp: NVRM: Xid (PCI:0000:3b:00): 79'),
      // The kernel's own warning, naming a file the tenant chose.
      record(4, "process '/tmp/NVRM: Xid (PCI:0000:5e:00): 48, DBE' started with executable stack"),
      // A removal written from user space, and the same inside a kernel message.
      record(12, 'pci 0000:3b:00.0: Removing from iommu group 27'),
      record(
        4,
        "process '/tmp/pci 0000:3b:00.0: Removing from iommu group 27' started with executable stack",
      ),
    ].flatMap((r) => scanner.pushRecord(r));
    expect(events).toEqual([]);
    expect(ignored).toEqual(['facility', 'facility']);
  });

  it.each(KERNEL_MESSAGES)('the real layout still counts in a kernel record: %s', (message, expected) => {
    expect(fromRecords(record(3, message))).toEqual(expected);
  });

  it.each(KERNEL_MESSAGES)('and gives nothing in a user record, whatever its facility: %s', (message) => {
    // user (1), daemon (3), local7 (23), and 125: `<1000>` written to /dev/kmsg.
    for (const facility of [1, 3, 23, 125]) {
      const { scanner, ignored } = scannerWithIgnored();
      expect(scanner.pushRecord(record(facility * 8 + 3, message))).toEqual([]);
      expect(ignored).toEqual(['facility']);
    }
  });

  it.each(KERNEL_MESSAGES)('nor anywhere but at the start of a kernel message: %s', (message) => {
    for (const wrapped of [
      `myapp: ${message}`,
      ` ${message}`,
      `process '/tmp/${message}' started with executable stack`,
      `usb 1-1: Product: ${message}`,
      `input: ${message} as /devices/virtual/input/input5`,
    ]) {
      expect([wrapped, fromRecords(record(6, wrapped))]).toEqual([wrapped, []]);
    }
  });

  it('a line break in a string the kernel prints starts no message', () => {
    // The NVIDIA driver prints the version string a client sends, line breaks and all.
    const apiMismatch = [
      'NVRM: API mismatch: the client has the version 1.0',
      'NVRM: Xid (PCI:0000:3b:00): 79, pid=1, forged',
      'NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.',
      'pci 0000:3b:00.0: Removing from iommu group 27, but',
      'NVRM: this kernel module has the version 570.158.01.  Please',
    ].join('\n');
    const fileName = "process '/tmp/x\nNVRM: Xid (PCI:0000:5e:00): 48, DBE' started with executable stack";
    expect(fromRecords(record(4, apiMismatch), record(4, fileName))).toEqual([]);
    // The same as dmesg prints it: the later lines indented under the first.
    const dmesg = `[ 9.000001] ${apiMismatch.split('\n').join('\n             ')}`;
    expect(brief(dmesg)).toEqual([]);
  });

  it('a process name (comm, 15 bytes) at the start of a kernel message forges nothing', () => {
    expect(
      fromRecords(
        record(6, 'NVRM: Xid (PCI:[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5e0c1a40 error 6'),
        record(4, 'pci 0000:3b:00.[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5e0c1a40 error 6'),
        record(4, 'NVRM: Xid (PCI: invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0'),
        record(3, 'Out of memory: Killed process 4242 (NVRM: Xid (PCI:) total-vm:1000kB, anon-rss:10kB'),
        record(3, 'INFO: task NVRM: Xid (PCI::4242 blocked for more than 120 seconds.'),
        record(4, 'x 0000:3b:00.0: page allocation failure: order:0, mode:0x40cc0(GFP_KERNEL|__GFP_COMP)'),
      ),
    ).toEqual([]);
  });

  it('a "fallen off the bus" needs its own GPU: none is borrowed from the lines above', () => {
    const text = [
      '[ 1.000001] NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d',
      '[ 1.000002] NVRM: API mismatch: the client has the version fallen off the bus, but',
      '[ 1.000003] NVRM: fallen off the bus and is not responding to commands.',
    ].join('\n');
    expect(brief(text)).toEqual([]);
  });

  it('the wrapped message counts only whole, in order, from its own first line', () => {
    const [first, second, third] = [
      'NVRM: The NVIDIA GPU 0000:b3:00.0',
      'NVRM: (PCI ID: 10de:2330) installed in this system has',
      'NVRM: fallen off the bus and is not responding to commands.',
    ];
    expect(fromRecords(record(4, [first, third].join('\n')))).toEqual([]);
    expect(fromRecords(record(4, [`${first} x`, second, third].join('\n')))).toEqual([]);
    expect(fromRecords(record(4, first), record(12, second), record(4, third))).toEqual([]);
    // Syslog writes each line of the record as a line of its own.
    const syslog = [first, second, third].map((l) => `Feb  5 15:41:33 host kernel: [ 1843.308145] ${l}`);
    expect(brief(syslog.join('\n'))).toEqual([
      ['xid', '0000:B3:00.0', 79],
      ['removed', '0000:B3:00.0', undefined],
    ]);
  });

  it('an older kernel’s continuation fragment (flag +) starts mid-message: ignored', () => {
    const { scanner, ignored } = scannerWithIgnored();
    expect(scanner.pushRecord(record(4, 'pci 0000:3b:00.0: Removing from iommu group 27', '+'))).toEqual([]);
    expect(ignored).toEqual(['fragment']);
    // The first fragment (c) starts a message like any record.
    expect(scanner.pushRecord(record(4, 'pci 0000:3b:00.0: Removing from iommu group 27', 'c'))).toHaveLength(
      1,
    );
  });

  it('pushRecord reads records only: dmesg text from the device is not a kernel message', () => {
    expect(fromRecords('[ 1.0] pci 0000:3b:00.0: Removing from iommu group 27\n')).toEqual([]);
  });

  it('a record of another facility, written any way, never counts (property)', () => {
    const pieces = fc.constantFrom(
      ...KERNEL_MESSAGES.map(([message]) => message),
      'NVRM: ',
      '\n',
      ' ',
      'pci 0000:3b:00.0: ',
    );
    const text = fc
      .array(fc.oneof(pieces, fc.string({ maxLength: 8 })), { maxLength: 6 })
      .map((p) => p.join(''));
    fc.assert(
      fc.property(fc.integer({ min: 8, max: 2047 }), text, (priority, message) => {
        expect(fromRecords(record(priority, message))).toEqual([]);
      }),
    );
  });

  it('text the kernel quotes inside its own message never counts (property)', () => {
    const pieces = fc.constantFrom(...KERNEL_MESSAGES.map(([message]) => message), '\n', ' ', "'");
    const quoted = fc
      .array(fc.oneof(pieces, fc.string({ maxLength: 8 })), { maxLength: 6 })
      .map((p) => p.join(''));
    const comm = fc.string({ maxLength: 15 });
    fc.assert(
      fc.property(quoted, comm, (name, process) => {
        const messages = [
          `process '${name}' started with executable stack`,
          `${process}[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5e0c1a40 error 6 in ${name}`,
          `${process} invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0`,
          `NVRM: API mismatch: the client has the version ${name}, but`,
        ];
        expect(fromRecords(...messages.map((m) => record(4, m)))).toEqual([]);
      }),
    );
  });
});

describe('KernelLogScanner: a text line counts unless it says it is not the kernel’s', () => {
  const XID = 'NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.';

  it.each([
    ['dmesg -x, facility user', `user  :warn  : [ 12.345678] ${XID}`],
    ['dmesg -x, facility daemon, iso time', `daemon:err   : 2025-01-21T02:21:33,498559+00:00 ${XID}`],
    ['dmesg -r, priority 14 (user, info)', `<14>[ 12.345678] ${XID}`],
    ['a /dev/kmsg record of facility 1', `14,1,2,-;${XID}`],
    ['a syslog line of another program', `Feb  5 15:41:33 host myapp[123]: ${XID}`],
    ['a journal line of another program', `Feb 05 15:41:33 host NVRM: Xid (PCI:0000:3b:00): 79, x`],
  ])('%s: ignored and counted', (_name, line) => {
    const { scanner, ignored } = scannerWithIgnored();
    expect(scanner.push(line)).toEqual([]);
    // Its continuation lines go with it.
    expect(scanner.push(`               ${XID}`)).toEqual([]);
    expect(ignored).toEqual(['facility']);
  });

  it.each([
    ['dmesg -x, facility kern', `kern  :warn  : [ 12.345678] ${XID}`],
    ['dmesg -r, priority 4', `<4>[ 12.345678] ${XID}`],
    ['a /dev/kmsg record of facility 0', `4,1,2,-;${XID}`],
    ['a syslog line of the kernel, with its uptime', `Feb  5 15:41:33 host kernel: [ 1849.889955] ${XID}`],
    ['journalctl -o short-iso', `2025-01-21T02:21:33+0000 host kernel: ${XID}`],
    ['journalctl -o short-monotonic', `[ 1849.889955] host kernel: ${XID}`],
    ['plain dmesg (no facility: trusted)', `[ 12.345678] ${XID}`],
    ['dmesg with the caller id', `[   12.345678] [  T4242] ${XID}`],
  ])('%s: counted', (_name, line) => {
    const { scanner, ignored } = scannerWithIgnored();
    expect(scanner.push(line).map((e) => e.kind)).toEqual(['xid', 'removed']);
    expect(ignored).toEqual([]);
  });

  it.each<[string, string, string, string | null, string]>([
    ['plain', 'NVRM: x', 'unstated', null, 'NVRM: x'],
    ['dmesg -T', '[Sun Feb 23 16:24:18 2025] NVRM: x', 'unstated', '2025-02-23T16:24:18.000Z', 'NVRM: x'],
    ['iso', '2024-11-15T12:02:03,470068+00:00 NVRM: x', 'unstated', '2024-11-15T12:02:03.470Z', 'NVRM: x'],
    [
      '-x',
      'kern  :warn  : 2025-01-21T02:21:33,498559+02:00 NVRM: x',
      'kernel',
      '2025-01-21T00:21:33.498Z',
      'NVRM: x',
    ],
    ['uptime', '[ 1843.308145] NVRM: x', 'unstated', null, 'NVRM: x'],
    ['reltime', '[Feb23 16:24] NVRM: x', 'unstated', null, 'NVRM: x'],
    ['a message that starts with a bracket', '[drm] NVRM: x', 'unstated', null, '[drm] NVRM: x'],
    [
      'a time later in the line',
      'NVRM: x 2024-11-15T12:02:03',
      'unstated',
      null,
      'NVRM: x 2024-11-15T12:02:03',
    ],
    [
      'no facility word',
      'a:b:c: 2024-11-15T12:02:03 NVRM: x',
      'unstated',
      null,
      'a:b:c: 2024-11-15T12:02:03 NVRM: x',
    ],
    [
      'dmesg iso, a message like `word word: `',
      '2024-11-15T12:02:03 usb 1-1: new device',
      'unstated',
      '2024-11-15T12:02:03.000Z',
      'usb 1-1: new device',
    ],
    ['syslog of the kernel', 'Feb  5 15:41:33 host kernel: NVRM: x', 'kernel', null, 'NVRM: x'],
    ['syslog of a program', 'Feb  5 15:41:33 host sshd[12]: NVRM: x', 'other', null, 'NVRM: x'],
    ['a copied syslog message', 'kernel: NVRM: x', 'kernel', null, 'NVRM: x'],
    ['-r of user and -x of kern', '<14>kern  :warn  : NVRM: x', 'other', null, 'NVRM: x'],
  ])('kernelTextLine, %s', (_name, line, origin, at, message) => {
    expect(kernelTextLine(line)).toEqual({ origin, at, message });
  });
});

describe('KernelLogScanner: hostile input', () => {
  it('cuts an event’s line to MAX_EVENT_LINE characters', () => {
    const [event] = parseKernelEvents(`pci 0000:3b:00.0: Removing from iommu group 3 ${'x'.repeat(100_000)}`);
    expect(event?.line).toHaveLength(MAX_EVENT_LINE + 1);
  });

  it('never throws on arbitrary lines, and every event is well formed', () => {
    const BUS = /^[0-9A-F]{4,8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$/;
    const pieces = fc.constantFrom(
      'NVRM: Xid (PCI:0000:91:00): 79',
      'fallen off the bus',
      'NVRM: GPU 0000:91:00.0: ',
      'AER: ',
      'Uncorrected (Fatal) error received: ',
      '0000:3b:00.0',
      ': PCIe Bus Error: severity=',
      '6,1,2,-;',
      '\\x0a',
      '\\xff',
      ' ',
      'Slot(3): Link Down',
    );
    const line = fc
      .array(fc.oneof(pieces, fc.string({ maxLength: 8 })), { maxLength: 8 })
      .map((p) => p.join(''));
    fc.assert(
      fc.property(fc.array(line, { maxLength: 20 }), (lines) => {
        const scanner = new KernelLogScanner();
        for (const event of lines.flatMap((l) => scanner.push(l))) {
          expect(['xid', 'aer', 'removed']).toContain(event.kind);
          if (event.busId !== null) expect(event.busId).toMatch(BUS);
          expect(event.line.length).toBeLessThanOrEqual(MAX_EVENT_LINE + 1);
        }
      }),
    );
  });
});

describeWithRealFixtures('parseKernelEvents (real kernel logs)', () => {
  const fixtures = (): string[] =>
    readdirSync(REAL_FIXTURES_DIR).filter((name) => /^kmsg-.*\.txt$/.test(name));

  it('finds in every recorded log one XID per Xid line the driver printed, as parseXidEvents does', () => {
    const names = fixtures();
    expect(names.length).toBeGreaterThanOrEqual(7);
    for (const name of names) {
      const text = readRealFixture(name);
      const events = parseKernelEvents(text).filter((e) => e.kind === 'xid');
      const printed = text.split('\n').filter((line) => line.includes('NVRM: Xid (PCI:')).length;
      expect([name, events.filter((e) => !e.inferred).length]).toEqual([name, printed]);
      const xids = events.map((e) => [e.busId, e.xid, e.at]);
      expect([name, xids]).toEqual([name, parseXidEvents(text).map((e) => [e.bus_id, e.xid, e.at])]);
    }
  });

  it('Xid 79 with its echo: one XID, one removal, and the NVSwitch SXids ignored', () => {
    expect(brief(readRealFixture('kmsg-xid-4.txt'))).toEqual([
      ['xid', '0000:91:00.0', 79],
      ['removed', '0000:91:00.0', undefined],
    ]);
  });

  it('the open driver’s wrapped message: Xid 79 inferred and the removal', () => {
    const events = parseKernelEvents(readRealFixture('kmsg-xid-5.txt'));
    expect(events.map((e) => [e.kind, e.busId, e.xid])).toEqual([
      ['xid', '0000:B3:00.0', 79],
      ['removed', '0000:B3:00.0', undefined],
    ]);
    expect(events[0]?.line).toMatch(/fallen off the bus/);
  });

  it('a log of GPU exceptions and peermem errors has XIDs only', () => {
    for (const name of [
      'kmsg-xid-1.txt',
      'kmsg-xid-2.txt',
      'kmsg-xid-3.txt',
      'kmsg-xid-6.txt',
      'kmsg-xid-7.txt',
    ]) {
      const kinds = new Set(parseKernelEvents(readRealFixture(name)).map((e) => e.kind));
      expect([name, [...kinds]]).toEqual([name, ['xid']]);
    }
  });

  /**
   * A dmesg log as the /dev/kmsg reads it came from, of `priority`: each message one record,
   * the lines dmesg indents under it joined back with escaped line breaks.
   */
  function asRecords(dmesg: string, priority: number): string[] {
    const messages: string[] = [];
    for (const line of dmesg.split('\n').filter((l) => l.trim() !== '')) {
      if (/^\s/.test(line) && messages.length > 0) messages.push(`${messages.pop() ?? ''}\n${line.trim()}`);
      else messages.push(kernelTextLine(line).message);
    }
    return messages.map((message, n) => record(priority, message).replace(/^\d+,7,/, `${priority},${n},`));
  }

  it('every log as kernel /dev/kmsg records gives the same events; as user records, none', () => {
    for (const name of fixtures()) {
      const dmesg = readRealFixture(name);
      const events = brief(dmesg);
      expect([name, fromRecords(...asRecords(dmesg, 4))]).toEqual([name, events]);
      expect([name, fromRecords(...asRecords(dmesg, 12))]).toEqual([name, []]);
    }
  });

  it('every log read again as user-space lines (dmesg -x, facility user) gives nothing', () => {
    for (const name of fixtures()) {
      const lines = readRealFixture(name)
        .split('\n')
        .map((line) => (/^\s/.test(line) ? line : `user  :warn  : ${kernelTextLine(line).message}`));
      expect([name, brief(lines.join('\n'))]).toEqual([name, []]);
    }
  });
});

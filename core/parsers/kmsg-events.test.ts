import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { readdirSync } from 'node:fs';
import { KernelLogScanner, MAX_EVENT_LINE, kmsgSequence, parseKernelEvents } from './kmsg-events.js';
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

  it('finds in every recorded log exactly the XIDs parseXidEvents finds', () => {
    const names = fixtures();
    expect(names.length).toBeGreaterThanOrEqual(7);
    for (const name of names) {
      const text = readRealFixture(name);
      const xids = parseKernelEvents(text)
        .filter((e) => e.kind === 'xid')
        .map((e) => [e.busId, e.xid, e.at]);
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

  it('the same log as /dev/kmsg records gives the same events', () => {
    // kmsg-xid-4 has uptime stamps: `[6781741.548768] text` becomes `4,<n>,6781741548768,-;text`.
    const dmesg = readRealFixture('kmsg-xid-4.txt');
    const records = dmesg
      .split('\n')
      .filter((line) => line.startsWith('['))
      .map((line, n) => {
        const close = line.indexOf('] ');
        const micros = line.slice(1, close).trim().replace('.', '');
        return `4,${n},${micros},-;${line.slice(close + 2)}\n SUBSYSTEM=pci`;
      })
      .join('\n');
    expect(brief(records)).toEqual(brief(dmesg));
    // kmsg-xid-5's wrapped message is one record whose line breaks are escaped.
    const wrapped = readRealFixture('kmsg-xid-5.txt').split('\n').slice(0, 3);
    const record = `4,9,1843308145,-;${wrapped.map((l) => l.replace(/^\[[^\]]{1,20}\]/, '').trim()).join('\\x0a')}`;
    expect(brief(record)).toEqual([
      ['xid', '0000:B3:00.0', 79],
      ['removed', '0000:B3:00.0', undefined],
    ]);
  });
});

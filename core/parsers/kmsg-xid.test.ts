import { describe, expect, it } from '@jest/globals';
import type { Gpu } from '../../contracts/index.js';
import { attachXidEvents, parseXidEvents } from './kmsg-xid.js';
import { emptyGpu } from './nvidia-smi/index.js';
import { KMSG } from './testing.js';
import { describeWithRealFixtures, readRealFixture } from '../../test/fixtures.js';

const read = readRealFixture;

describe('parseXidEvents (a synthetic log)', () => {
  const events = parseXidEvents(KMSG);

  it('reads the Xid lines of dmesg -T and of --time-format=iso, bus ids normalised', () => {
    expect(events.slice(0, 2)).toEqual([
      expect.objectContaining({ bus_id: '0000:27:00.0', xid: 13, at: '2025-02-23T16:24:18.000Z', line: 1 }),
      expect.objectContaining({ bus_id: '0000:2A:00.0', xid: 79, at: '2025-01-21T00:21:33.498Z', line: 2 }),
    ]);
  });

  it('counts Xid 79 and its "fallen off the bus" echo once, and infers 79 from the bare message', () => {
    expect(events.map((e) => [e.bus_id, e.xid, e.inferred ?? false])).toEqual([
      ['0000:27:00.0', 13, false],
      ['0000:2A:00.0', 79, false],
      ['0000:B3:00.0', 79, true],
    ]);
    // The line that completes the open driver's wrapped message: its third.
    expect(events[2]).toMatchObject({ line: 7, at: null });
  });

  it('infers one event per GPU however often the driver repeats the message', () => {
    const line = 'NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.\n';
    expect(parseXidEvents(line.repeat(1000))).toHaveLength(1);
  });
});

describe('parseXidEvents counts what the agent counts (issue 26)', () => {
  it('ignores user-space lines and the driver prefix anywhere but at the start of a message', () => {
    const text = [
      'user  :warn  : 2025-01-21T02:21:33,498559+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid=1, x',
      '14,3,4,-;NVRM: Xid (PCI:0000:3b:00): 48, pid=1, x',
      "[ 12.000001] process '/tmp/NVRM: Xid (PCI:0000:5e:00): 48, DBE' started with executable stack",
      '[ 12.000002] NVRM: API mismatch: the client has the version 1.0, but',
      '              NVRM: Xid (PCI:0000:3b:00): 79, pid=1, forged in the version string',
      '[ 12.000003] NVRM: Xid (PCI:0000:aa:00): 13, pid=2, name=python3, Graphics Exception',
    ].join('\n');
    expect(parseXidEvents(text).map((e) => [e.bus_id, e.xid, e.line])).toEqual([['0000:AA:00.0', 13, 6]]);
  });
});

describeWithRealFixtures('parseXidEvents (real kernel logs)', () => {
  it('reads dmesg -T lines with bus id normalised to upper case with function', () => {
    const events = parseXidEvents(read('kmsg-xid-1.txt'));
    expect(events[0]).toMatchObject({
      bus_id: '0000:9B:00.0',
      xid: 119,
      at: '2025-02-23T16:24:18.000Z',
      line: 3,
    });
    expect(events[0]?.inferred).toBeUndefined();
  });

  it('reads iso timestamps and several XIDs', () => {
    const events = parseXidEvents(read('kmsg-xid-2.txt'));
    expect(events.slice(0, 3).map((e) => [e.xid, e.at])).toEqual([
      [48, '2024-11-15T12:02:03.470Z'],
      [63, '2024-11-15T12:02:03.498Z'],
      [94, '2024-11-15T12:02:03.506Z'],
    ]);
  });

  it('Xid 79 with its "fallen off the bus" echo counts once; raw uptime gives at null', () => {
    const events = parseXidEvents(read('kmsg-xid-4.txt'));
    expect(events).toEqual([expect.objectContaining({ bus_id: '0000:91:00.0', xid: 79, at: null })]);
  });

  it('infers Xid 79 from the multi-line "fallen off the bus" message with no Xid line', () => {
    expect(parseXidEvents(read('kmsg-xid-5.txt'))).toEqual([
      expect.objectContaining({ bus_id: '0000:B3:00.0', xid: 79, at: null, line: 3, inferred: true }),
    ]);
  });

  it('keeps non-zero PCI domains (GB200)', () => {
    const buses = new Set(parseXidEvents(read('kmsg-xid-6.txt')).map((e) => e.bus_id));
    expect([...buses].sort()).toEqual(['0008:01:00.0', '0009:01:00.0', '0018:01:00.0', '0019:01:00.0']);
  });

  it('ignores SXid (NVSwitch) and unrelated lines', () => {
    const text = '[1.0] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal\n[2.0] eth0: link up\n';
    expect(parseXidEvents(text)).toEqual([]);
  });
});

describe('attachXidEvents', () => {
  const gpu = (index: number, bus: string | null): Gpu => ({ ...emptyGpu(index), bus_id: bus });

  it('attaches by normalised bus id and reports the unmatched', () => {
    const gpus = [gpu(0, '0000:19:00.0'), gpu(1, '00000000:91:00.0')];
    const events = parseXidEvents(
      '[Mon Jan  6 10:00:00 2025] NVRM: Xid (PCI:0000:91:00): 79, pid=1, GPU has fallen off the bus.\n[ 5.0] NVRM: Xid (PCI:0000:aa:00): 13, pid=2\n',
    );
    const { gpus: out, unmatched } = attachXidEvents(gpus, events);
    expect(out[1]?.xid_events).toEqual([{ xid: 79, at: '2025-01-06T10:00:00.000Z' }]);
    expect(out[0]?.xid_events).toEqual([]);
    expect(unmatched.map((e) => e.bus_id)).toEqual(['0000:AA:00.0']);
    expect(gpus[1]?.xid_events).toEqual([]);
  });
});

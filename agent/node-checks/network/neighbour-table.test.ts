import { describe, expect, it } from '@jest/globals';
import { neighbourEntry } from './neighbour-table.js';
import { ARP_HEADER, arpLine } from './testing.js';

// Recorded in a network namespace: the gateway resolved (0x2), then after the link lost its
// carrier and a connection attempt (0x0, no address).
const RESOLVED = [
  'IP address       HW type     Flags       HW address            Mask     Device',
  '10.213.250.2     0x1         0x2         fa:20:c4:a0:62:40     *        exa',
  '',
].join('\n');
const FAILED = [
  'IP address       HW type     Flags       HW address            Mask     Device',
  '10.213.250.2     0x1         0x0         00:00:00:00:00:00     *        exa',
  '',
].join('\n');

describe('neighbourEntry', () => {
  it('tells a complete entry from one being resolved or failed, and from none', () => {
    expect(neighbourEntry(RESOLVED, '10.213.250.2')).toEqual({ ok: true, state: 'complete', skipped: 0 });
    expect(neighbourEntry(RESOLVED, '10.213.250.2', 'exa')).toMatchObject({ state: 'complete' });
    expect(neighbourEntry(FAILED, '10.213.250.2', 'exa')).toMatchObject({ state: 'incomplete' });
    expect(neighbourEntry(RESOLVED, '10.213.250.1')).toMatchObject({ state: 'absent' });
    expect(neighbourEntry(`${ARP_HEADER}\n`, '10.213.250.2')).toMatchObject({ state: 'absent' });
  });

  it('looks on the route’s interface only, when given', () => {
    const table = [
      ARP_HEADER,
      arpLine('10.0.0.1', 0x2, '02:00:00:00:00:01', 'eth1'),
      arpLine('10.0.0.1', 0x0, '00:00:00:00:00:00', 'eth0'),
    ].join('\n');
    expect(neighbourEntry(table, '10.0.0.1', 'eth0')).toMatchObject({ state: 'incomplete' });
    expect(neighbourEntry(table, '10.0.0.1', 'eth1')).toMatchObject({ state: 'complete' });
    expect(neighbourEntry(table, '10.0.0.1')).toMatchObject({ state: 'complete' });
  });

  it('counts a permanent entry (0x6) as complete, and a complete flag with no address as not', () => {
    const table = [
      ARP_HEADER,
      arpLine('10.0.0.1', 0x6, '02:00:00:00:00:01', 'eth0'),
      arpLine('10.0.0.2', 0x2, '00:00:00:00:00:00', 'eth0'),
    ].join('\n');
    expect(neighbourEntry(table, '10.0.0.1')).toMatchObject({ state: 'complete' });
    expect(neighbourEntry(table, '10.0.0.2')).toMatchObject({ state: 'incomplete' });
  });

  it('skips and counts lines that are not entries, and refuses another file without throwing', () => {
    const table = [
      ARP_HEADER,
      'garbage',
      '10.0.0.1 0x1 2 02:00:00:00:00:01 * eth0',
      RESOLVED.split('\n')[1],
    ].join('\n');
    expect(neighbourEntry(table, '10.213.250.2')).toEqual({ ok: true, state: 'complete', skipped: 2 });
    expect(neighbourEntry('Iface\tDestination\n', '10.0.0.1')).toMatchObject({
      ok: false,
      error: expect.stringContaining('header'),
    });
    expect(neighbourEntry('', '10.0.0.1')).toMatchObject({ ok: false });
  });
});

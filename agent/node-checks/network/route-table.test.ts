import { describe, expect, it } from '@jest/globals';
import { ipv4OfWord, parseRouteTable } from './route-table.js';
import { ROUTE_HEADER, routeLine } from './testing.js';

// Recorded from a network namespace (`ip netns exec … cat /proc/net/route`): a default route
// through 10.213.250.2 at metric 0 and 50, a default route without a gateway (metric 3), an
// unreachable default (metric 10, interface `*`, RTF_REJECT), a /16 through the gateway and
// the connected /30. Tabs and trailing blanks as the kernel prints them.
const RECORDED = [
  'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT                                                       ',
  'exa\t00000000\t02FAD50A\t0003\t0\t0\t0\t00000000\t0\t0\t0                                                                                ',
  'exa\t00000000\t00000000\t0001\t0\t0\t3\t00000000\t0\t0\t0                                                                                ',
  '*\t00000000\t00000000\t0201\t0\t0\t10\t00000000\t0\t0\t0                                                                                 ',
  'exa\t00000000\t02FAD50A\t0003\t0\t0\t50\t00000000\t0\t0\t0                                                                               ',
  'exa\t0000630A\t02FAD50A\t0003\t0\t0\t5\t0000FFFF\t0\t0\t0                                                                                ',
  'exa\t00FAD50A\t00000000\t0001\t0\t0\t0\tFCFFFFFF\t0\t0\t0                                                                                ',
  '',
].join('\n');

describe('parseRouteTable', () => {
  it('reads the default routes through a gateway from a recorded table, lowest metric first', () => {
    expect(parseRouteTable(RECORDED)).toEqual({
      ok: true,
      defaults: [
        { iface: 'exa', gateway: '10.213.250.2', metric: 0 },
        { iface: 'exa', gateway: '10.213.250.2', metric: 50 },
      ],
      skipped: 0,
      firstSkipped: null,
    });
  });

  it('prefers the lowest metric, and among equal metrics the one the kernel lists first', () => {
    const table = [
      ROUTE_HEADER,
      routeLine({
        iface: 'wlan0',
        destination: '0.0.0.0',
        gateway: '192.168.1.1',
        flags: 0x3,
        metric: 600,
        mask: '0.0.0.0',
      }),
      routeLine({
        iface: 'eth1',
        destination: '0.0.0.0',
        gateway: '172.16.0.1',
        flags: 0x3,
        metric: 100,
        mask: '0.0.0.0',
      }),
      routeLine({
        iface: 'eth0',
        destination: '0.0.0.0',
        gateway: '10.0.0.1',
        flags: 0x3,
        metric: 100,
        mask: '0.0.0.0',
      }),
    ].join('\n');
    const parsed = parseRouteTable(table);
    expect(parsed.ok && parsed.defaults.map((d) => `${d.iface} ${d.gateway}`)).toEqual([
      'eth1 172.16.0.1',
      'eth0 10.0.0.1',
      'wlan0 192.168.1.1',
    ]);
  });

  it('has no default route when none goes through a gateway, or none is up', () => {
    const table = [
      ROUTE_HEADER,
      routeLine({
        iface: 'eth0',
        destination: '192.0.2.0',
        gateway: '0.0.0.0',
        flags: 0x1,
        mask: '255.255.255.0',
      }),
      routeLine({ iface: 'wg0', destination: '0.0.0.0', gateway: '0.0.0.0', flags: 0x1, mask: '0.0.0.0' }),
      // Through a gateway but not up (RTF_UP clear).
      routeLine({ iface: 'eth0', destination: '0.0.0.0', gateway: '192.0.2.1', flags: 0x2, mask: '0.0.0.0' }),
      // 0.0.0.0/1 is not the default route, whatever its destination.
      routeLine({
        iface: 'tun0',
        destination: '0.0.0.0',
        gateway: '10.8.0.1',
        flags: 0x3,
        mask: '128.0.0.0',
      }),
    ].join('\n');
    expect(parseRouteTable(table)).toEqual({ ok: true, defaults: [], skipped: 0, firstSkipped: null });
    expect(parseRouteTable(`${ROUTE_HEADER}\n`)).toMatchObject({ ok: true, defaults: [] });
  });

  it('skips and counts garbage lines, naming the first, and still reads the routes around them', () => {
    const table = [
      ROUTE_HEADER,
      'eth0\tZZZZZZZZ\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0',
      'eth0\t00000000',
      routeLine({ iface: 'eth0', destination: '0.0.0.0', gateway: '192.0.2.1', flags: 0x3, mask: '0.0.0.0' }),
      'eth0\t00000000\t010200C0\t0003\t0\t0\t-1\t00000000\t0\t0\t0',
      '\u0000\u0001 binary junk',
    ].join('\n');
    expect(parseRouteTable(table)).toEqual({
      ok: true,
      defaults: [{ iface: 'eth0', gateway: '192.0.2.1', metric: 0 }],
      skipped: 4,
      firstSkipped: 'line 2: destination "ZZZZZZZZ" is not a hex word',
    });
  });

  it('refuses a file that is not the table, with a one-line reason, without throwing', () => {
    expect(parseRouteTable('')).toEqual({ ok: false, error: 'empty (no header line)' });
    expect(
      parseRouteTable('IP address       HW type     Flags       HW address            Mask     Device\n'),
    ).toEqual({
      ok: false,
      error: 'header lacks Iface, Destination, Gateway, Metric: not a /proc/net/route table',
    });
    expect(parseRouteTable('Iface\tDestination\tGateway\tFlags\tMask\n')).toEqual({
      ok: false,
      error: 'header lacks Metric: not a /proc/net/route table',
    });
  });

  it('reads the columns by the header, not by position', () => {
    const table = 'Mask Metric Flags Gateway Destination Iface\n00000000 7 0003 0101A8C0 00000000 br0\n';
    expect(parseRouteTable(table)).toMatchObject({
      ok: true,
      defaults: [{ iface: 'br0', gateway: '192.168.1.1', metric: 7 }],
    });
  });

  it('writes a little-endian word as dotted IPv4', () => {
    expect(ipv4OfWord(0x010200c0)).toBe('192.0.2.1');
    expect(ipv4OfWord(0xffffffff)).toBe('255.255.255.255');
    expect(ipv4OfWord(0)).toBe('0.0.0.0');
  });
});

import { describe, expect, it } from '@jest/globals';
import { formatEndpoint, parseEndpoint } from './targets.js';

describe('endpoints', () => {
  it('reads IPv4 host:port and bracketed IPv6 [host]:port, and writes them back', () => {
    expect(parseEndpoint('10.0.0.1:443')).toEqual({ host: '10.0.0.1', port: 443 });
    expect(parseEndpoint('[fd00::1]:6443')).toEqual({ host: 'fd00::1', port: 6443 });
    expect(parseEndpoint('127.0.0.1:1')).toEqual({ host: '127.0.0.1', port: 1 });
    expect(formatEndpoint({ host: 'fd00::1', port: 6443 })).toBe('[fd00::1]:6443');
    expect(formatEndpoint({ host: '10.0.0.1', port: 443 })).toBe('10.0.0.1:443');
  });

  it.each([
    ['10.0.0.1', 'must be host:port (IPv4) or [host]:port (IPv6)'],
    ['fd00::1:443', 'must be host:port (IPv4) or [host]:port (IPv6)'],
    ['switch.example:22', '"switch.example" is not an IP address (names are not resolved)'],
    ['10.0.0.1:0', 'port 0 is outside 1-65535'],
    ['10.0.0.1:65536', 'port 65536 is outside 1-65535'],
    ['10.0.0.1:http', '"http" is not a port number'],
    ['10.0.0.1:', '"" is not a port number'],
    ['0.0.0.0:22', '0.0.0.0 is not a unicast address'],
    ['224.0.0.1:22', '224.0.0.1 is not a unicast address'],
    ['[::]:22', ':: is not a unicast address'],
    ['[ff02::1]:22', 'ff02::1 is not a unicast address'],
    ['999.1.1.1:22', '"999.1.1.1" is not an IP address (names are not resolved)'],
  ])('refuses %j: %s', (text, error) => {
    expect(parseEndpoint(text)).toEqual({ error });
  });
});

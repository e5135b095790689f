import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig, parseConfigSection } from '../../../platform/index.js';
import { networkCheckConfigSchema } from './config.js';

describe('networkCheckConfigSchema', () => {
  it('defaults to the practice: every 5 s, three misses, the gateway and the API server', () => {
    expect(parseConfigSection(networkCheckConfigSchema, {}, 'network')).toEqual({
      enabled: true,
      intervalMs: 5000,
      misses: 3,
      timeoutMs: 2000,
      gateway: true,
      gatewayPort: 53,
      gatewayNeighbour: true,
      routeTable: '/proc/net/route',
      neighbourTable: '/proc/net/arp',
      apiServer: true,
      targets: [],
    });
  });

  it('names each bad field in one line', () => {
    const lines = (input: unknown): readonly string[] => {
      try {
        parseConfigSection(networkCheckConfigSchema, input, 'network');
      } catch (error) {
        if (error instanceof ConfigError) return error.lines;
        throw error;
      }
      return [];
    };
    expect(lines({ targets: ['10.0.0.1:22', 'tor.example:22', '[fd00::1]:0'] })).toEqual([
      'network.targets.1: "tor.example:22": "tor.example" is not an IP address (names are not resolved)',
      'network.targets.2: "[fd00::1]:0": port 0 is outside 1-65535',
    ]);
    expect(lines({ intervalMs: 1000, timeoutMs: 1000 })).toEqual([
      'network.timeoutMs: must be below intervalMs (1000 ms): an attempt ends before the next round',
    ]);
    expect(lines({ targets: ['10.0.0.1:22', '10.0.0.1:22'] })).toEqual([
      'network.targets: lists an endpoint twice',
    ]);
    expect(lines({ misses: 0, gatewayPort: 70000, probe: true })).toHaveLength(3);
    expect(lines({ targets: Array.from({ length: 17 }, (_, i) => `10.0.0.${i + 1}:22`) })[0]).toMatch(
      /^network\.targets: /,
    );
  });

  it('takes flags and environment variables as the agent’s loader reads them', () => {
    const schema = networkCheckConfigSchema;
    const config = loadConfig(schema, {
      flags: { gateway: false, targets: ['127.0.0.1:6443,[::1]:22'] },
      env: { NPU_FAULT_INTERVAL_MS: '300', NPU_FAULT_TIMEOUT_MS: '200' },
    });
    expect(config).toMatchObject({
      gateway: false,
      targets: ['127.0.0.1:6443', '[::1]:22'],
      intervalMs: 300,
      timeoutMs: 200,
    });
  });
});

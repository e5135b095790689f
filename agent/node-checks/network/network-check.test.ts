import { describe, expect, it } from '@jest/globals';
import { FakeClock, createRegistry, parseConfigSection } from '../../../platform/index.js';
import { memoryLogger } from '../../probe/testing.js';
import { networkCheckConfigSchema } from './config.js';
import { createNetworkCheck } from './network-check.js';
import { ARP_HEADER, ROUTE_HEADER, arpLine, fakeConnector, fakeFiles, routeLine } from './testing.js';

const ROUTE = '/proc/net/route';
const ARP = '/proc/net/arp';
const INTERVAL = 5000;

const routes = (...gateways: { gateway: string; iface?: string; metric?: number }[]): string =>
  [
    ROUTE_HEADER,
    ...gateways.map((g) =>
      routeLine({
        iface: g.iface ?? 'eth0',
        destination: '0.0.0.0',
        gateway: g.gateway,
        flags: 0x3,
        metric: g.metric ?? 0,
        mask: '0.0.0.0',
      }),
    ),
    routeLine({
      iface: 'eth0',
      destination: '192.0.2.0',
      gateway: '0.0.0.0',
      flags: 0x1,
      mask: '255.255.255.0',
    }),
    '',
  ].join('\n');
const arp = (...lines: string[]): string => [ARP_HEADER, ...lines, ''].join('\n');

/** A network check on fakes: the route table names 192.0.2.1, the API server is 10.96.0.1:443. */
function harness(
  config: Record<string, unknown> = {},
  env: Record<string, string> = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' },
) {
  const clock = new FakeClock();
  const connector = fakeConnector();
  const files = fakeFiles({ [ROUTE]: routes({ gateway: '192.0.2.1' }), [ARP]: arp() });
  const registry = createRegistry('agent');
  const { log, lines } = memoryLogger();
  const check = createNetworkCheck(parseConfigSection(networkCheckConfigSchema, config, 'network'), {
    log,
    registry,
    clock,
    env,
    connect: connector.connect,
    readHead: files,
  });
  const signal = new AbortController().signal;
  /** One round at the clock's time, then the clock moves on by the interval. */
  const round = async (abort = signal) => {
    const problems = await check.run(clock.now(), abort);
    await clock.advance(INTERVAL);
    return problems;
  };
  const metric = async (name: string) =>
    (await registry.metrics()).split('\n').filter((l) => l.startsWith(`npu_fault_agent_network_${name}`));
  const warnings = () => lines.filter((l) => l.level === 'warn').map((l) => l.msg);
  return { check, clock, connector, files, registry, lines, round, metric, warnings };
}

describe('the network check', () => {
  it('probes the default gateway, the API server and the configured targets once per round', async () => {
    const h = harness({ targets: ['10.1.0.1:22', '[fd00::9]:179'] });
    expect(h.check).toMatchObject({ name: 'network', intervalMs: 5000 });
    expect(await h.round()).toEqual([]);
    expect(h.connector.attempts).toEqual(['192.0.2.1:53', '10.96.0.1:443', '10.1.0.1:22', '[fd00::9]:179']);
    expect(await h.metric('targets')).toEqual(
      expect.arrayContaining([
        'npu_fault_agent_network_targets{target="gateway"} 1',
        'npu_fault_agent_network_targets{target="api-server"} 1',
        'npu_fault_agent_network_targets{target="configured"} 2',
      ]),
    );
  });

  it('raises network-unreachable at the third miss in a row, naming the target and its last error; one answer clears it', async () => {
    const h = harness();
    h.connector.answer('10.96.0.1:443', 'timeout');
    expect(await h.round()).toEqual([]);
    expect(await h.round()).toEqual([]);
    h.connector.answer('10.96.0.1:443', { outcome: 'unreachable', error: 'ENETUNREACH' });
    expect(await h.round()).toEqual([
      {
        reason: 'network-unreachable',
        message: 'api-server 10.96.0.1:443: 3 probes missed in a row over 10 s (ENETUNREACH)',
      },
    ]);
    expect(await h.round()).toEqual([
      {
        reason: 'network-unreachable',
        message: 'api-server 10.96.0.1:443: 4 probes missed in a row over 15 s (ENETUNREACH)',
      },
    ]);
    expect(await h.metric('unreachable_targets')).toContain('npu_fault_agent_network_unreachable_targets 1');
    h.connector.answer('10.96.0.1:443', 'connected');
    expect(await h.round()).toEqual([]);
    expect(await h.metric('unreachable_targets')).toContain('npu_fault_agent_network_unreachable_targets 0');
    // One warning when it became unreachable, one info line when it answered again.
    expect(h.warnings()).toEqual(['network target unreachable']);
    expect(h.lines.filter((l) => l.msg === 'network target answers again')).toHaveLength(1);
  });

  it('needs the misses in a row: an answer in between starts the count again', async () => {
    const h = harness({ misses: 3 });
    for (const outcome of ['timeout', 'timeout', 'connected', 'timeout', 'timeout'] as const) {
      h.connector.answer('192.0.2.1:53', outcome);
      expect(await h.round()).toEqual([]);
    }
    h.connector.answer('192.0.2.1:53', 'timeout');
    expect((await h.round())[0]?.message).toMatch(/^gateway 192\.0\.2\.1:53: 3 probes missed/);
  });

  it('counts a refused connection as an answer', async () => {
    const h = harness();
    h.connector.answer('192.0.2.1:53', 'refused');
    h.connector.answer('10.96.0.1:443', 'refused');
    for (let i = 0; i < 5; i++) expect(await h.round()).toEqual([]);
    expect(await h.metric('probes_total{target="gateway",outcome="refused"}')).toEqual([
      'npu_fault_agent_network_probes_total{target="gateway",outcome="refused"} 5',
    ]);
  });

  it('names every unreachable target in one problem: any of them is enough', async () => {
    const h = harness({ misses: 2, targets: ['10.1.0.1:22'] });
    h.connector.answer('192.0.2.1:53', 'unreachable');
    h.connector.answer('10.1.0.1:22', 'timeout');
    await h.round();
    const problems = await h.round();
    expect(problems).toHaveLength(1);
    expect(problems[0]?.message).toBe(
      'gateway 192.0.2.1:53: 2 probes missed in a row over 5 s (EHOSTUNREACH); configured 10.1.0.1:22: 2 probes missed in a row over 5 s (timeout after 1000 ms)',
    );
  });

  it('takes a silent gateway with a complete neighbour entry on its route’s interface as answering', async () => {
    const h = harness();
    h.connector.answer('192.0.2.1:53', 'timeout');
    h.files.files[ARP] = arp(arpLine('192.0.2.1', 0x2, '02:fc:00:00:00:05', 'eth0'));
    for (let i = 0; i < 4; i++) expect(await h.round()).toEqual([]);
    expect(await h.metric('probes_total{target="gateway",outcome="neighbour"}')).toEqual([
      'npu_fault_agent_network_probes_total{target="gateway",outcome="neighbour"} 4',
    ]);
    // The entry on another interface, or an incomplete one, is no answer.
    h.files.files[ARP] = arp(
      arpLine('192.0.2.1', 0x2, '02:fc:00:00:00:05', 'eth1'),
      arpLine('192.0.2.1', 0x0, '00:00:00:00:00:00', 'eth0'),
    );
    await h.round();
    await h.round();
    expect((await h.round())[0]?.message).toBe(
      'gateway 192.0.2.1:53: 3 probes missed in a row over 10 s (timeout after 1000 ms)',
    );
  });

  it('does not read the neighbour table with gatewayNeighbour off, nor for the other targets', async () => {
    const h = harness({ gatewayNeighbour: false });
    h.connector.answer('192.0.2.1:53', 'timeout');
    h.connector.answer('10.96.0.1:443', 'timeout');
    h.files.files[ARP] = arp(
      arpLine('192.0.2.1', 0x2, '02:fc:00:00:00:05', 'eth0'),
      arpLine('10.96.0.1', 0x2, '02:fc:00:00:00:05', 'eth0'),
    );
    await h.round();
    await h.round();
    expect((await h.round())[0]?.message).toMatch(
      /^gateway 192\.0\.2\.1:53: 3 probes .*; api-server 10\.96\.0\.1:443: 3 probes/,
    );
    expect(h.files.reads.filter((p) => p === ARP)).toEqual([]);
  });

  it('keeps probing the last gateway when the default route goes (its interface went down)', async () => {
    const h = harness();
    await h.round();
    h.files.files[ROUTE] = `${ROUTE_HEADER}\n`;
    h.connector.answer('192.0.2.1:53', { outcome: 'unreachable', error: 'ENETUNREACH' });
    await h.round();
    await h.round();
    expect((await h.round())[0]?.message).toBe(
      'gateway 192.0.2.1:53: 3 probes missed in a row over 10 s (ENETUNREACH)',
    );
    expect(await h.metric('table_errors_total{table="route",reason="no-default-route"}')).toEqual([
      'npu_fault_agent_network_table_errors_total{table="route",reason="no-default-route"} 3',
    ]);
    expect(h.warnings().filter((m) => /no default route/.test(String(m)))).toHaveLength(1);
  });

  it('follows a changed default route, forgetting the old gateway’s misses', async () => {
    const h = harness();
    h.connector.answer('192.0.2.1:53', 'timeout');
    await h.round();
    await h.round();
    expect((await h.round())[0]?.message).toMatch(/^gateway 192\.0\.2\.1:53: 3 probes missed/);
    // The route moves to another gateway (a failover): the old one's problem goes with it.
    h.files.files[ROUTE] = routes(
      { gateway: '198.51.100.1', iface: 'eth1' },
      { gateway: '192.0.2.1', metric: 100 },
    );
    h.connector.answer('198.51.100.1:53', 'timeout');
    expect(await h.round()).toEqual([]);
    expect(h.connector.attempts.slice(-2)).toEqual(['198.51.100.1:53', '10.96.0.1:443']);
    await h.round();
    expect((await h.round())[0]?.message).toMatch(/^gateway 198\.51\.100\.1:53: 3 probes missed/);
  });

  it('says once per spell that a table cannot be read or is garbage, counts each, and never throws', async () => {
    const h = harness();
    delete h.files.files[ROUTE];
    expect(await h.round()).toEqual([]);
    expect(await h.round()).toEqual([]);
    expect(h.connector.attempts).toEqual(['10.96.0.1:443', '10.96.0.1:443']);
    h.files.files[ROUTE] = 'not a routing table\n';
    await h.round();
    await h.round();
    h.files.files[ROUTE] = routes({ gateway: '192.0.2.1' });
    await h.round();
    expect(h.warnings()).toEqual([
      `cannot read ${ROUTE} (ENOENT)`,
      `${ROUTE}: header lacks Iface, Destination, Gateway, Flags, Metric, Mask: not a /proc/net/route table`,
    ]);
    expect(h.lines.filter((l) => l.msg === `${ROUTE} reads again`)).toHaveLength(1);
    expect(await h.metric('table_errors_total{table="route"')).toEqual([
      'npu_fault_agent_network_table_errors_total{table="route",reason="read"} 2',
      'npu_fault_agent_network_table_errors_total{table="route",reason="garbage"} 2',
      'npu_fault_agent_network_table_errors_total{table="route",reason="no-default-route"} 0',
    ]);
    // A neighbour table that cannot be read leaves a silent gateway missing, said once.
    delete h.files.files[ARP];
    h.connector.answer('192.0.2.1:53', 'timeout');
    await h.round();
    await h.round();
    expect((await h.round())[0]?.reason).toBe('network-unreachable');
    expect(h.warnings().filter((m) => m === `cannot read ${ARP} (ENOENT)`)).toHaveLength(1);
  });

  it('never reads or probes anything when disabled', async () => {
    const h = harness({ enabled: false, targets: ['10.1.0.1:22'] });
    expect(await h.round()).toEqual([]);
    expect(await h.round()).toEqual([]);
    expect(h.connector.attempts).toEqual([]);
    expect(h.files.reads).toEqual([]);
  });

  it('never runs two attempts to one target at once', async () => {
    const h = harness({ gateway: false });
    h.connector.hold();
    const first = h.check.run(h.clock.now(), new AbortController().signal);
    const second = h.check.run(h.clock.now(), new AbortController().signal);
    await h.clock.advance(0);
    expect(h.connector.inFlight).toBe(1);
    h.connector.release();
    await Promise.all([first, second]);
    expect(h.connector.attempts).toEqual(['10.96.0.1:443']);
    expect(await h.metric('probe_duration_seconds_count')).toEqual([
      'npu_fault_agent_network_probe_duration_seconds_count{target="api-server"} 1',
    ]);
  });

  it('counts no miss for an attempt stopped by the signal', async () => {
    const h = harness({ gateway: false, misses: 1 });
    h.connector.answer('10.96.0.1:443', 'timeout');
    h.connector.hold();
    const abort = new AbortController();
    const round = h.check.run(h.clock.now(), abort.signal);
    await h.clock.advance(0);
    abort.abort();
    h.connector.release();
    expect(await round).toEqual([]);
    expect(await h.metric('probes_total{target="api-server",outcome="timeout"}')).toEqual([
      'npu_fault_agent_network_probes_total{target="api-server",outcome="timeout"} 0',
    ]);
  });

  it('skips the API server outside a pod, and says why its variables are unusable', async () => {
    const outside = harness({}, {});
    await outside.round();
    expect(outside.connector.attempts).toEqual(['192.0.2.1:53']);
    expect(outside.warnings()).toEqual([]);
    const bad = harness(
      {},
      { KUBERNETES_SERVICE_HOST: 'kubernetes.default', KUBERNETES_SERVICE_PORT: '443' },
    );
    await bad.round();
    expect(bad.connector.attempts).toEqual(['192.0.2.1:53']);
    expect(bad.warnings()).toEqual([
      'API server not probed: KUBERNETES_SERVICE_HOST: "kubernetes.default" is not an IP address (names are not resolved)',
    ]);
    expect(await bad.metric('targets{target="api-server"}')).toEqual([
      'npu_fault_agent_network_targets{target="api-server"} 0',
    ]);
    const v6 = harness(
      { gateway: false },
      { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' },
    );
    await v6.round();
    expect(v6.connector.attempts).toEqual(['[fd00::1]:6443']);
  });
});

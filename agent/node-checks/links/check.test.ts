import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRegistry, type Registry } from '../../../platform/index.js';
import { ExecToolError } from '../../probe/index.js';
import { metricValue } from '../testing.js';
import { fakeExecTool, memoryLogger, tempDir, type FakeExecAnswer } from '../../probe/testing.js';
import { createLinksCheck, linksCheckConfigSchema, type LinksCheckConfig } from './index.js';
import { HCCN_LINK_DOWN, HCCN_LINK_UP, removeNic, writeNic, writeRdmaPort } from './testing.js';

const T0 = Date.UTC(2026, 0, 1);
const signal = new AbortController().signal;

describe('createLinksCheck', () => {
  let dir: ReturnType<typeof tempDir>;
  let registry: Registry;
  let logged: ReturnType<typeof memoryLogger>;
  let tool: string;
  let dev: string;
  let answer: (npu: string) => FakeExecAnswer;
  let exec: ReturnType<typeof fakeExecTool>;

  beforeEach(() => {
    dir = tempDir('links-check-');
    registry = createRegistry('agent');
    logged = memoryLogger();
    tool = join(dir.path, 'hccn_tool');
    dev = join(dir.path, 'dev');
    mkdirSync(dev);
    mkdirSync(join(dir.path, 'class/net'), { recursive: true });
    answer = () => HCCN_LINK_UP;
    exec = fakeExecTool((_, args) => answer(args[1] as string));
  });
  afterEach(() => dir.remove());

  const build = (overrides: Partial<LinksCheckConfig> = {}) =>
    createLinksCheck(
      linksCheckConfigSchema.parse({
        sysfsRoot: dir.path,
        hccnToolPath: tool,
        hccnDevDir: dev,
        ...overrides,
      }),
      { log: logged.log, registry, exec },
    );
  const installTool = (): void => {
    writeFileSync(tool, '#!/bin/sh\n');
    chmodSync(tool, 0o755);
  };

  it('defaults to a 5 s interval and the real sysfs and hccn_tool paths', () => {
    const config = linksCheckConfigSchema.parse({});
    expect(config).toMatchObject({
      enabled: true,
      intervalMs: 5000,
      sysfsRoot: '/sys',
      interfaces: [],
      minSpeedMbps: 25000,
      flapThreshold: 3,
      flapWindowSeconds: 600,
      hccnToolPath: '/usr/local/Ascend/driver/tools/hccn_tool',
      hccnDeviceCount: 0,
    });
    const check = build();
    expect([check.name, check.intervalMs]).toEqual(['links', 5000]);
  });

  it('refuses bad settings with a message naming the field', () => {
    const result = linksCheckConfigSchema.safeParse({
      interfaces: ['eth0/../x'],
      sysfsRoot: '/sys/../etc',
      flapThreshold: 0,
    });
    expect(result.success).toBe(false);
    const paths = result.error?.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['interfaces.0', 'sysfsRoot', 'flapThreshold']));
    expect(linksCheckConfigSchema.safeParse({ unknown: 1 }).success).toBe(false);
  });

  it('raises nic-link-down for an auto-detected NIC that goes down, and sets the gauges', async () => {
    writeNic(dir.path, {
      name: 'eth2',
      operstate: 'up',
      carrier: '1',
      speed: 100000,
      carrierDownCount: 0,
      busId: '0000:3b:00.0',
    });
    const check = build();
    expect(await check.run(T0, signal)).toEqual([]);
    expect(await metricValue(registry, 'node_links_watched', { kind: 'nic' })).toBe(1);
    writeNic(dir.path, { name: 'eth2', operstate: 'down', carrierDownCount: 1, busId: '0000:3b:00.0' });
    expect(await check.run(T0 + 5000, signal)).toEqual([
      { reason: 'nic-link-down', message: 'eth2 down (operstate down)' },
    ]);
    expect(await metricValue(registry, 'node_links_down', { kind: 'nic' })).toBe(1);
    expect(await metricValue(registry, 'node_link_flaps_total', { kind: 'nic' })).toBe(1);
    expect(logged.lines).toEqual(
      expect.arrayContaining([expect.objectContaining({ msg: 'link down', link: 'eth2' })]),
    );
  });

  it('says a NIC that falls off the bus is gone', async () => {
    writeNic(dir.path, { name: 'eth2', operstate: 'up', carrier: '1', speed: 100000, busId: '0000:3b:00.0' });
    const check = build();
    await check.run(T0, signal);
    removeNic(dir.path, 'eth2');
    expect(await check.run(T0 + 5000, signal)).toEqual([
      { reason: 'nic-link-down', message: 'eth2 gone (was 0000:3b:00.0)' },
    ]);
  });

  it('raises rdma-port-down for an RDMA port that leaves ACTIVE', async () => {
    writeRdmaPort(dir.path, { device: 'mlx5_0', port: 1, state: '4: ACTIVE', physState: '5: LinkUp' });
    const check = build();
    await check.run(T0, signal);
    writeRdmaPort(dir.path, { device: 'mlx5_0', port: 1, state: '1: DOWN', physState: '2: Polling' });
    expect(await check.run(T0 + 5000, signal)).toEqual([
      { reason: 'rdma-port-down', message: 'mlx5_0/1 down (state 1: DOWN, phys_state 2: Polling)' },
    ]);
  });

  it('keeps the last problems while class/net cannot be listed, counting it and logging once', async () => {
    writeNic(dir.path, { name: 'eth2', operstate: 'up', carrier: '1', speed: 100000, busId: '0000:3b:00.0' });
    const check = build();
    await check.run(T0, signal);
    writeNic(dir.path, { name: 'eth2', operstate: 'down', busId: '0000:3b:00.0' });
    const down = await check.run(T0 + 5000, signal);
    renameSync(join(dir.path, 'class/net'), join(dir.path, 'class/net-gone'));
    expect(await check.run(T0 + 10_000, signal)).toEqual(down);
    expect(await check.run(T0 + 15_000, signal)).toEqual(down);
    expect(await metricValue(registry, 'node_links_read_errors_total', { source: 'net' })).toBe(2);
    expect(logged.lines.filter((l) => String(l.msg).startsWith('links: cannot list net'))).toHaveLength(1);
    renameSync(join(dir.path, 'class/net-gone'), join(dir.path, 'class/net'));
    await check.run(T0 + 20_000, signal);
    expect(logged.lines.filter((l) => l.msg === 'links: net listed again')).toHaveLength(1);
  });

  it('runs no hccn_tool where it is not installed', async () => {
    writeFileSync(join(dev, 'davinci0'), '');
    const check = build();
    expect(await check.run(T0, signal)).toEqual([]);
    expect(exec.calls).toEqual([]);
    expect(await metricValue(registry, 'hccn_tool_installed')).toBe(0);
  });

  it('reads each NPU of /dev with hccn_tool every hccnIntervalMs, and raises a RoCE port that goes DOWN', async () => {
    installTool();
    for (const n of [0, 1]) writeFileSync(join(dev, `davinci${n}`), '');
    const check = build({ hccnIntervalMs: 30_000 });
    expect(await check.run(T0, signal)).toEqual([]);
    expect(exec.calls.map((c) => c.args.join(' '))).toEqual(['-i 0 -link -g', '-i 1 -link -g']);
    answer = (npu) => (npu === '1' ? HCCN_LINK_DOWN : HCCN_LINK_UP);
    // Not yet due: no run, nothing changes.
    expect(await check.run(T0 + 5000, signal)).toEqual([]);
    expect(exec.calls).toHaveLength(2);
    const expected = [
      { reason: 'rdma-port-down', message: 'npu1 RoCE port down (hccn_tool: link status DOWN)' },
    ];
    expect(await check.run(T0 + 30_000, signal)).toEqual(expected);
    // Between hccn rounds the problem holds.
    expect(await check.run(T0 + 35_000, signal)).toEqual(expected);
    expect(await metricValue(registry, 'hccn_tool_installed')).toBe(1);
    expect(await metricValue(registry, 'node_links_watched', { kind: 'hccn' })).toBe(2);
  });

  it('reads hccn_tool again at once when the wall clock steps back past its last round', async () => {
    installTool();
    const check = build({ hccnDeviceCount: 1, hccnIntervalMs: 30_000 });
    await check.run(T0, signal);
    await check.run(T0 + 5000, signal);
    expect(exec.calls).toHaveLength(1);
    await check.run(T0 - 60_000, signal);
    expect(exec.calls).toHaveLength(2);
  });

  it('counts a failing hccn_tool, logs it once a spell, and raises nothing for it', async () => {
    installTool();
    const check = build({ hccnDeviceCount: 2, hccnIntervalMs: 1000 });
    answer = () => new ExecToolError('exit', 'hccn_tool exited with code 1: dsmi error');
    for (let i = 0; i < 3; i++) expect(await check.run(T0 + i * 1000, signal)).toEqual([]);
    expect(await metricValue(registry, 'hccn_tool_failures_total', { failure: 'exit' })).toBe(6);
    const warned = logged.lines.filter((l) => String(l.msg).startsWith('hccn_tool gives no link state'));
    expect(warned).toEqual([expect.objectContaining({ npus: [0, 1], failure: 'exit' })]);
    // Configured NPUs are watched from the first read: a DOWN port is a problem at once.
    answer = (npu) => (npu === '0' ? HCCN_LINK_DOWN : HCCN_LINK_UP);
    expect(await check.run(T0 + 3000, signal)).toEqual([
      { reason: 'rdma-port-down', message: 'npu0 RoCE port down (hccn_tool: link status DOWN)' },
    ]);
    expect(logged.lines.filter((l) => l.msg === 'hccn_tool answers again')).toHaveLength(1);
  });

  it('reads nothing and raises nothing when disabled', async () => {
    writeNic(dir.path, { name: 'eth2', operstate: 'down', busId: '0000:3b:00.0' });
    const check = build({ enabled: false, interfaces: ['eth2'] });
    expect(await check.run(T0, signal)).toEqual([]);
  });
});

import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../probe/testing.js';
import { nodeFileReader } from '../file-reader.js';
import { matchesPattern, parseRdmaState, readNics, readRdmaPorts } from './sysfs.js';
import { writeNic, writeRdmaPort } from './testing.js';

const selection = { minSpeedMbps: 25000, ignore: ['ens9*'] };

describe('readNics on a fake sysfs tree', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('links-sysfs-');
  });
  afterEach(() => dir.remove());

  it('reads state, speed, counters and device; eligible only when physical, not a VF, not ignored and fast', async () => {
    const root = dir.path;
    writeNic(root, {
      name: 'eth2',
      operstate: 'up',
      carrier: '1',
      speed: 100000,
      carrierDownCount: 3,
      carrierChanges: 7,
      busId: '0000:3b:00.0',
    });
    writeNic(root, { name: 'eth0', operstate: 'up', carrier: '1', speed: 1000, busId: '0000:02:00.0' });
    writeNic(root, {
      name: 'eth3v0',
      operstate: 'up',
      carrier: '1',
      speed: 100000,
      busId: '0000:3b:00.2',
      virtualFunction: true,
    });
    writeNic(root, { name: 'ens9f0', operstate: 'up', carrier: '1', speed: 200000, busId: '0000:5e:00.0' });
    writeNic(root, { name: 'bond0', operstate: 'up', carrier: '1', speed: 200000, carrierChanges: 2 });
    writeNic(root, { name: 'lo', operstate: 'unknown', carrier: '1' });
    const byName = Object.fromEntries(
      (await readNics(nodeFileReader, root, selection)).map((r) => [r.id, r]),
    );
    expect(byName.eth2).toEqual({
      id: 'eth2',
      kind: 'nic',
      up: true,
      seen: 'operstate up, carrier 1',
      eligible: true,
      device: '0000:3b:00.0',
      speedMbps: 100000,
      downs: 3,
    });
    expect(byName.eth0?.eligible).toBe(false); // 1 Gb/s
    expect(byName.eth3v0?.eligible).toBe(false); // an SR-IOV VF
    expect(byName.ens9f0?.eligible).toBe(false); // ignored
    expect(byName.bond0).toMatchObject({ eligible: false, transitions: 2 }); // virtual: no device link
    expect(byName.lo).toMatchObject({ up: true, eligible: false }); // unknown operstate, carrier 1
  });

  it('reads an administratively down interface (carrier and speed unreadable) as down and not eligible', async () => {
    writeNic(dir.path, { name: 'eth4', operstate: 'down', busId: '0000:3c:00.0' });
    const [reading] = await readNics(nodeFileReader, dir.path, selection);
    expect(reading).toMatchObject({ id: 'eth4', up: false, seen: 'operstate down', eligible: false });
  });

  it('takes only `up` (or `unknown` with carrier) as up', async () => {
    for (const [name, operstate, carrier] of [
      ['a', 'lowerlayerdown', '0'],
      ['b', 'dormant', '1'],
      ['c', 'unknown', '0'],
      ['d', 'notpresent', '0'],
    ] as const)
      writeNic(dir.path, { name, operstate, carrier });
    const readings = await readNics(nodeFileReader, dir.path, selection);
    expect(readings.map((r) => [r.id, r.up])).toEqual([
      ['a', false],
      ['b', false],
      ['c', false],
      ['d', false],
    ]);
  });

  it('leaves out entries that are not interface names, and counters that are not numbers', async () => {
    writeNic(dir.path, { name: 'eth2', operstate: 'up', carrier: '1', busId: '0000:3b:00.0' });
    writeFileSync(join(dir.path, 'class/net/eth2/carrier_down_count'), 'lots\n');
    mkdirSync(join(dir.path, 'class/net/a-name-far-too-long-for-linux'));
    const readings = await readNics(nodeFileReader, dir.path, selection);
    expect(readings).toHaveLength(1);
    expect(readings[0]?.downs).toBeUndefined();
  });

  it('rejects when class/net cannot be listed (the caller counts it)', async () => {
    await expect(readNics(nodeFileReader, join(dir.path, 'nowhere'), selection)).rejects.toThrow(/ENOENT/);
  });
});

describe('readRdmaPorts on a fake sysfs tree', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('links-rdma-');
  });
  afterEach(() => dir.remove());

  it('reads no port when no RDMA driver is loaded (no class/infiniband)', async () => {
    await expect(readRdmaPorts(nodeFileReader, dir.path)).resolves.toEqual([]);
  });

  it('leaves an SR-IOV virtual function out of auto-detection (a pod or VM takes it away)', async () => {
    writeRdmaPort(dir.path, { device: 'mlx5_4', port: 1, state: '4: ACTIVE', virtualFunction: true });
    const readings = await readRdmaPorts(nodeFileReader, dir.path);
    expect(readings).toEqual([expect.objectContaining({ id: 'mlx5_4/1', up: true, eligible: false })]);
  });

  it('reads every port of every device: up only when ACTIVE and LinkUp', async () => {
    writeRdmaPort(dir.path, {
      device: 'mlx5_0',
      port: 1,
      state: '4: ACTIVE',
      physState: '5: LinkUp',
      linkDowned: 2,
    });
    writeRdmaPort(dir.path, { device: 'mlx5_1', port: 1, state: '1: DOWN', physState: '3: Disabled' });
    writeRdmaPort(dir.path, {
      device: 'mlx5_2',
      port: 1,
      state: '4: ACTIVE',
      physState: '6: LinkErrorRecovery',
    });
    writeRdmaPort(dir.path, { device: 'mlx5_3', port: 1, state: 'ACTIVE?' });
    const readings = await readRdmaPorts(nodeFileReader, dir.path);
    expect(readings).toEqual([
      {
        id: 'mlx5_0/1',
        kind: 'rdma',
        up: true,
        seen: 'state 4: ACTIVE, phys_state 5: LinkUp',
        eligible: true,
        downs: 2,
      },
      {
        id: 'mlx5_1/1',
        kind: 'rdma',
        up: false,
        seen: 'state 1: DOWN, phys_state 3: Disabled',
        eligible: true,
      },
      {
        id: 'mlx5_2/1',
        kind: 'rdma',
        up: false,
        seen: 'state 4: ACTIVE, phys_state 6: LinkErrorRecovery',
        eligible: true,
      },
      { id: 'mlx5_3/1', kind: 'rdma', up: undefined, seen: 'state unreadable', eligible: true },
    ]);
  });

  it('parses the kernel state format and refuses anything else', () => {
    expect(parseRdmaState('4: ACTIVE\n')).toEqual({ code: 4, name: 'ACTIVE' });
    expect(parseRdmaState('7: Phy Test')).toEqual({ code: 7, name: 'Phy Test' });
    expect(parseRdmaState('ACTIVE')).toBeUndefined();
    expect(parseRdmaState(undefined)).toBeUndefined();
  });
});

describe('matchesPattern', () => {
  it('matches names exactly and prefixes ending in *', () => {
    expect(matchesPattern('ens1f0', ['ens1f*'])).toBe(true);
    expect(matchesPattern('ens1f0', ['ens1f'])).toBe(false);
    expect(matchesPattern('eth9', ['eth9'])).toBe(true);
    expect(matchesPattern('eth90', ['eth9'])).toBe(false);
  });
});

import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { tempDir } from '../probe/testing.js';
import { acceleratorVendor, scanInventory } from './scan.js';
import { writeFakeSysfs } from './testing.js';

describe('acceleratorVendor', () => {
  it.each([
    {
      name: 'NVIDIA 3D controller (H100)',
      vendor: 0x10de,
      device: 0x2330,
      pciClass: 0x030200,
      want: 'nvidia',
    },
    {
      name: 'NVIDIA VGA controller (L40S)',
      vendor: 0x10de,
      device: 0x26b9,
      pciClass: 0x030000,
      want: 'nvidia',
    },
    { name: 'NVIDIA HDMI audio', vendor: 0x10de, device: 0x22ba, pciClass: 0x040300, want: null },
    { name: 'NVIDIA NVSwitch (bridge)', vendor: 0x10de, device: 0x22a3, pciClass: 0x068000, want: null },
    { name: 'Ascend 910B', vendor: 0x19e5, device: 0xd802, pciClass: 0x120000, want: 'huawei' },
    { name: 'Ascend 310P', vendor: 0x19e5, device: 0xd500, pciClass: 0x120000, want: 'huawei' },
    { name: 'Kunpeng HiSilicon ZIP engine', vendor: 0x19e5, device: 0xa250, pciClass: 0x120000, want: null },
    { name: 'Huawei NIC', vendor: 0x19e5, device: 0x1822, pciClass: 0x020000, want: null },
    {
      name: 'Intel accelerator-class device',
      vendor: 0x8086,
      device: 0x0b25,
      pciClass: 0x120000,
      want: null,
    },
    { name: 'unreadable ids', vendor: Number.NaN, device: Number.NaN, pciClass: Number.NaN, want: null },
  ])('$name', ({ vendor, device, pciClass, want }) => {
    expect(acceleratorVendor(vendor, device, pciClass)).toBe(want);
  });
});

describe('scanInventory', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('npu-fault-inventory-');
  });
  afterEach(() => dir.remove());

  it('lists accelerator PCI functions by vendor (normalised, sorted) and the device nodes in number order', async () => {
    const paths = writeFakeSysfs(
      dir.path,
      [
        { busId: '0000:3b:00.0', vendor: '0x10de', device: '0x2330', pciClass: '0x030200' },
        { busId: '0000:19:00.0', vendor: '0x10de', device: '0x2330', pciClass: '0x030200' },
        { busId: '0000:19:00.1', vendor: '0x10de', device: '0x22ba', pciClass: '0x040300' },
        { busId: '0000:c1:00.0', vendor: '0x19e5', device: '0xd802', pciClass: '0x120000' },
        { busId: '0000:75:00.0', vendor: '0x19e5', device: '0xa250', pciClass: '0x120000' },
        {
          busId: '0000:3b:00.4',
          vendor: '0x10de',
          device: '0x2330',
          pciClass: '0x030200',
          virtualFunction: true,
        },
        { busId: '0000:00:1f.0', vendor: '0x8086', device: '0xa1c8', pciClass: '0x060100' },
      ],
      [
        'nvidia10',
        'nvidia2',
        'nvidiactl',
        'nvidia-uvm',
        'nvidia-modeset',
        'davinci1',
        'davinci_manager',
        'davinci0',
        'null',
      ],
    );
    expect(await scanInventory(paths)).toEqual({
      nvidia: ['0000:19:00.0', '0000:3B:00.0'],
      huawei: ['0000:C1:00.0'],
      deviceNodes: ['davinci0', 'davinci1', 'nvidia2', 'nvidia10'],
    });
  });

  it('reads absent directories (a machine without that bus) as nothing installed', async () => {
    expect(
      await scanInventory({ sysPciDevices: join(dir.path, 'no-sys'), dev: join(dir.path, 'no-dev') }),
    ).toEqual({ huawei: [], nvidia: [], deviceNodes: [] });
  });

  it('skips a function whose ids cannot be read', async () => {
    const paths = writeFakeSysfs(
      dir.path,
      [{ busId: '0000:3b:00.0', vendor: 'garbage', device: '0x2330', pciClass: '0x030200' }],
      [],
    );
    expect((await scanInventory(paths)).nvidia).toEqual([]);
  });
});

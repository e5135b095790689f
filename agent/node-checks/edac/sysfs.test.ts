import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../probe/testing.js';
import { nodeFileReader } from '../file-reader.js';
import { readEdac } from './sysfs.js';
import { edacDir, writeController } from './testing.js';

describe('readEdac on a fake sysfs tree', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('edac-sysfs-');
  });
  afterEach(() => dir.remove());

  it('reads every controller with its DIMMs (or ranks) and their labels', async () => {
    writeController(dir.path, {
      name: 'mc0',
      ce: 12,
      ue: 1,
      dimms: [
        { name: 'dimm0', label: 'CPU_SrcID#0_MC#0_Chan#0_DIMM#0', ce: 12, ue: 0 },
        { name: 'dimm1', ce: 0, ue: 1 },
      ],
    });
    writeController(dir.path, {
      name: 'mc1',
      ce: 0,
      ue: 0,
      dimms: [{ name: 'rank0', label: 'DIMM_B1\u0007', ce: 0, ue: 0 }],
    });
    mkdirSync(join(edacDir(dir.path), 'power'));
    await expect(readEdac(nodeFileReader, dir.path)).resolves.toEqual({
      available: true,
      controllers: [
        {
          name: 'mc0',
          ce: 12,
          ue: 1,
          dimms: [
            { name: 'dimm0', label: 'CPU_SrcID#0_MC#0_Chan#0_DIMM#0', ce: 12, ue: 0 },
            { name: 'dimm1', label: 'mc0/dimm1', ce: 0, ue: 1 },
          ],
        },
        { name: 'mc1', ce: 0, ue: 0, dimms: [{ name: 'rank0', label: 'DIMM_B1?', ce: 0, ue: 0 }] },
      ],
    });
  });

  it('finds EDAC unavailable without the mc directory or with no controller in it', async () => {
    await expect(readEdac(nodeFileReader, dir.path)).resolves.toEqual({ available: false });
    mkdirSync(edacDir(dir.path), { recursive: true });
    await expect(readEdac(nodeFileReader, dir.path)).resolves.toEqual({ available: false });
  });

  it('reads a count that is not a number, or a file too big for sysfs, as unknown', async () => {
    writeController(dir.path, { name: 'mc0', ce: 0, ue: 0 });
    writeFileSync(join(edacDir(dir.path), 'mc0/ce_count'), '-1\n');
    writeFileSync(join(edacDir(dir.path), 'mc0/ue_count'), '1'.repeat(70_000));
    const reading = await readEdac(nodeFileReader, dir.path);
    expect(reading).toEqual({
      available: true,
      controllers: [{ name: 'mc0', ce: undefined, ue: undefined, dimms: [] }],
    });
  });

  it('rejects when the mc directory cannot be listed', async () => {
    // A file where the directory should be: the listing fails (ENOTDIR), as it would for anyone.
    mkdirSync(join(dir.path, 'devices/system/edac'), { recursive: true });
    writeFileSync(edacDir(dir.path), '');
    await expect(readEdac(nodeFileReader, dir.path)).rejects.toThrow(/ENOTDIR/);
  });
});

/**
 * Test support for the host memory ECC check: a directory laid out like sysfs's EDAC.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One DIMM (or rank) of a fake memory controller. */
export interface FakeDimm {
  /** `dimm0`, `rank1` */
  name: string;
  label?: string;
  ce: number;
  ue: number;
}

/** One memory controller as sysfs shows it. */
export interface FakeController {
  /** `mc0` */
  name: string;
  ce: number;
  ue: number;
  dimms?: FakeDimm[];
}

/** The EDAC mc directory under `root`. */
export function edacDir(root: string): string {
  return join(root, 'devices/system/edac/mc');
}

/** Writes (or rewrites) `<root>/devices/system/edac/mc/<name>/…`. */
export function writeController(root: string, controller: FakeController): void {
  const dir = join(edacDir(root), controller.name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'mc_name'), 'Skylake Socket#0 IMC#0\n');
  writeFileSync(join(dir, 'ce_count'), `${controller.ce}\n`);
  writeFileSync(join(dir, 'ue_count'), `${controller.ue}\n`);
  for (const dimm of controller.dimms ?? []) {
    mkdirSync(join(dir, dimm.name), { recursive: true });
    if (dimm.label !== undefined) writeFileSync(join(dir, dimm.name, 'dimm_label'), `${dimm.label}\n`);
    writeFileSync(join(dir, dimm.name, 'dimm_ce_count'), `${dimm.ce}\n`);
    writeFileSync(join(dir, dimm.name, 'dimm_ue_count'), `${dimm.ue}\n`);
  }
}

/** Removes a memory controller. */
export function removeController(root: string, name: string): void {
  rmSync(join(edacDir(root), name), { recursive: true, force: true });
}

import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { rmSync, writeFileSync } from 'node:fs';
import { createRegistry, type Registry } from '../../../platform/index.js';
import { metricValue } from '../testing.js';
import { memoryLogger, tempDir } from '../../probe/testing.js';
import { createEdacCheck, edacCheckConfigSchema, type EdacCheckConfig } from './index.js';
import { edacDir, writeController } from './testing.js';

const T0 = Date.UTC(2026, 0, 1);
const signal = new AbortController().signal;

describe('createEdacCheck', () => {
  let dir: ReturnType<typeof tempDir>;
  let registry: Registry;
  let logged: ReturnType<typeof memoryLogger>;
  beforeEach(() => {
    dir = tempDir('edac-check-');
    registry = createRegistry('agent');
    logged = memoryLogger();
  });
  afterEach(() => dir.remove());

  const build = (overrides: Partial<EdacCheckConfig> = {}) =>
    createEdacCheck(edacCheckConfigSchema.parse({ sysfsRoot: dir.path, ...overrides }), {
      log: logged.log,
      registry,
    });

  it('defaults to reading /sys every 10 s, 100 correctable errors an hour, a 24 h hold', () => {
    expect(edacCheckConfigSchema.parse({})).toEqual({
      enabled: true,
      intervalMs: 10000,
      sysfsRoot: '/sys',
      correctablePerHour: 100,
      holdSeconds: 86400,
    });
    expect(edacCheckConfigSchema.safeParse({ holdSeconds: 1 }).error?.issues[0]?.path).toEqual([
      'holdSeconds',
    ]);
    expect(build().name).toBe('edac');
  });

  it('raises host-memory-ecc for an uncorrectable error after the start, and counts errors in the metric', async () => {
    writeController(dir.path, {
      name: 'mc0',
      ce: 5,
      ue: 1,
      dimms: [{ name: 'dimm0', label: 'CPU0_DIMM_A1', ce: 5, ue: 1 }],
    });
    const check = build();
    expect(await check.run(T0, signal)).toEqual([]);
    expect(await metricValue(registry, 'edac_available')).toBe(1);
    expect(logged.lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          msg: expect.stringMatching(/before the agent started/),
          controller: 'mc0',
        }),
      ]),
    );
    writeController(dir.path, {
      name: 'mc0',
      ce: 7,
      ue: 2,
      dimms: [{ name: 'dimm0', label: 'CPU0_DIMM_A1', ce: 7, ue: 2 }],
    });
    expect(await check.run(T0 + 10_000, signal)).toEqual([
      {
        reason: 'host-memory-ecc',
        message: 'mc0: 1 uncorrectable error, last at 2026-01-01T00:00:10Z (CPU0_DIMM_A1)',
      },
    ]);
    expect(await metricValue(registry, 'host_memory_ecc_errors_total', { type: 'uncorrectable' })).toBe(1);
    expect(await metricValue(registry, 'host_memory_ecc_errors_total', { type: 'correctable' })).toBe(2);
    expect(logged.lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ level: 'error', msg: 'uncorrectable host memory error' }),
      ]),
    );
  });

  it('raises nothing on a node without EDAC, saying so once, with edac_available 0', async () => {
    const check = build();
    for (let i = 0; i < 3; i++) expect(await check.run(T0 + i * 10_000, signal)).toEqual([]);
    expect(await metricValue(registry, 'edac_available')).toBe(0);
    expect(logged.lines.filter((l) => String(l.msg).startsWith('no EDAC'))).toHaveLength(1);
  });

  it('keeps its problem through failed reads, counting them and logging once', async () => {
    writeController(dir.path, { name: 'mc0', ce: 0, ue: 0 });
    const check = build();
    await check.run(T0, signal);
    writeController(dir.path, { name: 'mc0', ce: 0, ue: 1 });
    const problems = await check.run(T0 + 10_000, signal);
    // The mc directory replaced by a file: the listing fails (ENOTDIR), even for root.
    rmSync(edacDir(dir.path), { recursive: true });
    writeFileSync(edacDir(dir.path), '');
    expect(await check.run(T0 + 20_000, signal)).toEqual(problems);
    expect(await check.run(T0 + 30_000, signal)).toEqual(problems);
    expect(await metricValue(registry, 'edac_read_errors_total')).toBe(2);
    expect(logged.lines.filter((l) => l.msg === 'cannot read EDAC; the last counts stand')).toHaveLength(1);
  });

  it('reads nothing and raises nothing when disabled', async () => {
    writeController(dir.path, { name: 'mc0', ce: 0, ue: 0 });
    const check = build({ enabled: false });
    await check.run(T0, signal);
    writeController(dir.path, { name: 'mc0', ce: 0, ue: 5 });
    expect(await check.run(T0 + 10_000, signal)).toEqual([]);
  });
});

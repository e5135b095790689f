// Every real tool output in ../shared/fixtures/real/ (read in place, never copied) either
// becomes a valid snapshot with the device count its name promises, or fails with the expected
// one-line error. A new file there without an entry below fails the test, so nothing is left
// unjudged. A clone without ../shared skips those (describeWithRealFixtures); the synthetic
// samples of testing.ts cover every parser there.
import { readdirSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { snapshotSchema, type Snapshot } from '../../contracts/index.js';
import { ParseError } from '../errors.js';
import { NotSnapshotError, ToolError } from './common.js';
import { parseToolOutput, parseXidEvents, type ToolSource } from './index.js';
import { NPU_SMI_910B_TABLE } from './testing.js';
import { REAL_FIXTURES_DIR, describeWithRealFixtures, readRealFixture } from '../../test/fixtures.js';

const read = readRealFixture;
const OPTIONS = {
  node: 'node-1',
  collectedAt: '2026-01-02T03:04:05.000Z',
  seq: 1,
  bootId: '',
  collector: 'test',
};

type Expect =
  | { ok: number; family: '910B' | '310P' | 'nvidia' }
  | { error: 'tool' | 'not-snapshot' | 'parse'; match: RegExp }
  | { xids: number };

/** The verdict for each file: devices = chips (910B), chips (310P) or GPUs. */
const EXPECTED: Record<string, Expect> = {
  'kmsg-xid-1.txt': { xids: 5 },
  'kmsg-xid-2.txt': { xids: 11 },
  'kmsg-xid-3.txt': { xids: 636 },
  'kmsg-xid-4.txt': { xids: 1 },
  'kmsg-xid-5.txt': { xids: 1 },
  'kmsg-xid-6.txt': { xids: 9 },
  'kmsg-xid-7.txt': { xids: 4 },
  'mindx-clusterinfo-device-1.json': { error: 'not-snapshot', match: /MindCluster cluster-info/ },
  'mindx-deviceinfo-1.json': { error: 'not-snapshot', match: /MindCluster device-info/ },
  'mindx-deviceinfo-2.json': { error: 'not-snapshot', match: /MindCluster device-info/ },
  'mindx-nodeinfo-1.json': { error: 'not-snapshot', match: /MindCluster node-info/ },
  'npu-smi-310-1npu-1.txt': { ok: 1, family: '310P' },
  'npu-smi-310-4chip-2.txt': { ok: 4, family: '310P' },
  'npu-smi-310-4chip-3.txt': { ok: 4, family: '310P' },
  'npu-smi-310b4-1npu-alarm-1.txt': { ok: 1, family: '310P' },
  'npu-smi-310p3-1npu-1.txt': { ok: 1, family: '310P' },
  'npu-smi-310p3-duo-1.txt': { ok: 2, family: '310P' },
  'npu-smi-310p3-duo-2.txt': { ok: 8, family: '310P' },
  'npu-smi-310p3-duo-3.txt': { ok: 2, family: '310P' },
  'npu-smi-310p3-pro-6card-1.txt': { ok: 6, family: '310P' },
  // Cut by the poster after the 4th complete card: what is complete parses.
  'npu-smi-310p3-pro-truncated-2.txt': { ok: 4, family: '310P' },
  'npu-smi-910a-1npu-warning-3.txt': { ok: 1, family: '910B' },
  'npu-smi-910a-8npu-1.txt': { ok: 8, family: '910B' },
  'npu-smi-910a-8npu-4.txt': { ok: 8, family: '910B' },
  'npu-smi-910a-8npu-procs-5.txt': { ok: 8, family: '910B' },
  // Huawei's doc elided NPUs 1-6 as '...': only NPUs 0 and 7 are printed.
  'npu-smi-910a-8npu-warning-elided-2.txt': { ok: 2, family: '910B' },
  'npu-smi-910b1-8npu-1.txt': { ok: 8, family: '910B' },
  'npu-smi-910b2-8npu-1.txt': { ok: 8, family: '910B' },
  'npu-smi-910b2c-16npu-2.txt': { ok: 16, family: '910B' },
  'npu-smi-910b2c-2npu-1.txt': { ok: 2, family: '910B' },
  'npu-smi-910b3-8npu-1.txt': { ok: 8, family: '910B' },
  'npu-smi-910b3-8npu-wide-26x-2.txt': { ok: 8, family: '910B' },
  'npu-smi-910b4-1npu-wide-26x-2.txt': { ok: 1, family: '910B' },
  'npu-smi-910b4-8npu-1.txt': { ok: 8, family: '910B' },
  'npu-smi-a3-ascend910-16chip-2.txt': { ok: 16, family: '910B' },
  'npu-smi-a3-ascend910-16chip-3.txt': { ok: 16, family: '910B' },
  'npu-smi-a3-ascend910-2npu-4chip-1.txt': { ok: 4, family: '910B' },
  'npu-smi-error-8005-1.txt': {
    error: 'tool',
    match: /^line 2: npu-smi failed: dcmi module initialize failed\. ret is -8005$/,
  },
  'npu-smi-error-8020-2.txt': { error: 'tool', match: /^line 2: .*device is used\. ret is -8020$/ },
  'npu-smi-error-invalid-card-1.txt': { error: 'tool', match: /^line 1: npu-smi failed: Invalid card id\.$/ },
  'npu-smi-info-m-310-1.txt': { error: 'not-snapshot', match: /`npu-smi info -m`/ },
  'npu-smi-info-m-910a-2.txt': { error: 'not-snapshot', match: /`npu-smi info -m`/ },
  'npu-smi-info-m-910a-3.txt': { error: 'not-snapshot', match: /`npu-smi info -m`/ },
  'npu-smi-t-board-310p3-duo-2.txt': { error: 'not-snapshot', match: /`npu-smi info -t board`/ },
  'npu-smi-t-board-910a-1.txt': { error: 'not-snapshot', match: /`npu-smi info -t board`/ },
  'npu-smi-t-board-910a-3.txt': { error: 'not-snapshot', match: /`npu-smi info -t board`/ },
  'npu-smi-t-board-chip-910a-1.txt': { error: 'not-snapshot', match: /`npu-smi info -t board`/ },
  'npu-smi-t-board-chip-910a-2.txt': { error: 'not-snapshot', match: /`npu-smi info -t board`/ },
  'npu-smi-t-common-310p3-duo-1.txt': { error: 'not-snapshot', match: /`npu-smi info -t common`/ },
  'npu-smi-t-ecc-910a-1.txt': { error: 'not-snapshot', match: /`npu-smi info -t ecc`/ },
  'npu-smi-t-health-910a-1.txt': { error: 'not-snapshot', match: /`npu-smi info -t health`/ },
  'npu-smi-t-health-910a-alarm-2.txt': { error: 'not-snapshot', match: /`npu-smi info -t health`/ },
  'npu-smi-t-health-910a-ok-3.txt': { error: 'not-snapshot', match: /`npu-smi info -t health`/ },
  'npu-smi-t-power-310p3-duo-1.txt': { error: 'not-snapshot', match: /`npu-smi info -t power`/ },
  'npu-smi-t-product-310p3-duo-1.txt': { error: 'not-snapshot', match: /`npu-smi info -t product`/ },
  'npu-smi-t-usages-310p3-duo-2.txt': { error: 'not-snapshot', match: /`npu-smi info -t usages`/ },
  'npu-smi-t-usages-910a-1.txt': { error: 'not-snapshot', match: /`npu-smi info -t usages`/ },
  'npu-smi-t-usages-910a-3.txt': { error: 'not-snapshot', match: /`npu-smi info -t usages`/ },
  'nvidia-smi-a100-mig-table-2.txt': { ok: 8, family: 'nvidia' },
  'nvidia-smi-a100-table-1.txt': { ok: 8, family: 'nvidia' },
  'nvidia-smi-a100-table-3.txt': { ok: 8, family: 'nvidia' },
  'nvidia-smi-error-nvml-mismatch-1.txt': {
    error: 'tool',
    match: /^line 1: nvidia-smi failed: Failed to initialize NVML: Driver\/library version mismatch$/,
  },
  'nvidia-smi-gpu-lost-1.txt': { error: 'tool', match: /GPU 0000:03:00\.0: GPU is lost/ },
  'nvidia-smi-gpu-lost-2.txt': { error: 'tool', match: /0000:09:00\.0: Unknown Error/ },
  'nvidia-smi-gpu-lost-3.txt': { error: 'tool', match: /GPU0000:07:00\.0: Unknown Error/ },
  'nvidia-smi-h100-table-1.txt': { ok: 8, family: 'nvidia' },
  'nvidia-smi-h100-table-2.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-h200-mig-table-2.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-h200-table-1.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-l40s-table-1.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-q-a10-1gpu-4.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-q-h100-8gpu-1.txt': { ok: 8, family: 'nvidia' },
  'nvidia-smi-q-h100-8gpu-2.txt': { ok: 8, family: 'nvidia' },
  'nvidia-smi-q-h100-mig-1gpu-8.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-q-h100-truncated-3.txt': {
    error: 'parse',
    match: /^line 91: the output ends inside the block of GPU 00000000:53:00\.0 .*truncated$/,
  },
  'nvidia-smi-q-h200-1gpu-7.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-q-rtx4090-8gpu-5.txt': { ok: 8, family: 'nvidia' },
  'nvidia-smi-q-titanv-1gpu-6.txt': { ok: 1, family: 'nvidia' },
  // The header says 4 attached GPUs but the contributor trimmed the document to one <gpu>:
  // three GPUs missing from a snapshot is what the detector exists to catch, so it is refused.
  'nvidia-smi-q-x-a100-mig-1.xml': {
    error: 'parse',
    match:
      /^line 7: Attached GPUs says 4 but 1 GPU element found: the output is cut short or was taken with -i/,
  },
  'nvidia-smi-q-x-a10g-2.xml': { ok: 1, family: 'nvidia' },
  'nvidia-smi-q-x-rtx3090-5.xml': { ok: 1, family: 'nvidia' },
  'nvidia-smi-q-x-rtx4000sffada-4.xml': { ok: 1, family: 'nvidia' },
  'nvidia-smi-q-x-t4-3.xml': { ok: 1, family: 'nvidia' },
  'nvidia-smi-query-csv-1.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-query-csv-2.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-query-csv-3-compute-apps.txt': { error: 'not-snapshot', match: /--query-compute-apps/ },
  'nvidia-smi-query-csv-4.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-query-csv-5.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-query-csv-6.txt': { ok: 2, family: 'nvidia' },
  // Noheader files of other field lists do not match DEFAULT_QUERY_FIELDS (11 columns).
  'nvidia-smi-query-csv-noheader-7.txt': {
    error: 'parse',
    match: /^line 1: row has 5 columns but the field list .* has 11$/,
  },
  'nvidia-smi-query-csv-noheader-8.txt': { error: 'parse', match: /^line 1: row has 5 columns/ },
  'nvidia-smi-query-csv-noheader-9.txt': { error: 'parse', match: /^line 1: row has 7 columns/ },
  'nvidia-smi-query-csv-noheader-nounits-10.txt': { error: 'parse', match: /^line 1: row has 12 columns/ },
  'nvidia-smi-query-csv-noheader-nounits-11.txt': { error: 'parse', match: /^line 1: row has 22 columns/ },
  'nvidia-smi-query-csv-noheader-nounits-12.txt': { error: 'parse', match: /^line 1: row has 12 columns/ },
  'nvidia-smi-rtx4000ada-table-err-2.txt': { ok: 2, family: 'nvidia' },
  'nvidia-smi-rtx4090-table-err-1.txt': { ok: 1, family: 'nvidia' },
  'nvidia-smi-v100-table-err-3.txt': { ok: 1, family: 'nvidia' },
};

/** The --from a file's name implies. */
function sourceOf(name: string): ToolSource {
  if (name.startsWith('npu-smi-')) return 'npu-smi';
  if (name.startsWith('nvidia-smi-')) return 'nvidia-smi';
  return 'hdc';
}

function deviceCount(snapshot: Snapshot): number {
  const p = snapshot.payload;
  if (p.family === '910B') return p.npus.length;
  if (p.family === '310P') return p.cards.reduce((n, card) => n + card.chips.length, 0);
  return p.gpus.length;
}

/** Runs the parser and returns the error it threw, or undefined. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

describeWithRealFixtures('every real fixture', () => {
  it('has a verdict for each file and no verdict for a missing file', () => {
    const files = readdirSync(REAL_FIXTURES_DIR)
      .filter((name) => name !== 'SOURCES.md')
      .sort();
    expect(files.filter((name) => !(name in EXPECTED))).toEqual([]);
    expect(Object.keys(EXPECTED).filter((name) => !files.includes(name))).toEqual([]);
  });

  it.each(Object.keys(EXPECTED).sort())('%s', (name) => {
    const expected = EXPECTED[name];
    if (!expected) throw new Error(`no verdict for ${name}`);
    const text = read(name);
    if ('xids' in expected) {
      expect(parseXidEvents(text)).toHaveLength(expected.xids);
      return;
    }
    if ('ok' in expected) {
      const snapshot = parseToolOutput(sourceOf(name), text, OPTIONS);
      expect(snapshotSchema.safeParse(snapshot).success).toBe(true);
      expect(snapshot.payload.family).toBe(expected.family);
      expect(deviceCount(snapshot)).toBe(expected.ok);
      // The name's own count, where it states one (-8npu-, -16chip-, -8gpu-).
      const named = /-(\d+)(?:npu|chip|gpu)-/.exec(name.replace(/-\d+npu-(?=\d+chip)/, '-'));
      if (named && !name.includes('elided')) expect(deviceCount(snapshot)).toBe(Number(named[1]));
      return;
    }
    const error = thrown(() => parseToolOutput(sourceOf(name), text, OPTIONS));
    const type = { tool: ToolError, 'not-snapshot': NotSnapshotError, parse: ParseError }[expected.error];
    expect(error).toBeInstanceOf(type);
    const message = (error as Error).message;
    expect(message).toMatch(expected.match);
    expect(message).not.toContain('\n');
  });
});

describeWithRealFixtures('specific values from real files', () => {
  const snap = (name: string): Snapshot => parseToolOutput(sourceOf(name), read(name), OPTIONS);

  it('910B3: temperatures, power, HBM and bus ids of each NPU', () => {
    const p = snap('npu-smi-910b3-8npu-1.txt').payload;
    if (p.family !== '910B') throw new Error('family');
    expect(p.driver_version).toBe('25.0.rc1.b010');
    expect(p.npus[0]).toMatchObject({
      npu: 0,
      chip: 0,
      name: '910B3',
      health: 'OK',
      temp_c: 41,
      power_w: 124.9,
      aicore_pct: 27,
    });
    expect(p.npus[0]?.hbm).toMatchObject({
      used_mb: 59718,
      total_mb: 65536,
      ecc: { single_bit: null, double_bit: null },
    });
    expect(p.npus[7]?.pcie).toEqual({ bus_id: '0000:42:00.0', link: 'up' });
    expect(p.npus[0]?.error_codes).toEqual([]);
  });

  it('A3 Ascend910: two chips per NPU with phy ids, "-" power is null', () => {
    const p = snap('npu-smi-a3-ascend910-16chip-2.txt').payload;
    if (p.family !== '910B') throw new Error('family');
    expect(p.npus.map((n) => [n.npu, n.chip, n.phy_id])).toEqual(
      Array.from({ length: 16 }, (_, i) => [Math.floor(i / 2), i % 2, i]),
    );
    expect(p.npus[0]?.power_w).toBe(199.1);
    expect(p.npus[1]?.power_w).toBeNull();
    expect(p.npus[1]?.pcie.bus_id).toBe('0000:9F:00.0');
  });

  it('310P3 Duo: chips grouped into cards by NPU id, NA power is null', () => {
    const p = snap('npu-smi-310p3-duo-2.txt').payload;
    if (p.family !== '310P') throw new Error('family');
    expect(p.cards.map((c) => c.card)).toEqual([0, 96, 32768, 32896]);
    expect(p.cards[2]).toMatchObject({
      name: '310P3',
      bus_id: '0000:81:00.0',
      pcie_link: 1,
      mcu_power_w: null,
    });
    expect(p.cards[0]?.chips.map((c) => [c.chip, c.device_id, c.temperature, c.power_w])).toEqual([
      [0, 0, 86, null],
      [1, 1, 84, null],
    ]);
    expect(p.cards[0]?.chips[0]?.ddr).toEqual({
      used_mb: 35552,
      total_mb: 44278,
      ecc_sbe: null,
      ecc_dbe: null,
    });
  });

  it('Atlas 300 (Ascend 310, four chips on one card) is the 310P family with per-chip power', () => {
    const p = snap('npu-smi-310-4chip-3.txt').payload;
    if (p.family !== '310P') throw new Error('family');
    expect(p.cards).toHaveLength(1);
    expect(p.cards[0]?.chips.map((c) => c.device_id)).toEqual([3, 4, 5, 6]);
    expect(p.cards[0]?.chips[0]).toMatchObject({ temperature: 73, power_w: 12.8 });
  });

  it('310B4 Alarm with Bus-Id NA', () => {
    const p = snap('npu-smi-310b4-1npu-alarm-1.txt').payload;
    if (p.family !== '310P') throw new Error('family');
    expect(p.cards[0]?.bus_id).toBeNull();
    expect(p.cards[0]?.chips[0]).toMatchObject({
      health: 'Alarm',
      temperature: 65,
      ddr: { used_mb: 3628, total_mb: 15609 },
    });
  });

  it('the misaligned Warning cell of the elided doc sample still reads as the health', () => {
    const p = snap('npu-smi-910a-8npu-warning-elided-2.txt').payload;
    if (p.family !== '910B') throw new Error('family');
    expect(p.npus.map((n) => [n.npu, n.health, n.temp_c])).toEqual([
      [0, 'Warning', 37],
      [7, 'OK', 38],
    ]);
  });

  it('nvidia table: bus id normalised, ERR! fan ignored, ERR! power null, ECC column', () => {
    const a100 = snap('nvidia-smi-a100-table-1.txt');
    expect(a100.collected_at).toBe(OPTIONS.collectedAt);
    const gpus = a100.payload.family === 'nvidia' ? a100.payload.gpus : [];
    expect(gpus[2]).toMatchObject({
      index: 2,
      bus_id: '0000:51:00.0',
      temperature_gpu: 47,
      power_draw_w: 324,
      ecc_uncorrected_volatile: 0,
    });
    const v100 = snap('nvidia-smi-v100-table-err-3.txt').payload;
    expect(v100.family === 'nvidia' && v100.gpus[0]).toMatchObject({
      index: 1,
      bus_id: '8ED0:00:00.0',
      power_draw_w: null,
      temperature_gpu: 29,
    });
    const ada = snap('nvidia-smi-rtx4000ada-table-err-2.txt').payload;
    expect(
      ada.family === 'nvidia' && ada.gpus.map((g) => [g.index, g.temperature_gpu, g.power_draw_w]),
    ).toEqual([
      [13, 33, 4],
      [14, 68, 99],
    ]);
    const mig = snap('nvidia-smi-a100-mig-table-2.txt').payload;
    expect(mig.family === 'nvidia' && mig.gpus[0]?.ecc_uncorrected_volatile).toBeNull();
  });

  it('nvidia -q: uuid, ECC totals, PCIe link, power', () => {
    const p = snap('nvidia-smi-q-h100-8gpu-1.txt').payload;
    if (p.family !== 'nvidia') throw new Error('family');
    expect(p.driver_version).toBe('535.161.08');
    expect(p.gpus[0]).toMatchObject({
      index: 0,
      uuid: 'GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa',
      bus_id: '0000:19:00.0',
      name: 'NVIDIA H100 80GB HBM3',
      temperature_gpu: 29,
      power_draw_w: 67.74,
      ecc_corrected_volatile: 0,
      ecc_uncorrected_volatile: 0,
      pcie_link_gen: 5,
      pcie_link_width: 16,
    });
    expect(p.gpus.map((g) => g.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const titan = snap('nvidia-smi-q-titanv-1gpu-6.txt').payload;
    // ECC disabled: the Single/Double Bit totals read N/A.
    expect(titan.family === 'nvidia' && titan.gpus[0]).toMatchObject({
      ecc_corrected_volatile: null,
      power_draw_w: 29.02,
      temperature_gpu: 44,
    });
  });

  it('nvidia -q -x: the newest DTD (instant power) and the oldest (power_readings)', () => {
    const ada = snap('nvidia-smi-q-x-rtx4000sffada-4.xml').payload;
    expect(ada.family === 'nvidia' && ada.gpus[0]).toMatchObject({
      bus_id: '0000:06:00.0',
      power_draw_w: 8.44,
      temperature_gpu: 38,
      ecc_corrected_volatile: null,
    });
    const t4 = snap('nvidia-smi-q-x-t4-3.xml').payload;
    expect(t4.family === 'nvidia' && t4.gpus[0]).toMatchObject({
      name: 'Tesla T4',
      pcie_link_gen: 3,
      pcie_link_width: 8,
      ecc_uncorrected_volatile: 0,
    });
  });

  it('query CSV with units and [N/A]', () => {
    const p = snap('nvidia-smi-query-csv-6.txt').payload;
    expect(
      p.family === 'nvidia' && p.gpus.map((g) => [g.index, g.name, g.temperature_gpu, g.power_draw_w]),
    ).toEqual([
      [0, 'GeForce GTX 1080 Ti', 60, 106.56],
      [1, 'GeForce GTX 1060 6GB', 49, 5.68],
    ]);
    const h200 = snap('nvidia-smi-query-csv-1.txt').payload;
    expect(h200.family === 'nvidia' && h200.gpus[0]).toMatchObject({
      bus_id: '0000:83:00.0',
      pcie_link_gen: 5,
      pcie_link_width: 16,
      temperature_gpu: 28,
    });
  });

  it('the lost GPU bus ids travel on the ToolError', () => {
    const error = thrown(() => snap('nvidia-smi-gpu-lost-3.txt'));
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).lostBusIds).toEqual(['0000:07:00.0']);
    expect((error as ToolError).code).toBe('tool_error');
    expect((thrown(() => snap('nvidia-smi-error-nvml-mismatch-1.txt')) as ToolError).lostBusIds).toEqual([]);
  });

  it('an 8-GPU -q cut after its first GPU block is refused, naming the count', () => {
    const text = read('nvidia-smi-q-h100-8gpu-1.txt');
    const second = text.indexOf('\nGPU 00000000:', text.indexOf('\nGPU 00000000:') + 1);
    expect(second).toBeGreaterThan(0);
    const error = thrown(() => parseToolOutput('nvidia-smi', text.slice(0, second + 1), OPTIONS));
    expect(error).toBeInstanceOf(ParseError);
    expect((error as Error).message).toMatch(/^line \d+: Attached GPUs says 8 but 1 GPU block found/);
  });

  it('the output timestamp is used only when asked for', () => {
    const text = read('nvidia-smi-q-h200-1gpu-7.txt');
    expect(
      parseToolOutput('nvidia-smi', text, { ...OPTIONS, preferOutputTimestamp: true }).collected_at,
    ).toBe('2026-07-03T22:10:45.000Z');
    expect(parseToolOutput('nvidia-smi', text, OPTIONS).collected_at).toBe(OPTIONS.collectedAt);
  });
});

describe('parseToolOutput envelope and refusals', () => {
  it('builds the envelope from the options', () => {
    const snapshot = parseToolOutput('npu-smi', NPU_SMI_910B_TABLE, {
      ...OPTIONS,
      seq: 7,
      bootId: 'b1',
      collector: 'npu-smi',
    });
    expect(snapshot).toMatchObject({
      schema: 'hdc.health/v1',
      node: 'node-1',
      seq: 7,
      boot_id: 'b1',
      collector: 'npu-smi',
      cached: false,
    });
  });

  it.each<[ToolSource, string]>([
    ['npu-smi', ''],
    ['nvidia-smi', '  \n\n'],
    ['hdc', '\n'],
  ])('empty %s output is a ParseError at line 1', (from, text) => {
    const error = thrown(() => parseToolOutput(from, text, OPTIONS));
    expect(error).toBeInstanceOf(ParseError);
    expect((error as ParseError).line).toBe(1);
  });

  it('an unknown layout names its first line', () => {
    const error = thrown(() => parseToolOutput('npu-smi', '\nhello world\n', OPTIONS));
    expect((error as ParseError).message).toBe(
      "line 2: not an npu-smi table (no '| NPU  Name | Health |' header): 'hello world'",
    );
    const nv = thrown(() =>
      parseToolOutput('nvidia-smi', 'Sat Jan  1 00:00:00 2026\nsomething else', OPTIONS),
    );
    expect((nv as ParseError).line).toBe(1);
  });
});

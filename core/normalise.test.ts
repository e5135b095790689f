import { describe, expect, it } from '@jest/globals';
import {
  deviceObservationSchema,
  snapshotSchema,
  type DeviceObservation,
  type Snapshot,
} from '../contracts/index.js';
import { readExampleJson } from '../test/fixtures.js';
import { lowerHealth, normalise } from './normalise.js';

const fixture = (name: string): Snapshot => snapshotSchema.parse(readExampleJson(name));

const envelope = {
  schema: 'hdc.health/v1',
  node: 'n1',
  seq: 1,
  collected_at: '2026-11-29T08:00:00Z',
  collector: 'sim',
};
const snap = (payload: unknown): Snapshot => snapshotSchema.parse({ ...envelope, payload });

describe('normalise', () => {
  it.each(['snapshot-910b.json', 'snapshot-310p.json', 'snapshot-nvidia.json'])(
    'turns %s into valid observations with unique keys',
    (name) => {
      const devices = normalise(fixture(name));
      expect(devices.length).toBeGreaterThan(0);
      for (const d of devices) deviceObservationSchema.parse(d);
      expect(new Set(devices.map((d) => d.key)).size).toBe(devices.length);
    },
  );

  it('maps a 910B chip per the table', () => {
    const [d] = normalise(fixture('snapshot-910b.json'));
    expect(d).toEqual({
      id: 'npu0',
      key: '0000:C1:00.0',
      resource_id: 'Ascend910-0',
      family: '910B',
      kind: 'npu',
      model: '910B2',
      health: 'ok',
      temperature_c: 52.5,
      power_w: 181.4,
      memory_used_mb: 20480,
      memory_total_mb: 65536,
      ecc_errors: 0,
      ecc_uncorrectable: 0,
      pcie_link_status: 'up',
      error_codes: [],
      xids: [],
      present: true,
    });
  });

  it('names A3 chips npu<npu>-<chip>, uses phy_id for the resource, falls back to id as key', () => {
    const devices = normalise(
      snap({
        family: '910B',
        npus: [
          {
            npu: 3,
            chip: 0,
            phy_id: 6,
            health: 'Warning',
            hbm: { ecc: { single_bit: 2, double_bit: 1 } },
            pcie: { bus_id: null, link: 'down' },
          },
          {
            npu: 3,
            chip: 1,
            phy_id: 7,
            health: 'Alarm',
            hbm: { ecc: { single_bit: null, double_bit: null } },
          },
        ],
      }),
    );
    expect(
      devices.map((d) => [
        d.id,
        d.key,
        d.resource_id,
        d.health,
        d.ecc_errors,
        d.ecc_uncorrectable,
        d.pcie_link_status,
      ]),
    ).toEqual([
      ['npu3', 'npu3', 'Ascend910-6', 'warning', 3, 1, 'down'],
      ['npu3-1', 'npu3-1', 'Ascend910-7', 'alarm', null, null, null],
    ]);
  });

  it('keys a chip beyond the first by bus id and chip, whatever the order of the rows', () => {
    const chip0 = { npu: 0, chip: 0, pcie: { bus_id: '0000:01:00.0', link: 'up' as const } };
    const chip1 = { npu: 0, chip: 1, pcie: { bus_id: '0000:01:00.0', link: 'up' as const } };
    const keys = (npus: (typeof chip0)[]): Record<string, string> =>
      Object.fromEntries(normalise(snap({ family: '910B', npus })).map((d) => [d.id, d.key]));
    const expected = { npu0: '0000:01:00.0', 'npu0-1': '0000:01:00.0/1' };
    expect(keys([chip0, chip1])).toEqual(expected);
    expect(keys([chip1, chip0])).toEqual(expected);
    // The first chip leaving the listing does not hand its identity to the second.
    expect(keys([chip1])).toEqual({ 'npu0-1': '0000:01:00.0/1' });
  });

  it('keeps keys unique even for malformed output that repeats a device', () => {
    const row = { npu: 2, chip: 0, pcie: { bus_id: '0000:02:00.0', link: 'up' as const } };
    const keys = normalise(snap({ family: '910B', npus: [row, { ...row, npu: 3 }] })).map((d) => d.key);
    expect(keys).toEqual(['0000:02:00.0', '0000:02:00.0#npu3']);
  });

  it('keeps keys unique when the suffixed key is itself listed (a dishonest agent)', () => {
    const gpu = (index: number, uuid: string) => ({ index, uuid });
    const keys = normalise(
      snap({ family: 'nvidia', gpus: [gpu(1, 'A#gpu1'), gpu(1, 'A'), gpu(1, 'A'), gpu(1, 'A')] }),
    ).map((d) => d.key);
    expect(keys).toEqual(['A#gpu1', 'A', 'A#gpu1#2', 'A#gpu1#3']);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('reads an ECC total as unknown when either part is unknown (no fake reset or increase)', () => {
    const [npu] = normalise(
      snap({ family: '910B', npus: [{ npu: 0, hbm: { ecc: { single_bit: null, double_bit: 1 } } }] }),
    );
    expect(npu?.ecc_errors).toBeNull();
    expect(npu?.ecc_uncorrectable).toBe(1);
  });

  it('maps 310P chips: key bus+chip, card power split across chips, chip power preferred, card link', () => {
    const devices = normalise(
      snap({
        family: '310P',
        cards: [
          {
            card: 0,
            name: '310P3',
            bus_id: '0000:01:00.0',
            pcie_link: 0,
            mcu_power_w: 72,
            chips: [
              { chip: 0, device_id: 4, health: 'Critical', temperature: 50, ddr: { ecc_sbe: 1, ecc_dbe: 2 } },
              { chip: 1, device_id: 5, health: 'OK', temperature: null, power_w: 30, ddr: {} },
            ],
          },
          {
            card: 1,
            name: '310P3',
            bus_id: null,
            pcie_link: null,
            mcu_power_w: null,
            chips: [{ chip: 0, device_id: 6, error_codes: ['80de0207'], present: false }],
          },
        ],
      }),
    );
    expect(
      devices.map((d) => [
        d.id,
        d.key,
        d.resource_id,
        d.model,
        d.health,
        d.power_w,
        d.ecc_errors,
        d.ecc_uncorrectable,
        d.pcie_link_status,
        d.present,
      ]),
    ).toEqual([
      ['npu4', '0000:01:00.0/0', 'Ascend310P-4', '310P3', 'critical', 36, 3, 2, 'down', true],
      ['npu5', '0000:01:00.0/1', 'Ascend310P-5', '310P3', 'ok', 30, null, null, 'down', true],
      ['npu6', 'npu6', 'Ascend310P-6', '310P3', 'unknown', null, null, null, null, false],
    ]);
    expect(devices[2]?.error_codes).toEqual(['80de0207']);
  });

  it('maps GPUs: key uuid, else bus id, else id; link up unless every metric is null; XID times kept', () => {
    const xids = [{ xid: 79, at: '2026-11-29T07:59:00Z' }];
    const devices = normalise(
      snap({
        family: 'nvidia',
        gpus: [
          {
            index: 0,
            uuid: 'GPU-a',
            bus_id: '0000:10:00.0',
            name: 'H100',
            temperature_gpu: 40,
            power_draw_w: 300,
            ecc_corrected_volatile: 2,
            ecc_uncorrected_volatile: 1,
            pcie_link_gen: 5,
            pcie_link_width: 16,
            xid_events: xids,
          },
          { index: 1, bus_id: '0000:11:00.0' },
          { index: 2 },
          { index: 3, uuid: 'GPU-d', present: false },
        ],
      }),
    );
    expect(
      devices.map((d) => [
        d.id,
        d.key,
        d.resource_id,
        d.kind,
        d.health,
        d.ecc_errors,
        d.ecc_uncorrectable,
        d.pcie_link_status,
      ]),
    ).toEqual([
      ['gpu0', 'GPU-a', 'GPU-a', 'gpu', 'unknown', 3, 1, 'up'],
      ['gpu1', '0000:11:00.0', '0000:11:00.0', 'gpu', 'unknown', null, null, 'down'],
      ['gpu2', 'gpu2', 'gpu2', 'gpu', 'unknown', null, null, 'down'],
      ['gpu3', 'GPU-d', 'GPU-d', 'gpu', 'unknown', null, null, null],
    ]);
    expect(devices[0]?.xids).toEqual([{ xid: 79, at: '2026-11-29T07:59:00Z' }]);
  });

  describe('a device the tool lists but cannot read (readable: false)', () => {
    it('reads a GPU with every metric null as unknown, not as off the bus, and keeps its XIDs', () => {
      const xids = [{ xid: 13, at: '2026-11-29T07:59:00Z' }];
      const [unreadable, offBus] = normalise(
        snap({
          family: 'nvidia',
          gpus: [
            { index: 0, uuid: 'GPU-a', readable: false, xid_events: xids },
            { index: 1, uuid: 'GPU-b' },
          ],
        }),
      );
      expect(unreadable).toMatchObject({ key: 'GPU-a', present: true, pcie_link_status: null, xids });
      expect(offBus?.pcie_link_status).toBe('down');
    });

    it('voids whatever readings an unreadable GPU or 910B chip was sent with', () => {
      const [gpu] = normalise(
        snap({
          family: 'nvidia',
          gpus: [
            { index: 0, temperature_gpu: 99, power_draw_w: 1, ecc_uncorrected_volatile: 4, readable: false },
          ],
        }),
      );
      const [npu] = normalise(
        snap({
          family: '910B',
          npus: [
            {
              npu: 0,
              health: 'Critical',
              temp_c: 99,
              power_w: 1,
              hbm: { ecc: { single_bit: 1, double_bit: 1 } },
              pcie: { bus_id: '0000:C1:00.0', link: 'down' },
              error_codes: ['80E01801'],
              readable: false,
            },
          ],
        }),
      );
      const readings = (d: DeviceObservation | undefined): unknown[] => [
        d?.health,
        d?.temperature_c,
        d?.power_w,
        d?.ecc_errors,
        d?.ecc_uncorrectable,
        d?.pcie_link_status,
        d?.present,
      ];
      expect(readings(gpu)).toEqual(['unknown', null, null, null, null, null, true]);
      expect(readings(npu)).toEqual(['unknown', null, null, null, null, null, true]);
      // Fault codes are not metrics: the tool listed them, so they count.
      expect(npu?.error_codes).toEqual(['80E01801']);
    });

    it("keeps a 310P chip's card-level link and MCU power share", () => {
      const devices = normalise(
        snap({
          family: '310P',
          cards: [
            {
              card: 0,
              bus_id: '0000:01:00.0',
              pcie_link: 0,
              mcu_power_w: 40,
              chips: [
                { chip: 0, device_id: 0, health: 'Critical', temperature: 90, readable: false },
                { chip: 1, device_id: 1, health: 'OK', temperature: 50 },
              ],
            },
          ],
        }),
      );
      expect(devices.map((d) => [d.id, d.health, d.temperature_c, d.power_w, d.pcie_link_status])).toEqual([
        ['npu0', 'unknown', null, 20, 'down'],
        ['npu1', 'ok', 50, 20, 'down'],
      ]);
    });

    it('leaves readable: true and a left-out field alike', () => {
      const gpus = [{ index: 0, uuid: 'GPU-a', temperature_gpu: 40, readable: true }];
      const [explicit] = normalise(snap({ family: 'nvidia', gpus }));
      const [implicit] = normalise(snap({ family: 'nvidia', gpus: [{ ...gpus[0], readable: undefined }] }));
      expect(explicit).toEqual(implicit);
      expect(explicit?.pcie_link_status).toBe('up');
    });
  });

  describe('the inference canary', () => {
    const gpus = [
      { index: 0, uuid: 'GPU-a', temperature_gpu: 40 },
      { index: 1, uuid: 'GPU-b', temperature_gpu: 41 },
    ];

    it("copies the node's failure count onto every device", () => {
      const canary = { ok: false, consecutive_failures: 3, at: '2026-11-29T07:59:59Z' };
      const devices = normalise(snap({ family: 'nvidia', gpus, canary }));
      expect(devices.map((d) => d.inference_canary_failures)).toEqual([3, 3]);
      for (const d of devices) deviceObservationSchema.parse(d);
    });

    it('carries no count when the node runs no canary', () => {
      const devices = normalise(snap({ family: 'nvidia', gpus }));
      expect(devices.map((d) => 'inference_canary_failures' in d)).toEqual([false, false]);
    });
  });

  it.each([
    ['OK', 'ok'],
    ['Warning', 'warning'],
    ['Alarm', 'alarm'],
    ['Critical', 'critical'],
    ['UNKNOWN', 'unknown'],
    ['CRITICAL', 'critical'],
    ['', ''],
  ])('lower-cases health %j', (input, output) => {
    expect(lowerHealth(input)).toBe(output);
  });
});

import { describe, expect, it } from '@jest/globals';
import { snapshotSchema } from '../../contracts/index.js';
import { gpuSnapshot, npuInput, npuSnapshot } from '../../core/engine/testing.js';
import { deviceTelemetry } from './device-telemetry.js';

const failedEntry = {
  node: 'node-a',
  observed_at: '2026-01-01T00:00:00.000Z',
  agent: 'ok',
  summary: { total: 2, healthy: 1, degraded: 0, failed: 1, unknown: 0 },
  npus: [
    {
      id: 'gpu1',
      key: 'GPU-0000-1',
      resource_id: 'GPU-0000-1',
      kind: 'gpu',
      model: 'NVIDIA H100 80GB HBM3',
      status: 'failed',
      since: '2026-01-01T00:00:00.000Z',
      reason: 'ecc-uncorrectable',
      reasons: ['ecc-uncorrectable', 'high-temp'],
      signals: [],
      temperature_c: 91,
      power_w: 300,
      ecc_errors: 3,
      pcie_link_status: null,
    },
  ],
};

describe('deviceTelemetry', () => {
  it('reads each device of the snapshot, labelled by node, display id, PCI key, model and family', () => {
    const snapshot = npuSnapshot({ seq: 1, t: 0 }, [{ npu: 0, temp: 61, power: 250, sbe: 4, dbe: 1 }]);
    const [row] = deviceTelemetry('node-a', snapshot, { entry: null, stale: false });
    expect(row).toEqual({
      labels: { node: 'node-a', device: 'npu0', pci: '0000:C1:00.0', model: '910B3', family: '910B' },
      temperatureC: 61,
      powerW: 250,
      memoryUsedBytes: null,
      memoryTotalBytes: null,
      eccCorrectable: 4,
      eccUncorrectable: 1,
      pcieLinkUp: 1,
      health: 'ok',
      status: 'healthy',
      reasons: [],
    });
  });

  it('gives the published status and reasons of listed devices, healthy to the others', () => {
    const snapshot = gpuSnapshot({ seq: 1, t: 0 }, [{ index: 0 }, { index: 1, temp: 91, uncorrected: 3 }]);
    const rows = deviceTelemetry('node-a', snapshot, { entry: failedEntry, stale: false });
    expect(rows.map((r) => [r.labels.device, r.status, r.reasons])).toEqual([
      ['gpu0', 'healthy', []],
      ['gpu1', 'failed', ['ecc-uncorrectable', 'high-temp']],
    ]);
    expect(rows[1]).toMatchObject({ eccUncorrectable: 3, eccCorrectable: 0, pcieLinkUp: 1 });
  });

  it('says no status while the answer is stale or unreadable, but still gives the readings', () => {
    const snapshot = gpuSnapshot({ seq: 1, t: 0 }, [{ index: 0, temp: 70 }]);
    for (const published of [
      { entry: failedEntry, stale: true },
      { entry: null, stale: true },
      { entry: { node: 'node-a', npus: 'not a list' }, stale: false },
    ]) {
      const [row] = deviceTelemetry('node-a', snapshot, published);
      expect(row).toMatchObject({ temperatureC: 70, status: null, reasons: [] });
    }
  });

  it('keeps a listed device the snapshot no longer has, with no readings', () => {
    const snapshot = gpuSnapshot({ seq: 1, t: 0 }, [{ index: 0 }]);
    const rows = deviceTelemetry('node-a', snapshot, { entry: failedEntry, stale: false });
    expect(rows[1]).toMatchObject({
      labels: { device: 'gpu1', pci: 'GPU-0000-1', family: 'nvidia' },
      temperatureC: null,
      health: 'unknown',
      status: 'failed',
    });
  });

  it('gives HBM use in bytes (the tools print MB, which are MiB)', () => {
    const npu = npuInput({ npu: 1 });
    const snapshot = snapshotSchema.parse({
      schema: 'hdc.health/v1',
      node: 'node-a',
      boot_id: 'boot-1',
      seq: 1,
      collected_at: '2026-01-01T00:00:00.000Z',
      collector: 'sim',
      cached: false,
      payload: {
        family: '910B',
        npus: [{ ...npu, hbm: { ...(npu.hbm as object), used_mb: 1024, total_mb: 65536 } }],
      },
    });
    const [row] = deviceTelemetry('node-a', snapshot, { entry: null, stale: false });
    expect(row).toMatchObject({ memoryUsedBytes: 1024 * 2 ** 20, memoryTotalBytes: 65536 * 2 ** 20 });
  });

  it('has nothing to say before the first snapshot', () => {
    expect(deviceTelemetry('node-a', null, { entry: null, stale: true })).toEqual([]);
  });
});

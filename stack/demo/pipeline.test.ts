import { describe, expect, it } from '@jest/globals';
import type { PublishedDocument, PublishedNode } from '../../contracts/index.js';
import { createDemo } from './command.js';
import { memoryIO } from '../../cli/testing.js';
import { checkFinal, demoFleet, documentShows, expectations, planFaults } from './scenario.js';
import { LiveView, painter, reportTable } from './view.js';

const npu = (id: string, status: string, reason: string | null) =>
  ({ id, status, reason, reasons: reason ? [reason] : [] }) as unknown as PublishedNode['npus'][number];
const documentOf = (
  nodes: Record<string, PublishedNode['npus']>,
  extra: Partial<PublishedDocument> = {},
): PublishedDocument =>
  ({
    timestamp: '2026-01-01T00:00:00.000Z',
    publisher: { identity: 'replica-1', term: 1 },
    unobserved: [],
    nodes: Object.fromEntries(Object.entries(nodes).map(([name, npus]) => [name, { npus }])),
    ...extra,
  }) as unknown as PublishedDocument;

describe('the pipeline demo scenario', () => {
  it('places every fault on its own node of the fleet, the 16-node one on the core scenario’s devices', () => {
    const plan = planFaults(demoFleet('full'));
    expect(plan).toMatchObject({
      heat: { node: 'atlas900-node-003', device: 'npu5' },
      ecc: { node: 'gpu-node-002', device: 'gpu3' },
      link: { node: 'atlas300-node-002', device: 'npu2', siblings: ['npu2', 'npu3'] },
      vanish: { node: 'atlas300-node-004', device: 'npu6' },
      silent: { node: 'gpu-node-005' },
    });
    const short = planFaults(demoFleet('short'));
    const nodes = [
      short.heat,
      short.ecc,
      short.link,
      short.vanish,
      short.silent,
      short.nic,
      short.canary,
    ].map((p) => p.node);
    expect(new Set(nodes).size).toBe(7);
    expect(demoFleet('short')).toHaveLength(7);
  });

  it('matches a row only on the expected status and reason', () => {
    const plan = planFaults(demoFleet('short'));
    const rows = expectations(plan);
    const { node, device } = plan.heat;
    expect(
      documentShows(documentOf({ [node]: [npu(device, 'degraded', 'high-temp')] }), rows.heatDegraded!),
    ).toBe(true);
    expect(
      documentShows(documentOf({ [node]: [npu(device, 'degraded', 'ecc-error')] }), rows.heatDegraded!),
    ).toBe(false);
    expect(documentShows(documentOf({}), rows.heatFailed!)).toBe(false);
    // Healthy devices are left out of the document: the silent node back means absent.
    expect(documentShows(documentOf({}), rows.silenceEnded!)).toBe(true);
  });

  it('fails the check for a device in the wrong final state and for an unobserved node', () => {
    const fleet = demoFleet('short');
    const plan = planFaults(fleet);
    const failedAll = documentOf({
      [plan.heat.node]: [npu(plan.heat.device, 'failed', 'high-temp')],
      [plan.ecc.node]: [npu(plan.ecc.device, 'failed', 'ecc-uncorrectable')],
      [plan.link.node]: plan.link.siblings.map((id) => npu(id, 'failed', 'pcie-link-down')),
      [plan.vanish.node]: [npu(plan.vanish.device, 'failed', 'device-missing')],
    });
    expect(checkFinal(fleet, plan, failedAll)).toEqual([]);
    const eccRecovered = { ...failedAll, nodes: { ...failedAll.nodes, [plan.ecc.node]: { npus: [] } } };
    expect(checkFinal(fleet, plan, eccRecovered as unknown as PublishedDocument)).toEqual([
      `${plan.ecc.node}/${plan.ecc.device}: healthy, expected failed`,
    ]);
    const silentLeft = checkFinal(fleet, plan, { ...failedAll, unobserved: [plan.silent.node] });
    expect(silentLeft).toHaveLength(8);
    expect(checkFinal(fleet, plan, undefined)).toEqual(['no status document was published']);
  });
});

describe('the pipeline demo view', () => {
  it('prints one plain line per node and change, and the leader, when stdout is not a terminal', () => {
    const fleet = demoFleet('short');
    let out = '';
    const view = new LiveView(
      fleet,
      (t) => (out += t),
      false,
      painter(false),
      () => Date.now(),
    );
    view.document(documentOf({}));
    view.document(documentOf({ 'gpu-node-002': [npu('gpu3', 'failed', 'ecc-uncorrectable')] }));
    const lines = out.trim().split('\n');
    expect(lines[0]).toMatch(/leader: replica-1 \(term 1\)$/);
    expect(lines[1]).toMatch(/64 devices on 7 nodes\s+unknown -> healthy$/);
    expect(lines[2]).toMatch(/gpu-node-002 gpu3\s+healthy -> failed\s+ecc-uncorrectable$/);
    expect(out).not.toContain('\x1b');
  });

  it('reports times after the injection, and what was never seen', () => {
    const table = reportTable(
      [
        {
          text: 'link down n/npu2',
          expectation: { status: 'failed', reason: 'pcie-link-down' },
          injectedAt: 1_000,
          configMapAt: 1_300,
          watchAt: 1_400,
          sseAt: 1_450,
        },
        {
          text: 'silent n',
          expectation: { status: 'unknown', reason: null },
          injectedAt: 2_000,
          sseNote: 'n/a',
        },
        { text: 'never run', expectation: { status: 'failed', reason: null } },
      ],
      0,
      painter(false),
    );
    const rows = table
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s{2,}/));
    expect(rows).toEqual([
      ['link down n/npu2', 'failed (pcie-link-down)', '+1.0s', '+0.3s', '+0.4s', '+0.5s'],
      ['silent n', 'unknown', '+2.0s', '—', '—', 'n/a'],
      ['never run', 'failed', 'not run', '—', '—', '—'],
    ]);
  });
});

describe('npu-fault demo options', () => {
  const run = async (args: string[]) => {
    const io = memoryIO();
    const code = await createDemo({ env: {} })(args, io);
    return { code, err: io.err };
  };

  it('refuses pipeline options with the engine-only demo, engine options with the pipeline, and both modes at once', async () => {
    expect(await run(['--engine-only', '--scenario', 'short'])).toEqual({
      code: 2,
      err: expect.stringContaining('--scenario is for the pipeline demo'),
    });
    expect(await run(['--fast', '--existing-cluster'])).toEqual({
      code: 2,
      err: expect.stringContaining('--existing-cluster is for the pipeline demo'),
    });
    expect(await run(['--pipeline', '--fast'])).toEqual({
      code: 2,
      err: expect.stringContaining('--fast is for the engine-only demo'),
    });
    expect(await run(['--pipeline', '--engine-only'])).toEqual({
      code: 2,
      err: expect.stringContaining('exclude each other'),
    });
    expect(await run(['--scenario', 'long'])).toEqual({
      code: 2,
      err: expect.stringContaining("--scenario must be full or short, not 'long'"),
    });
  });

  it('keeps the engine-only demo under --engine-only (and its options imply it)', async () => {
    const io = memoryIO();
    expect(await createDemo({ env: {} })(['--engine-only', '--fast'], io)).toBe(0);
    expect(io.out).toContain('Scenario check: all');
  });
});

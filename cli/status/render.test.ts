import { describe, expect, it } from '@jest/globals';
import { renderStatus } from './render.js';
import { device, documentOf, FLEET, node, NOW, plain } from './testing.js';

function lines(text: string): string[] {
  return text.split('\n');
}

describe('renderStatus', () => {
  it('table: summary line, nodes and devices worst first', () => {
    const text = renderStatus(FLEET, plain);
    expect(lines(text)[0]).toBe(
      'publisher npu-fault-controller-7d9f-abc (term 4), written 1.2 s ago; 4 of 120 nodes need attention',
    );
    expect(text).toContain('devices: 960 total, 2 failed, 1 unknown, 2 degraded, 955 healthy\n');
    const nodeLines = lines(text).filter((l) => /^node-\d+\s+(failed|unknown|degraded|healthy)\s/.test(l));
    expect(nodeLines.map((l) => l.split(/\s+/)[0])).toEqual([
      'node-2',
      'node-10',
      'node-1',
      'node-3',
      'node-4',
    ]);
    const deviceLines = lines(text).filter((l) => /^node-\d+\s+npu\d+\s/.test(l));
    expect(deviceLines.map((l) => l.split(/\s+/).slice(0, 3).join(' '))).toEqual([
      'node-2 npu3 failed',
      'node-10 npu1 failed',
      'node-10 npu10 failed',
      'node-10 npu2 degraded',
      'node-1 npu0 unknown',
      'node-3 npu1 degraded',
      'node-4 npu6 healthy',
    ]);
    expect(text).toMatch(/^NODE\s+STATUS\s+AGENT\s+FAILED\s+UNKNOWN\s+DEGRADED\s+DEVICES\s+OBSERVED$/m);
    expect(text).toMatch(/^node-1\s+unknown\s+stale\s+0\s+1\s+0\s+8\s+1\.0 s ago$/m);
    expect(text).toMatch(/^node-2\s+npu3\s+failed\s+10 s ago\s+pcie-link-down$/m);
    expect(text).toContain('unobserved (no snapshot yet): node-99\n');
    expect(text).not.toContain('REASONS');
    expect(text).not.toContain('\x1b[');
  });

  it('wide adds reasons, signals, temperature, power, ECC, link, model and key', () => {
    const text = renderStatus(FLEET, { ...plain, output: 'wide' });
    expect(text).toMatch(
      /^NODE\s+DEVICE\s+STATUS\s+SINCE\s+REASON\s+REASONS\s+SIGNALS\s+TEMP\s+POWER\s+ECC\s+LINK\s+MODEL\s+KEY\s+PODS$/m,
    );
    expect(text).toMatch(
      /^node-2\s+npu3\s+failed\s+10 s ago\s+pcie-link-down\s+pcie-link-down\s+-\s+88\.5°C\s+300\.5W\s+2\s+down\s+910B2\s+0000:npu3\s+-$/m,
    );
    expect(text).toMatch(/^node-4\s+npu6\s+healthy\s+.*\s+-\s+ecc-error\s+ecc-error\s+88\.5°C/m);
  });

  it('wide lists the pods holding a device: none, a few, or a few and a count', () => {
    const doc = documentOf([
      node('a', [
        device('npu1', 'failed', { pods: [] }),
        device('npu2', 'failed', { pods: ['ns/a', 'ns/b'] }),
        device('npu3', 'failed', { pods: ['ns/a', 'ns/b', 'ns/c', 'ns/d', 'ns/e'] }),
      ]),
    ]);
    const text = renderStatus(doc, { ...plain, output: 'wide' });
    expect(text).toMatch(/^a\s+npu1\s+failed\s+.*\s+none$/m);
    expect(text).toMatch(/^a\s+npu2\s+failed\s+.*\s+ns\/a,ns\/b$/m);
    expect(text).toMatch(/^a\s+npu3\s+failed\s+.*\s+ns\/a,ns\/b,ns\/c \+2 more$/m);
  });

  it('wide shows null metrics as -', () => {
    const doc = documentOf([
      node('a', [
        device('npu1', 'unknown', {
          temperature_c: null,
          power_w: null,
          ecc_errors: null,
          pcie_link_status: null,
        }),
      ]),
    ]);
    expect(renderStatus(doc, { ...plain, output: 'wide' })).toMatch(
      /^a\s+npu1\s+unknown\s+.*\s+-\s+-\s+-\s+-\s+910B2/m,
    );
  });

  it('json prints the document, and one node with --node', () => {
    expect(JSON.parse(renderStatus(FLEET, { ...plain, output: 'json' }))).toEqual(FLEET);
    expect(JSON.parse(renderStatus(FLEET, { ...plain, output: 'json', node: 'node-2' }))).toEqual(
      FLEET.nodes['node-2'],
    );
  });

  it('a node absent from nodes is healthy (said clearly), an unobserved one unknown', () => {
    expect(JSON.parse(renderStatus(FLEET, { ...plain, output: 'json', node: 'node-50' }))).toEqual({
      node: 'node-50',
      listed: false,
      status: 'healthy',
    });
    expect(JSON.parse(renderStatus(FLEET, { ...plain, output: 'json', node: 'node-99' }))).toMatchObject({
      status: 'unobserved',
    });
    const table = renderStatus(FLEET, { ...plain, node: 'node-50' });
    expect(table).toContain(
      'node node-50: healthy (not listed: every device is healthy, or it has no accelerators)\n',
    );
    expect(renderStatus(FLEET, { ...plain, node: 'node-99' })).toContain(
      'node node-99: no snapshot yet (unobserved)',
    );
  });

  it('--node shows only that node', () => {
    const text = renderStatus(FLEET, { ...plain, node: 'node-10' });
    expect(text).toContain('node-10');
    expect(text).not.toMatch(/^node-2\s/m);
    expect(text).not.toContain('unobserved');
  });

  it('colour only when asked (the TTY decision is made by the caller)', () => {
    const coloured = renderStatus(FLEET, { ...plain, color: true });
    expect(coloured).toContain('\x1b[31;1mfailed');
    expect(coloured).toContain('\x1b[33mdegraded');
    // Columns still line up: padding is applied before the escapes.
    const stripped = coloured.replace(/\x1b\[[0-9;]*m/g, ''); // eslint-disable-line no-control-regex
    expect(stripped).toBe(renderStatus(FLEET, plain));
  });

  it('a healthy cluster says so', () => {
    const text = renderStatus(documentOf([], { unobserved: [] }), plain);
    expect(text).toContain('0 of 120 nodes need attention');
    expect(text).toContain('every observed node is healthy');
  });

  it('ingest_degraded and omitted_nodes are shown, and then no node is called healthy for not being listed', () => {
    const doc = documentOf([], { unobserved: [], ingest_degraded: { stale_nodes: 30 }, omitted_nodes: 2 });
    const text = renderStatus(doc, plain);
    expect(text).toContain('ingest degraded: 30 nodes stale at once');
    expect(text).toContain(
      "2 nodes left out to fit the document's size budget; a node not listed is unknown",
    );
    expect(text).toContain('no node is listed, and the nodes left out are unknown');
    expect(text).not.toContain('every observed node is healthy');
    expect(renderStatus(doc, { ...plain, node: 'gpu-node-9' })).toContain(
      'node gpu-node-9: unknown (not listed',
    );
    expect(JSON.parse(renderStatus(doc, { ...plain, node: 'gpu-node-9', output: 'json' }))).toEqual({
      node: 'gpu-node-9',
      listed: false,
      status: 'unknown',
    });
  });

  it('marks a stale document in the summary', () => {
    expect(lines(renderStatus(FLEET, { ...plain, now: NOW + 60_000 }))[0]).toBe(
      'publisher npu-fault-controller-7d9f-abc (term 4), written 61 s ago; 4 of 120 nodes need attention (STALE)',
    );
  });
});

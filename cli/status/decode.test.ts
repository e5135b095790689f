import { describe, expect, it } from '@jest/globals';
import { decodeStatus } from './decode.js';
import { FLEET } from './testing.js';

describe('decodeStatus', () => {
  const where = 'ai-infra/npu-fault-status-v3';
  const data = (doc: unknown): Record<string, string> => ({ 'fault.json': JSON.stringify(doc) });

  it('reads a valid document, and a 3.x one with fields it does not know', () => {
    expect(decodeStatus(data(FLEET), where)).toEqual({ document: FLEET });
    const newer = decodeStatus(data({ ...FLEET, version: '3.7', future_field: 1 }), where);
    expect('document' in newer && newer.document.version).toBe('3.7');
  });

  it('an unknown major version says which', () => {
    expect(decodeStatus(data({ version: '4.0', whatever: true }), where)).toEqual({
      error: `${where}: unknown major version 4.0 of fault.json; this npu-fault reads 3.x (upgrade npu-fault to read it)`,
    });
  });

  it('invalid JSON, a missing key, and a bad field are one line naming it', () => {
    expect(decodeStatus({ 'fault.json': '{"version": ' }, where)).toMatchObject({
      error: expect.stringMatching(/^ai-infra\/npu-fault-status-v3: fault\.json is not JSON \(/),
    });
    expect(decodeStatus({}, where)).toEqual({ error: `${where} has no fault.json key` });
    const bad = structuredClone(FLEET) as unknown as {
      nodes: Record<string, { npus: { status: string }[] }>;
    };
    (bad.nodes['node-2'] as { npus: { status: string }[] }).npus[0]!.status = 'on-fire';
    const result = decodeStatus(data(bad), where);
    expect(result).toMatchObject({
      error: expect.stringContaining(`${where}: fault.json: nodes.node-2.npus[0].status: `),
    });
    expect(decodeStatus(data({ ...FLEET, version: 3 }), where)).toEqual({
      error: `${where}: fault.json: version: missing or not a string`,
    });
  });
});

import { describe, expect, it } from '@jest/globals';
import { parseDocument } from './document.js';
import { device, document, nodeEntry } from './testing.js';
import { FollowError } from './types.js';

const doc = document('2026-12-01T10:00:00.000Z', [nodeEntry('n1', [device('npu1', 'failed')])]);

describe('parseDocument', () => {
  it('reads a 3.0 document', () => {
    expect(parseDocument(JSON.stringify(doc), '3.0')).toEqual(doc);
  });

  it('reads a 3.x document, keeping its version and dropping fields it does not know', () => {
    const newer = { ...doc, version: '3.7', shiny: { new: true } };
    newer.nodes = { n1: { ...doc.nodes.n1!, npus: [{ ...doc.nodes.n1!.npus[0]!, extra: 1 } as never] } };
    const parsed = parseDocument(JSON.stringify(newer), '3.7');
    expect(parsed).not.toBeInstanceOf(FollowError);
    expect(parsed).toMatchObject({
      version: '3.7',
      nodes: { n1: { npus: [{ id: 'npu1', status: 'failed' }] } },
    });
    expect(parsed).not.toHaveProperty('shiny');
    expect((parsed as typeof doc).nodes.n1!.npus[0]).not.toHaveProperty('extra');
  });

  it('refuses another major, in the document or in the ConfigMap key', () => {
    const four = parseDocument(JSON.stringify({ ...doc, version: '4.0' }));
    expect(four).toBeInstanceOf(FollowError);
    expect((four as FollowError).kind).toBe('version');
    expect((four as FollowError).message).toMatch(/version "4.0" is not 3.x/);
    expect((parseDocument(JSON.stringify(doc), '2.1') as FollowError).message).toMatch(
      /ConfigMap key version/,
    );
    expect((parseDocument(JSON.stringify({ ...doc, version: undefined })) as FollowError).kind).toBe(
      'version',
    );
  });

  it('names the field that is wrong, and survives partial JSON', () => {
    const bad = parseDocument(JSON.stringify({ ...doc, timestamp: 'yesterday' }));
    expect((bad as FollowError).message).toMatch(/^fault.json: timestamp: /);
    const partial = parseDocument(JSON.stringify(doc).slice(0, 40));
    expect((partial as FollowError).kind).toBe('invalid');
  });
});

import { describe, expect, it } from '@jest/globals';
import type { PublishedDocument } from '../../contracts/index.js';
import { contentOf, contentOfData, documentOf, serializeDocument } from './status-data.js';

const DOC: PublishedDocument = {
  version: '3.0',
  timestamp: '2026-11-30T10:16:15.880Z',
  publisher: { identity: 'controller-a', term: 4 },
  node_count: 1,
  cluster_summary: { total: 8, healthy: 8, degraded: 0, failed: 0, unknown: 0 },
  unobserved: ['nöde-ü'],
  nodes: {},
};

describe('serializeDocument', () => {
  it('holds the version key and the compact document, sized in UTF-8 bytes', () => {
    const serialized = serializeDocument(DOC);
    expect(serialized.data).toEqual({ version: '3.0', 'fault.json': JSON.stringify(DOC) });
    expect(serialized.bytes).toBe(new TextEncoder().encode(JSON.stringify(DOC)).length + 3);
    expect(serialized.bytes).toBeGreaterThan(JSON.stringify(DOC).length + 3);
  });

  it('gives equal content to documents that differ only in timestamp, and different content otherwise', () => {
    const a = serializeDocument(DOC);
    const b = serializeDocument({ ...DOC, timestamp: '2026-11-30T10:16:16.880Z' });
    const c = serializeDocument({ ...DOC, node_count: 2 });
    expect(a.content).toBe(b.content);
    expect(a.content).not.toBe(c.content);
    expect(a.content).not.toContain(DOC.timestamp);
  });

  it('blanks only the top-level timestamp', () => {
    const json = '{"version":"3.0","timestamp":"T","x":{"timestamp":"T"}}';
    expect(contentOf(json, 'T')).toBe('{"version":"3.0","timestamp":"","x":{"timestamp":"T"}}');
  });
});

describe('documentOf', () => {
  it.each([
    ['no data', undefined],
    ['no fault.json', { version: '3.0' }],
    ['not JSON', { 'fault.json': '{garbage' }],
    ['not a document', { 'fault.json': '{"version":"3.0"}' }],
    ['another major', { 'fault.json': JSON.stringify({ ...DOC, version: '4.0' }) }],
  ])('finds no document in %s', (_name, data) => {
    expect(documentOf(data)).toBeUndefined();
    expect(contentOfData(data)).toBeUndefined();
  });

  it('reads a valid document back', () => {
    const { data, content } = serializeDocument(DOC);
    expect(documentOf(data)).toEqual(DOC);
    expect(contentOfData(data)).toBe(content);
  });
});

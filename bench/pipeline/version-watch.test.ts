import { describe, expect, it } from '@jest/globals';
import { versionOfLine } from './version-watch.js';

const line = (type: string, object: unknown): Buffer => Buffer.from(JSON.stringify({ type, object }));

describe('versionOfLine', () => {
  it("finds an added or modified ConfigMap's own resourceVersion, as JSON.parse would", () => {
    const object = {
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name: 'npu-fault-status-v3', namespace: 'x', uid: 'u', resourceVersion: '4711' },
      data: { 'fault.json': '{"resourceVersion":"1"}' },
    };
    expect(versionOfLine(line('MODIFIED', object))).toBe('4711');
    expect(versionOfLine(line('ADDED', object))).toBe('4711');
  });

  it('tells an ERROR event apart and skips deletions and bookmarks', () => {
    expect(versionOfLine(line('ERROR', { kind: 'Status', code: 410 }))).toBe('error');
    expect(versionOfLine(line('DELETED', { metadata: { resourceVersion: '9' } }))).toBeUndefined();
    expect(versionOfLine(line('BOOKMARK', { metadata: { resourceVersion: '9' } }))).toBeUndefined();
  });
});

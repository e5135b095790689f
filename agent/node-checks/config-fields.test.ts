import { describe, expect, it } from '@jest/globals';
import { absolutePath } from './config-fields.js';

describe('absolutePath', () => {
  it('takes absolute one-line paths without ".." segments', () => {
    for (const ok of ['/', '/sys', '/host/var/lib/kubelet', '/a..b/c', '/x/..y'])
      expect(absolutePath().safeParse(ok).success).toBe(true);
    for (const bad of ['sys', '', '/sys/../etc', '/..', '/a/..', '/a\nb', '/a\0b'])
      expect(absolutePath().safeParse(bad).success).toBe(false);
  });
});

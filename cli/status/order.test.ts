import { describe, expect, it } from '@jest/globals';
import { compareNatural, sortNodes } from './order.js';
import { FLEET } from './testing.js';

describe('ordering', () => {
  it('sorts names naturally', () => {
    expect(['node-10', 'node-2', 'node-1'].sort(compareNatural)).toEqual(['node-1', 'node-2', 'node-10']);
  });

  it('puts nodes worst first (failed > unknown > degraded > healthy), then by name', () => {
    expect(sortNodes(Object.values(FLEET.nodes)).map((n) => n.node)).toEqual([
      'node-2',
      'node-10',
      'node-1',
      'node-3',
      'node-4',
    ]);
  });
});

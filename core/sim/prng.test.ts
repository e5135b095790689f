import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createRng, hashSeed } from './prng.js';

const draw = (seed: number | string, n: number): number[] => {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => rng.next());
};

describe('createRng', () => {
  it('repeats the same sequence for the same seed, numeric or string', () => {
    expect(draw(42, 50)).toEqual(draw(42, 50));
    expect(draw('fleet', 50)).toEqual(draw('fleet', 50));
  });

  it('clones a generator at its current position, the two then independent', () => {
    const rng = createRng('clone');
    rng.next();
    const copy = rng.clone();
    const ahead = Array.from({ length: 10 }, () => rng.next());
    expect(Array.from({ length: 10 }, () => copy.next())).toEqual(ahead);
    expect(copy.uuid()).toBe(rng.uuid());
  });

  it('gives different sequences for neighbouring seeds', () => {
    expect(draw(1, 8)).not.toEqual(draw(2, 8));
    expect(draw('a', 8)).not.toEqual(draw('b', 8));
  });

  it('keeps next() in [0, 1) and int() inside its inclusive bounds', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.integer({ min: -1000, max: 1000 }),
        fc.integer({ min: 0, max: 1000 }),
        (seed, lo, width) => {
          const rng = createRng(seed);
          for (let i = 0; i < 20; i++) {
            const x = rng.next();
            const n = rng.int(lo, lo + width);
            if (x < 0 || x >= 1 || n < lo || n > lo + width || !Number.isInteger(n)) return false;
          }
          return true;
        },
      ),
    );
  });

  it('hits both ends of a small int range and spreads evenly', () => {
    const rng = createRng(9);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[rng.int(0, 3)]! += 1;
    for (const c of counts) expect(c).toBeGreaterThan(850);
  });

  it('draws normals with the requested mean and spread', () => {
    const rng = createRng(3);
    const xs = Array.from({ length: 5000 }, () => rng.normal(10, 2));
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
    expect(mean).toBeCloseTo(10, 0);
    expect(sd).toBeGreaterThan(1.85);
    expect(sd).toBeLessThan(2.15);
    expect(xs.every(Number.isFinite)).toBe(true);
  });

  it('makes version-4-shaped uuids and hex of the asked length', () => {
    const rng = createRng(5);
    for (let i = 0; i < 50; i++)
      expect(rng.uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(rng.hex(13)).toMatch(/^[0-9a-f]{13}$/);
  });
});

describe('hashSeed', () => {
  it('is stable and separates its parts', () => {
    expect(hashSeed('a', 1)).toBe(hashSeed('a', 1));
    expect(hashSeed('ab', 'c')).not.toBe(hashSeed('a', 'bc'));
    expect(hashSeed('x')).toBeGreaterThanOrEqual(0);
    expect(hashSeed('x')).toBeLessThan(2 ** 32);
  });
});

/**
 * A small seeded pseudo-random generator for the simulator. Everything the simulator makes
 * (boot ids, noise, sampling phases) comes from here, so one seed always yields the same
 * fleet and the same trace: tests and benchmarks can name a seed instead of storing data.
 *
 * The generator is sfc32 (Chris Doty-Humphrey's Small Fast Chaotic PRNG, 128-bit state),
 * which passes PractRand far beyond what a simulator needs and costs a few integer ops.
 */

/** A deterministic random source. Not for cryptography. */
export interface Rng {
  /** A float in [0, 1). */
  next(): number;
  /** A float in [min, max). */
  range(min: number, max: number): number;
  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  /** A normally distributed float (Box-Muller). */
  normal(mean?: number, sd?: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** `n` lower-case hex digits. */
  hex(n: number): string;
  /** An RFC 4122 version-4-shaped identifier (boot ids, GPU uuids). */
  uuid(): string;
  /** An independent generator at this one's current position: both go on with the same draws. */
  clone(): Rng;
}

/**
 * Hashes any list of strings and numbers into a 32-bit seed (cyrb53, folded to 32 bits).
 * The simulator derives one stream per node from (seed, node name), so adding a fault or a
 * node never shifts the noise of the others.
 */
export function hashSeed(...parts: ReadonlyArray<string | number>): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  const text = parts.map(String).join('\u0000');
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h1 ^ h2) >>> 0;
}

/** Creates a generator from a number or a string seed. */
export function createRng(seed: number | string): Rng {
  const s = typeof seed === 'number' && Number.isInteger(seed) ? seed >>> 0 : hashSeed(seed);
  const rng = fromState([0x9e3779b9, 0x243f6a88, 0xb7e15162, s]);
  // The first outputs of a freshly keyed sfc32 are correlated with the key: discard them.
  for (let i = 0; i < 12; i++) rng.next();
  return rng;
}

/** An sfc32 generator from its 128-bit state. */
function fromState([a0, b0, c0, d0]: readonly [number, number, number, number]): Rng {
  let a = a0;
  let b = b0;
  let c = c0;
  let d = d0;
  const next32 = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
  const next = (): number => next32() / 4294967296;
  const hex = (n: number): string => {
    let out = '';
    while (out.length < n) out += next32().toString(16).padStart(8, '0');
    return out.slice(0, n);
  };
  return {
    next,
    range: (min, max) => min + next() * (max - min),
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    normal: (mean = 0, sd = 1) => {
      // 1 - next() is in (0, 1], so the logarithm is finite.
      const u = 1 - next();
      const v = next();
      return mean + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    },
    chance: (p) => next() < p,
    hex,
    uuid: () => {
      const h = hex(32);
      const variant = ((parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
    },
    clone: () => fromState([a, b, c, d]),
  };
}

/**
 * `npm run bench:validate -- [--seconds N] [--rounds N]`: the CPU of reading one valid
 * snapshot, by the contract's zod schema and by its fast path
 * (contracts/snapshot-fast-path.ts), for the simulator's 8-device snapshot of each family.
 *
 * Each round times both readers in turn over the same parsed copies (fresh objects, as
 * JSON.parse gives a request's body), `--seconds` each (default 1), after one unmeasured
 * round of warm-up; JSON.parse of the same text is timed beside them for scale. Prints a
 * table and one JSON line. Not part of the test suite.
 */
import { parseArgs } from 'node:util';
import { fastParseSnapshot, snapshotSchema, type Snapshot } from '../contracts/index.js';
import { generateTrace, roundRobinFleet } from '../core/sim/index.js';
import { median } from './measure.js';

interface Options {
  seconds: number;
  rounds: number;
}

function options(): Options {
  const { values } = parseArgs({ options: { seconds: { type: 'string' }, rounds: { type: 'string' } } });
  const seconds = Number(values.seconds ?? 1);
  const rounds = Number(values.rounds ?? 3);
  if (!(seconds > 0) || !Number.isInteger(rounds) || rounds < 1)
    throw new Error('bench:validate: --seconds > 0 and --rounds >= 1');
  return { seconds, rounds };
}

/** Microseconds per call of `read` over `inputs`, running for about `seconds`. */
function time(read: (input: unknown) => unknown, inputs: readonly unknown[], seconds: number): number {
  const until = performance.now() + seconds * 1000;
  let calls = 0;
  const start = performance.now();
  while (performance.now() < until) {
    for (const input of inputs)
      if (read(input) === undefined) throw new Error('a valid snapshot was refused');
    calls += inputs.length;
  }
  return ((performance.now() - start) * 1000) / calls;
}

function main(): void {
  const opts = options();
  const snapshots: Snapshot[] = generateTrace({
    nodes: roundRobinFleet(3, 1),
    seconds: 1,
    seed: 1,
  }).snapshots;
  const readers = {
    zod: (input: unknown) => {
      const result = snapshotSchema.safeParse(input);
      return result.success ? result.data : undefined;
    },
    fast: fastParseSnapshot,
  };
  const results: Record<string, { bytes: number; jsonParseUs: number; zodUs: number[]; fastUs: number[] }> =
    {};
  for (const snapshot of snapshots) {
    const text = JSON.stringify(snapshot);
    const inputs = Array.from({ length: 500 }, () => JSON.parse(text) as unknown);
    const family = snapshot.payload.family;
    const result = {
      bytes: Buffer.byteLength(text),
      jsonParseUs: 0,
      zodUs: [] as number[],
      fastUs: [] as number[],
    };
    time(readers.zod, inputs, opts.seconds);
    time(readers.fast, inputs, opts.seconds);
    for (let round = 0; round < opts.rounds; round++) {
      result.zodUs.push(time(readers.zod, inputs, opts.seconds));
      result.fastUs.push(time(readers.fast, inputs, opts.seconds));
    }
    result.jsonParseUs = time((input) => JSON.parse(input as string), [text], opts.seconds);
    results[family] = result;
  }
  console.log('family   bytes   JSON.parse   zod (median)   fast path (median)');
  for (const [family, r] of Object.entries(results))
    console.log(
      `${family.padEnd(8)} ${String(r.bytes).padStart(5)}   ${r.jsonParseUs.toFixed(2).padStart(7)} µs   ` +
        `${median(r.zodUs).toFixed(2).padStart(8)} µs    ${median(r.fastUs).toFixed(2).padStart(8)} µs`,
    );
  const round2 = (n: number): number => Math.round(n * 100) / 100;
  console.log(
    JSON.stringify({
      seconds: opts.seconds,
      rounds: opts.rounds,
      families: Object.fromEntries(
        Object.entries(results).map(([family, r]) => [
          family,
          {
            bytes: r.bytes,
            jsonParseUs: round2(r.jsonParseUs),
            zodUs: r.zodUs.map(round2),
            fastUs: r.fastUs.map(round2),
          },
        ]),
      ),
    }),
  );
}

main();

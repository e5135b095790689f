/**
 * Bad tool output never crashes a parser: whatever the text, parseToolOutput returns a
 * snapshot that validates, or throws one of our own errors with a one-line message. Inputs
 * are the real fixtures damaged at random (lines dropped, cut short, cells garbled) and
 * arbitrary text; fast-check shrinks any failure to a small counterexample.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { readdirSync } from 'node:fs';
import { snapshotSchema } from '../../contracts/snapshot.js';
import { NpuFaultError } from '../errors.js';
import { parseToolOutput, parseXidEvents, type ToolSource } from './index.js';
import { REAL_FIXTURES_DIR, readRealFixture } from '../../test/fixtures.js';

const OPTIONS = {
  node: 'fuzz-node',
  collectedAt: '2026-11-29T08:00:00.000Z',
  seq: 1,
  bootId: 'b',
  collector: 'fuzz',
};

function sourceOf(name: string): ToolSource | 'kmsg' {
  if (name.startsWith('npu-smi')) return 'npu-smi';
  if (name.startsWith('nvidia-smi')) return 'nvidia-smi';
  if (name.startsWith('kmsg')) return 'kmsg';
  return 'hdc';
}

const samples = readdirSync(REAL_FIXTURES_DIR)
  .filter((name) => name !== 'SOURCES.md')
  .sort()
  .map((name) => ({ name, from: sourceOf(name), text: readRealFixture(name) }));

/** Runs one parse and classifies the outcome; anything but ok or our own error fails the property. */
function outcome(from: ToolSource | 'kmsg', text: string): 'ok' | 'error' {
  try {
    if (from === 'kmsg') {
      for (const event of parseXidEvents(text)) {
        expect(Number.isInteger(event.xid)).toBe(true);
        expect(event.bus_id).toMatch(/^[0-9A-F]{4}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$/);
      }
      return 'ok';
    }
    const snapshot = parseToolOutput(from, text, OPTIONS);
    expect(snapshotSchema.safeParse(snapshot).success).toBe(true);
    return 'ok';
  } catch (error) {
    if (!(error instanceof NpuFaultError)) throw error;
    expect(error.message).not.toContain('\n');
    expect(error.message.length).toBeGreaterThan(0);
    return 'error';
  }
}

type Damage =
  | { kind: 'drop'; at: number }
  | { kind: 'cut'; at: number }
  | { kind: 'garble'; at: number; with: string }
  | { kind: 'duplicate'; at: number };

function damage(text: string, d: Damage): string {
  const lines = text.split('\n');
  const i = d.at % Math.max(lines.length, 1);
  switch (d.kind) {
    case 'drop':
      return lines.filter((_, j) => j !== i).join('\n');
    case 'cut':
      return text.slice(0, d.at % (text.length + 1));
    case 'garble': {
      const line = lines[i] ?? '';
      const mid = Math.floor(line.length / 2);
      lines[i] = line.slice(0, mid) + d.with + line.slice(mid + d.with.length);
      return lines.join('\n');
    }
    case 'duplicate':
      lines.splice(i, 0, lines[i] ?? '');
      return lines.join('\n');
  }
}

const damageArb: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), at: fc.nat(100_000) }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat(100_000) }),
  fc.record({
    kind: fc.constant('garble' as const),
    at: fc.nat(100_000),
    with: fc.oneof(
      fc.constantFrom('NA', 'ERR!', '-', '|', ' | ', '[N/A]', '99999999999', '-1', '{', '"', ','),
      fc.string(),
    ),
  }),
  fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(100_000) }),
);

describe('parsers never crash on damaged real output', () => {
  it.each(samples.map((s) => [s.name, s] as const))('%s', (_name, sample) => {
    fc.assert(
      fc.property(fc.array(damageArb, { minLength: 1, maxLength: 3 }), (damages) => {
        const text = damages.reduce(damage, sample.text);
        outcome(sample.from, text);
      }),
      { numRuns: 40, seed: 20261129 },
    );
  });

  it.each(['hdc', 'npu-smi', 'nvidia-smi', 'kmsg'] as const)('arbitrary text through --from %s', (from) => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => {
        outcome(from, text);
      }),
      { numRuns: 300, seed: 20261129 },
    );
  });
});

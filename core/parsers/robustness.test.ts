/**
 * Bad tool output never crashes a parser: whatever the text, parseToolOutput returns a
 * snapshot that validates, or throws one of our own errors with a one-line message of bounded
 * length. Inputs are valid outputs damaged at random (lines dropped, cut short, cells garbled,
 * long runs inserted): the synthetic samples of testing.ts always, the real fixtures of
 * ../shared where present; and arbitrary text. fast-check shrinks any failure to a small
 * counterexample.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { readdirSync } from 'node:fs';
import { snapshotSchema } from '../../contracts/index.js';
import { NpuFaultError } from '../errors.js';
import { parseToolOutput, parseXidEvents, type ToolSource } from './index.js';
import {
  HDC_ENVELOPE,
  KMSG,
  NPU_SMI_310P_TABLE,
  NPU_SMI_910B_TABLE,
  NPU_SMI_A3_TABLE,
  NVIDIA_CSV,
  NVIDIA_CSV_NOHEADER,
  NVIDIA_Q,
  NVIDIA_TABLE,
  NVIDIA_XML,
} from './testing.js';
import { REAL_FIXTURES_DIR, describeWithRealFixtures, readRealFixture } from '../../test/fixtures.js';

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

type From = ToolSource | 'kmsg';

/** The synthetic samples, each with the --from that reads it. */
const SYNTHETIC: ReadonlyArray<{ name: string; from: From; text: string }> = [
  { name: 'NPU_SMI_910B_TABLE', from: 'npu-smi', text: NPU_SMI_910B_TABLE },
  { name: 'NPU_SMI_A3_TABLE', from: 'npu-smi', text: NPU_SMI_A3_TABLE },
  { name: 'NPU_SMI_310P_TABLE', from: 'npu-smi', text: NPU_SMI_310P_TABLE },
  { name: 'NVIDIA_CSV', from: 'nvidia-smi', text: NVIDIA_CSV },
  { name: 'NVIDIA_CSV_NOHEADER', from: 'nvidia-smi', text: NVIDIA_CSV_NOHEADER },
  { name: 'NVIDIA_Q', from: 'nvidia-smi', text: NVIDIA_Q },
  { name: 'NVIDIA_XML', from: 'nvidia-smi', text: NVIDIA_XML },
  { name: 'NVIDIA_TABLE', from: 'nvidia-smi', text: NVIDIA_TABLE },
  { name: 'KMSG', from: 'kmsg', text: KMSG },
  { name: 'HDC_ENVELOPE', from: 'hdc', text: HDC_ENVELOPE },
];

/** The real outputs read by --from `from` (only inside describeWithRealFixtures). */
function realSamples(from: From): Array<{ name: string; from: From; text: string }> {
  return readdirSync(REAL_FIXTURES_DIR)
    .filter((name) => name !== 'SOURCES.md' && sourceOf(name) === from)
    .sort()
    .map((name) => ({ name, from, text: readRealFixture(name) }));
}

/** Runs one parse and classifies the outcome; anything but ok or our own error fails the property. */
function outcome(from: From, text: string): 'ok' | 'error' {
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
    expect(error.message).not.toMatch(/[\n\r]/);
    expect(error.message.length).toBeGreaterThan(0);
    // Quotes of the input are excerpts: a long line never travels whole in a message.
    expect(error.message.length).toBeLessThan(600);
    return 'error';
  }
}

type Damage =
  | { kind: 'drop'; at: number }
  | { kind: 'cut'; at: number }
  | { kind: 'garble'; at: number; with: string }
  | { kind: 'duplicate'; at: number }
  | { kind: 'run'; at: number; unit: string; times: number };

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
    case 'run': {
      const line = lines[i] ?? '';
      const mid = Math.floor(line.length / 2);
      lines[i] = line.slice(0, mid) + d.unit.repeat(d.times) + line.slice(mid);
      return lines.join('\n');
    }
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
  fc.record({
    kind: fc.constant('run' as const),
    at: fc.nat(100_000),
    unit: fc.constantFrom(' ', '\t', '\r', '|', '/', ':', ',', '<', '"', '\u2028', 'x '),
    times: fc.integer({ min: 100, max: 3000 }),
  }),
);

/** Damages a sample at random and checks the outcome (the property of this file). */
function survivesDamage(
  samples: ReadonlyArray<{ name: string; from: From; text: string }>,
  runs: number,
): void {
  fc.assert(
    fc.property(
      fc.constantFrom(...samples),
      fc.array(damageArb, { minLength: 1, maxLength: 3 }),
      (sample, damages) => {
        outcome(sample.from, damages.reduce(damage, sample.text));
      },
    ),
    { numRuns: runs },
  );
}

describe('parsers never crash on damaged output', () => {
  it.each(SYNTHETIC.map((sample) => [sample.name, sample] as const))('synthetic %s', (_name, sample) => {
    survivesDamage([sample], 150);
  });

  it.each(['hdc', 'npu-smi', 'nvidia-smi', 'kmsg'] as const)('arbitrary text through --from %s', (from) => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => {
        outcome(from, text);
      }),
      { numRuns: 300 },
    );
  });
});

describeWithRealFixtures('parsers never crash on damaged real output', () => {
  it.each(['hdc', 'npu-smi', 'nvidia-smi', 'kmsg'] as const)('every real %s output', (from) => {
    const samples = realSamples(from);
    expect(samples.length).toBeGreaterThan(0);
    survivesDamage(samples, 40 * samples.length);
  });
});

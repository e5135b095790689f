import { describe, expect, it } from '@jest/globals';
import { median } from '../bench/measure.js';
import { buildWorkload, devicesIn } from '../bench/workload.js';
import { bench } from './bench-command.js';
import { memoryIO } from '../cli/testing.js';

// No timing here: the benchmark itself runs only as `npm run bench`. These check that the
// workload is the size it claims, so the figures it reports are per what they say.
describe('bench workload', () => {
  it('builds nodes x 8 devices x seconds device-samples, one snapshot per node per second', () => {
    const w = buildWorkload({ devices: 80, seconds: 3 });
    expect(w.nodes).toBe(10);
    expect(w.devices).toBe(80);
    expect(w.snapshots).toHaveLength(30);
    expect(w.deviceSamples).toBe(240);
    expect(w.snapshots.reduce((n, s) => n + devicesIn(s), 0)).toBe(w.deviceSamples);
    expect(new Set(w.snapshots.map((s) => s.payload.family))).toEqual(new Set(['910B', '310P', 'nvidia']));
  });

  it('rounds devices up to whole nodes and gives every snapshot an arrival 50 ms after collection', () => {
    const w = buildWorkload({ devices: 81, seconds: 2 });
    expect(w.nodes).toBe(11);
    expect(w.nows).toHaveLength(w.snapshots.length);
    w.snapshots.forEach((s, i) => expect(w.nows[i]).toBe(Date.parse(s.collected_at) + 50));
  });

  it('injects faults on some nodes unless told not to', () => {
    const hot = (faults: boolean): number =>
      buildWorkload({ devices: 8 * 60, seconds: 12, faults }).snapshots.filter(
        (s) => s.payload.family === '910B' && s.payload.npus.some((n) => (n.temp_c ?? 0) > 85),
      ).length;
    expect(hot(true)).toBeGreaterThan(0);
    expect(hot(false)).toBe(0);
  });
});

describe('median', () => {
  it.each([
    [[3], 3],
    [[5, 1, 3], 3],
    [[4, 1, 3, 2], 2.5],
  ])('of %j is %d', (xs, m) => expect(median(xs)).toBe(m));
});

describe('npu-fault bench arguments', () => {
  const run = async (args: string[]): Promise<{ code: number; out: string; err: string }> => {
    const io = memoryIO();
    return { code: await bench(args, io), out: io.out, err: io.err };
  };

  it.each([
    [['--devices'], '--devices needs a value'],
    [['--seconds', '0'], "--seconds must be a whole number >= 1, not '0'"],
    [['--runs=2.5'], "--runs must be a whole number >= 1, not '2.5'"],
    [['--fast'], "unknown option '--fast'"],
  ])('rejects %j with exit 2 before measuring anything', async (args, message) => {
    const { code, out, err } = await run(args);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toContain(message);
  });

  it('prints its usage with --help', async () => {
    const { code, out } = await run(['--help']);
    expect(code).toBe(0);
    expect(out).toContain('Usage: npu-fault bench');
  });
});

describe('npu-fault bench pipeline arguments', () => {
  it.each([
    [['--nodes', '100,x'], '--nodes: whole numbers >= 1'],
    [['--seconds=1'], '--seconds: a number >= 3'],
    [['--glitch-rate', '2'], '--glitch-rate: at most 1'],
    [['--watchers', '0'], '--watchers: whole numbers >= 1'],
    [['--bogus'], "Unknown option '--bogus'"],
    [['extra'], 'unexpected argument: extra'],
  ])(
    'rejects %j with exit 2 and one line naming the option, before starting anything',
    async (args, message) => {
      const io = memoryIO();
      expect(await bench(['pipeline', ...args], io)).toBe(2);
      expect(io.out).toBe('');
      expect(io.err).toContain(message);
      expect(io.err.trim().split('\n')).toHaveLength(1);
    },
  );

  it('defaults to the issue sweep', async () => {
    const { parsePipelineArgs } = await import('../bench/pipeline/main.js');
    expect(parsePipelineArgs([])).toMatchObject({
      nodes: [100, 250, 500, 1000],
      watchers: [10, 50, 100],
      seconds: 60,
      baselines: false,
      remediation: true,
    });
    expect(parsePipelineArgs(['--remediation', 'off']).remediation).toBe(false);
    expect(() => parsePipelineArgs(['--remediation', 'drain'])).toThrow(/--remediation: cordon or off/);
  });
});

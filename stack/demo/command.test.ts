import { describe, expect, it } from '@jest/globals';
import { SCENARIO } from '../../core/sim/index.js';
import { createDemo } from './command.js';
import { memoryIO } from '../../cli/testing.js';

interface Run {
  code: number;
  out: string;
  err: string;
  sleeps: number[];
}

async function runDemo(
  args: string[],
  options: { isTTY?: boolean; env?: Record<string, string> } = {},
): Promise<Run> {
  const sleeps: number[] = [];
  const io = memoryIO({}, { isTTY: options.isTTY ?? false });
  const demo = createDemo({ sleep: async (ms) => void sleeps.push(ms), env: options.env ?? {} });
  const code = await demo(args, io);
  return { code, out: io.out, err: io.err, sleeps };
}

const ESC = String.fromCharCode(27);
const COLOUR = new RegExp(`${ESC}\\[[0-9;]*m`, 'g');
const REDRAW = new RegExp(`.*\r${ESC}\\[2K`);

// Strips ANSI colour, and the status line a terminal redraws in place.
const plain = (text: string): string =>
  text
    .split('\n')
    .map((line) => line.replace(REDRAW, ''))
    .join('\n')
    .replace(COLOUR, '');

/** The printed transition lines of one device: `[+mm:ss] node devices  from -> to  reason`. */
const transitions = (out: string, node: string, device: string): string[] =>
  out
    .split('\n')
    .filter((l) => l.includes(' -> ') && !l.includes('▸'))
    .filter((l) => new RegExp(`\\] ${node} +(.* )?(${device}|all \\d+)( |$)`).test(l))
    .map((l) =>
      l
        .replace(/^\[\+\d\d:\d\d\] \S+ +/, '')
        .replace(/\s+/g, ' ')
        .trim(),
    );

describe('npu-fault demo', () => {
  it('prints the scenario transitions the labels expect and passes its own check (--fast)', async () => {
    const { code, out, err, sleeps } = await runDemo(['--fast']);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(sleeps).toEqual([]);
    expect(out).toContain('Scenario check: all 136 devices behaved as labelled.');

    expect(transitions(out, SCENARIO.heat.node, SCENARIO.heat.device)).toEqual([
      'npu5 healthy -> degraded high-temp',
      'npu5 degraded -> failed high-temp',
    ]);
    expect(out).toMatch(/\[\+01:2\d\] atlas900-node-003 npu5 +healthy -> degraded high-temp/);
    expect(out).toMatch(/\[\+04:[23]\d\] atlas900-node-003 npu5 +degraded -> failed +high-temp/);
    expect(transitions(out, SCENARIO.ecc.node, SCENARIO.ecc.device)).toEqual([
      'gpu3 healthy -> degraded ecc-error',
      'gpu3 degraded -> failed ecc-uncorrectable',
    ]);
    expect(transitions(out, SCENARIO.linkDown.node, 'npu2')).toEqual([
      'npu2 npu3 healthy -> failed pcie-link-down',
    ]);
    expect(transitions(out, SCENARIO.vanish.node, 'npu6')).toEqual([
      'npu6 npu7 healthy -> failed device-missing',
    ]);
    expect(transitions(out, SCENARIO.silent.node, 'gpu0')).toEqual([
      'all 8 healthy -> unknown agent-unreachable',
      'all 8 unknown -> healthy',
    ]);
    // The spiked NPU and the restarted node print nothing after coming up.
    expect(transitions(out, SCENARIO.spike.node, SCENARIO.spike.device)).toEqual([]);
    expect(out).not.toMatch(new RegExp(`\\] ${SCENARIO.restart.node} .* -> `));
    expect(out).toMatch(/\[\+00:0\d\] 1?\d nodes +\d+ devices +unknown -> healthy/);
  });

  it('ends with the published document as a per-node table and the cluster summary', async () => {
    const { out } = await runDemo(['--fast']);
    const table = out.slice(out.indexOf('Published document'));
    for (const node of ['atlas900-node-001', 'atlas900-node-006', 'atlas300-node-005', 'gpu-node-005'])
      expect(table).toContain(node);
    expect(table).toMatch(/atlas900-node-003 +ok +8 +7 +0 +1 +0\n +npu5 +failed +high-temp/);
    expect(table).toMatch(/gpu3 +failed +ecc-uncorrectable/);
    expect(table).toMatch(/atlas900-node-006 +ok +16 +16 +0 +0 +0/);
    expect(table).toContain('cluster_summary  total 136  healthy 130  degraded 0  failed 6  unknown 0');
    expect(table).toContain('4 of 16 nodes listed');
  });

  it('prints no colour and never waits when stdout is not a terminal', async () => {
    const { out, sleeps } = await runDemo(['--engine-only']);
    expect(out).not.toContain('\x1b[');
    expect(sleeps).toEqual([]);
  });

  it('on a terminal, waits once per simulated second through the injected sleep, in colour', async () => {
    const { code, out, sleeps } = await runDemo(['--engine-only'], { isTTY: true });
    expect(code).toBe(0);
    expect(sleeps).toHaveLength(301);
    expect(new Set(sleeps)).toEqual(new Set([1000 / 12]));
    expect(sleeps.reduce((a, b) => a + b, 0) / 1000).toBeCloseTo(25, 0);
    expect(out).toContain('\x1b[1;31mfailed');
    expect(plain(out)).toMatch(/\[\+01:2\d\] atlas900-node-003 npu5 +healthy -> degraded high-temp/);
  });

  it('honours --speed, and NO_COLOR on a terminal', async () => {
    const { out, sleeps } = await runDemo(['--speed', '100'], { isTTY: true, env: { NO_COLOR: '1' } });
    expect(sleeps.every((ms) => ms === 10)).toBe(true);
    expect(out).not.toMatch(new RegExp(`${ESC}\\[[0-9;]*m`));
  });

  it('passes its check with another seed (the labels hold for any seed)', async () => {
    const { code, out } = await runDemo(['--fast', '--seed', '12345']);
    expect(out).toContain('Scenario check: all 136 devices behaved as labelled.');
    expect(code).toBe(0);
  });

  it.each([
    [['--bogus'], "unknown option '--bogus'"],
    [['--speed'], '--speed needs a value'],
    [['--speed', '0'], "--speed must be a number > 0, not '0'"],
    [['--speed=3', '--fast=yes'], '--fast takes no value'],
  ])('rejects %j with exit 2 and one line', async (args, message) => {
    const { code, out, err } = await runDemo(args);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toContain(message);
    expect(err.trim().split('\n')).toHaveLength(1);
  });

  it('takes --speed=<x> as well as --speed <x> (one parser for all subcommands)', async () => {
    const { code, sleeps } = await runDemo(['--speed=50'], { isTTY: true });
    expect(code).toBe(0);
    expect(sleeps[0]).toBe(20);
  });

  it('prints its usage with --help', async () => {
    const { code, out } = await runDemo(['--help']);
    expect(code).toBe(0);
    expect(out).toContain('Usage: npu-fault demo [--pipeline]');
  });
});

import { describe, expect, it } from '@jest/globals';
import { ParseError } from '../../errors.js';
import { ToolError } from '../common.js';
import { detectNvidiaSmiKind, parseNvidiaSmi } from './detect.js';
import { parseNvidiaTable } from './table.js';
import {
  NVIDIA_CSV,
  NVIDIA_CSV_NOHEADER,
  NVIDIA_Q,
  NVIDIA_Q_ONE_GPU,
  NVIDIA_TABLE,
  NVIDIA_XML,
} from '../testing.js';

function caught(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('detectNvidiaSmiKind', () => {
  it.each([
    ['<?xml version="1.0" ?>\n<nvidia_smi_log/>', 'xml'],
    [NVIDIA_Q_ONE_GPU, 'query'],
    ['index, name\n0, x', 'csv'],
    ['0, GPU-1', 'csv'],
    ['| NVIDIA-SMI 550 |', 'table'],
    ['hello', 'unknown'],
  ])('%#', (text, kind) => {
    expect(detectNvidiaSmiKind(text)).toBe(kind);
  });
});

describe('the synthetic samples of every sub-format', () => {
  it.each([
    ['csv', NVIDIA_CSV, [34, 36]],
    ['csv noheader', NVIDIA_CSV_NOHEADER, [34, 35]],
    ['-q', NVIDIA_Q, [44, 45]],
    ['-q -x', NVIDIA_XML, [27, 28]],
    ['table', NVIDIA_TABLE, [49, 51]],
  ] as const)('%s gives both GPUs with their temperatures', (_kind, text, temps) => {
    expect(parseNvidiaSmi(text).payload.gpus.map((g) => g.temperature_gpu)).toEqual(temps);
  });

  it('the table: bus ids, power (ERR! is null) and the ECC column', () => {
    const { payload, timestamp } = parseNvidiaTable(NVIDIA_TABLE);
    expect(timestamp).toBe('2025-01-06T10:00:00.000Z');
    expect(payload.gpus.map((g) => [g.index, g.bus_id, g.power_draw_w, g.ecc_uncorrected_volatile])).toEqual([
      [0, '0000:27:00.0', 114, 0],
      [1, '0000:2A:00.0', null, 3],
    ]);
  });
});

describe('hostile lines end quickly, quoting an excerpt', () => {
  it.each([
    ['a table row of blanks', `| NPU  Name | Health |${' '.repeat(80_000)}x`],
    [
      'a GPU row of blanks',
      `|   0  A${' '.repeat(80_000)}On | 00000000:01:00.0 Off |  0${' '.repeat(80_000)}x`,
    ],
    [
      'a -q key of blanks',
      `==============NVSMI LOG==============\nGPU 00000000:19:00.0\n    Product Name${' '.repeat(80_000)}x\n`,
    ],
  ])('%s', (_name, text) => {
    const error = caught(() => parseNvidiaSmi(text));
    expect(error).toBeInstanceOf(ParseError);
    expect(error.message.length).toBeLessThan(400);
  });

  it('a lost-GPU message keeps its bus id without a pattern', () => {
    const error = caught(() =>
      parseNvidiaSmi('Unable to determine the device handle for GPU0000:07:00.0: Unknown Error'),
    );
    expect((error as ToolError).lostBusIds).toEqual(['0000:07:00.0']);
  });
});

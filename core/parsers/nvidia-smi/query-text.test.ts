import { describe, expect, it } from '@jest/globals';
import { parseNvidiaQuery } from './query-text.js';
import { NVIDIA_Q, NVIDIA_Q_ONE_GPU } from '../testing.js';

describe('parseNvidiaQuery (-q)', () => {
  it('reads the fields and sums SRAM+DRAM volatile counters', () => {
    const { payload, timestamp } = parseNvidiaQuery(NVIDIA_Q_ONE_GPU);
    expect(timestamp).toBe('2025-01-06T10:00:00.000Z');
    expect(payload.driver_version).toBe('550.54.15');
    expect(payload.gpus).toEqual([
      expect.objectContaining({
        index: 0,
        uuid: 'GPU-1',
        bus_id: '0000:19:00.0',
        name: 'NVIDIA A100-SXM4-80GB',
        temperature_gpu: 44,
        power_draw_w: 61.5,
        ecc_corrected_volatile: 5,
        ecc_uncorrected_volatile: 1,
        pcie_link_gen: 4,
        pcie_link_width: 8,
      }),
    ]);
  });

  it('an output cut before the Processes entry is a truncation error', () => {
    const cut = NVIDIA_Q_ONE_GPU.split('\n').slice(0, 22).join('\n');
    expect(() => parseNvidiaQuery(cut)).toThrow(
      /^line 22: the output ends inside the block of GPU 00000000:19:00\.0 \(line 8\)/,
    );
  });

  it('names the line of a value in -q text that is not a number (a decimal comma, say)', () => {
    const q = [
      '==============NVSMI LOG==============',
      'Attached GPUs                             : 1',
      'GPU 00000000:19:00.0',
      '    Product Name                          : NVIDIA H100',
      '    Temperature',
      '        GPU Current Temp                  : 29,5 C',
      '    Processes                             : None',
    ].join('\n');
    expect(() => parseNvidiaQuery(q)).toThrow(
      /^line 6: GPU Current Temp: expected a number or NA, found '29,5 C'/,
    );
  });
});

describe('units say which field a value belongs to', () => {
  it('-q checks its units', () => {
    expect(() => parseNvidiaQuery(NVIDIA_Q.replace('44 C', '44 W'))).toThrow(
      /^line 28: GPU Current Temp: '44 W' is in W; expected C or no unit$/,
    );
  });
});

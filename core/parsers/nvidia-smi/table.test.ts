import { describe, expect, it } from '@jest/globals';
import { parseNvidiaTable } from './table.js';
import { NVIDIA_TABLE } from '../testing.js';

describe('parseNvidiaTable', () => {
  const OLD = [
    '+-----------------------------------------------------------------------------+',
    '| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |',
    '|-------------------------------+----------------------+----------------------+',
    '| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |',
    '| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |',
    '|===============================+======================+======================|',
    '|   0  Tesla V100-SXM2...  On   | 00000000:00:1E.0 Off |                    3 |',
    '| N/A   ERR!   P0    ERR! / 300W |      0MiB / 16160MiB |      0%      Default |',
    '+-------------------------------+----------------------+----------------------+',
  ];

  it('reads the pre-525 two-line layout with ERR! cells', () => {
    const { payload, timestamp } = parseNvidiaTable(OLD.join('\n'));
    expect(timestamp).toBeNull();
    expect(payload.driver_version).toBe('470.82.01');
    expect(payload.gpus[0]).toMatchObject({
      index: 0,
      name: 'Tesla V100-SXM2...',
      bus_id: '0000:00:1E.0',
      temperature_gpu: null,
      power_draw_w: null,
      ecc_uncorrected_volatile: 3,
    });
  });

  it('a GPU row whose metric row is missing is an error naming the line', () => {
    expect(() => parseNvidiaTable(OLD.slice(0, 7).join('\n'))).toThrow(
      /^line 8: GPU 0: the row 'Fan Temp Perf Pwr:Usage\/Cap' is missing or cut$/,
    );
  });

  it('reads a Windows table (TCC/WDDM driver model) with CRLF line ends', () => {
    const table = [
      '+-----------------------------------------------------------------------------+',
      '| NVIDIA-SMI 471.11       Driver Version: 471.11       CUDA Version: 11.4     |',
      '|-------------------------------+----------------------+----------------------+',
      '| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |',
      '| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |',
      '|===============================+======================+======================|',
      '|   0  NVIDIA GeForce ... WDDM  | 00000000:01:00.0  On |                  N/A |',
      '| 30%   41C    P8    14W / 250W |    513MiB /  8192MiB |      4%      Default |',
      '+-------------------------------+----------------------+----------------------+',
    ].join('\r\n');
    const { payload } = parseNvidiaTable(table);
    expect(payload.gpus).toEqual([
      expect.objectContaining({ index: 0, bus_id: '0000:01:00.0', temperature_gpu: 41, power_draw_w: 14 }),
    ]);
  });
});

describe('units say which field a value belongs to', () => {
  it('the table checks its units', () => {
    expect(() => parseNvidiaTable(NVIDIA_TABLE.replace('114W', '114C'))).toThrow(
      /^line 9: power draw: '114C' is in C; expected W or no unit$/,
    );
  });
});

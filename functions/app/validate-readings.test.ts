/**
 * Issue 26 at the function's door: a snapshot carrying a reading no hardware can report is
 * refused with a 400 naming the field, whether alone or in a batch, rather than forwarded as
 * a device at 1e300 °C that remediation would drain.
 */
import { describe, expect, it } from '@jest/globals';
import { gpuSnapshot } from '../../contracts/testing.js';
import { InvalidBodyError, batchLimit, parseSnapshots } from './validate.js';

/** The error `parseSnapshots` throws for `data`. */
function refusal(data: unknown): InvalidBodyError {
  try {
    parseSnapshots(data, '', batchLimit(4));
  } catch (error) {
    if (error instanceof InvalidBodyError) return error;
    throw error;
  }
  throw new Error('expected the body to be refused');
}

/** A valid GPU snapshot with GPU 0's temperature at `celsius`. */
function atTemperature(celsius: number): unknown {
  const snapshot = gpuSnapshot() as { payload: { gpus: Array<Record<string, unknown>> } };
  const gpu = snapshot.payload.gpus[0] ?? {};
  gpu.temperature_gpu = celsius;
  return snapshot;
}

describe('parseSnapshots: readings outside what hardware can report', () => {
  it('refuses a GPU at 1e300 °C with a 400 naming the field, the value and the bounds', () => {
    const error = refusal(atTemperature(1e300));
    expect(error.status).toBe(400);
    expect(error.code).toBe('invalid_body');
    expect(error.pointer).toBe('/payload/gpus/0/temperature_gpu');
    expect(error.message).toBe(
      '/payload/gpus/0/temperature_gpu: 1e+300 is outside what hardware can report (-55 to 200 °C)',
    );
  });

  it('names the snapshot of a batch that carries it', () => {
    const error = refusal({ snapshots: [gpuSnapshot(), atTemperature(65535)] });
    expect(error.pointer).toBe('/snapshots/1/payload/gpus/0/temperature_gpu');
  });

  it('accepts a GPU overheating for real (120 °C): that is a reading, for the rules to judge', () => {
    const [snapshot] = parseSnapshots(atTemperature(120), '', batchLimit(4));
    expect(snapshot?.payload.family === 'nvidia' && snapshot.payload.gpus[0]?.temperature_gpu).toBe(120);
  });
});

import { describe, expect, it } from '@jest/globals';
import { snapshotSchema, type Payload } from '../../contracts/index.js';
import { gpuSnapshot, npuSnapshot } from '../../core/engine/testing.js';
import { applyKernelEvents, type KernelEventLike } from './event-effects.js';

const AT = '2026-12-01T00:00:00.000Z';
const gpus = (): Payload => gpuSnapshot({ seq: 1, t: 0 }, [{ index: 0 }, { index: 1 }, { index: 2 }]).payload;
const npus = (): Payload =>
  npuSnapshot({ seq: 1, t: 0 }, [
    { npu: 0, bus: '0000:c1:00.0' },
    { npu: 1, bus: '0000:c2:00.0' },
  ]).payload;
const cards = (): Payload =>
  snapshotSchema.parse({
    schema: 'hdc.health/v1',
    node: 'n',
    seq: 1,
    collected_at: AT,
    collector: 'npu-smi',
    payload: {
      family: '310P',
      cards: [
        {
          card: 0,
          bus_id: '0000:01:00.0',
          chips: [
            { chip: 0, device_id: 0 },
            { chip: 1, device_id: 1 },
          ],
        },
        {
          card: 1,
          bus_id: '0000:02:00.0',
          chips: [
            { chip: 0, device_id: 2 },
            { chip: 1, device_id: 3 },
          ],
        },
      ],
    },
  }).payload;
const event = (e: Partial<KernelEventLike>): KernelEventLike => ({
  kind: 'xid',
  busId: null,
  at: AT,
  line: '',
  ...e,
});

describe('applyKernelEvents', () => {
  it('attaches an XID to the GPU with its bus id, whatever the bus id’s spelling, once', () => {
    const xid = event({ busId: '00000000:11:00.0', xid: 79 });
    const { payload, unmatched } = applyKernelEvents(gpus(), [xid, xid]);
    expect(unmatched).toEqual([]);
    const list = payload.family === 'nvidia' ? payload.gpus.map((g) => g.xid_events) : [];
    expect(list).toEqual([[], [{ xid: 79, at: AT }], []]);
  });

  it('does not change its input', () => {
    const input = gpus();
    const before = structuredClone(input);
    applyKernelEvents(input, [event({ busId: '0000:10:00.0', xid: 13 })]);
    expect(input).toEqual(before);
  });

  it('marks a removed GPU absent by bus id or by its device node', () => {
    const { payload } = applyKernelEvents(gpus(), [
      event({ kind: 'removed', busId: '0000:10:00.0' }),
      event({ kind: 'removed', line: 'nvidia2' }),
    ]);
    const present = payload.family === 'nvidia' ? payload.gpus.map((g) => g.present) : [];
    expect(present).toEqual([false, true, false]);
  });

  it('marks a removed 910B NPU absent by bus id or davinci node (its physical id)', () => {
    const byBus = applyKernelEvents(npus(), [event({ kind: 'removed', busId: '0000:C2:00.0' })]).payload;
    expect(byBus.family === '910B' && byBus.npus.map((n) => n.present)).toEqual([true, false]);
    const byNode = applyKernelEvents(npus(), [event({ kind: 'removed', line: 'davinci0' })]).payload;
    expect(byNode.family === '910B' && byNode.npus.map((n) => n.present)).toEqual([false, true]);
  });

  it('takes a whole 310P card by its bus id, one chip by its davinci node', () => {
    const card = applyKernelEvents(cards(), [event({ kind: 'removed', busId: '0000:02:00.0' })]).payload;
    expect(card.family === '310P' && card.cards.flatMap((c) => c.chips.map((x) => x.present))).toEqual([
      true,
      true,
      false,
      false,
    ]);
    const chip = applyKernelEvents(cards(), [event({ kind: 'removed', line: 'davinci1' })]).payload;
    expect(chip.family === '310P' && chip.cards.flatMap((c) => c.chips.map((x) => x.present))).toEqual([
      true,
      false,
      true,
      true,
    ]);
  });

  it('reports events that name no device, and leaves AER to the next sample', () => {
    const stray = event({ busId: '0000:ff:00.0', xid: 31 });
    const npuXid = event({ busId: '0000:c1:00.0', xid: 31 });
    const aer = event({ kind: 'aer', busId: '0000:10:00.0' });
    expect(applyKernelEvents(gpus(), [stray, aer]).unmatched).toEqual([stray]);
    expect(applyKernelEvents(gpus(), [aer]).payload).toEqual(gpus());
    expect(applyKernelEvents(npus(), [npuXid]).unmatched).toEqual([npuXid]);
  });

  it('does not attach an XID number no driver prints: the snapshot would be refused whole for it', () => {
    const impossible = event({ busId: '0000:11:00.0', xid: 65535 });
    const real = event({ busId: '0000:11:00.0', xid: 9999 });
    const applied = applyKernelEvents(gpus(), [impossible, real]);
    expect(applied.impossible).toEqual([impossible]);
    expect(applied.unmatched).toEqual([]);
    const list = applied.payload.family === 'nvidia' ? applied.payload.gpus.map((g) => g.xid_events) : [];
    expect(list).toEqual([[], [{ xid: 9999, at: AT }], []]);
    const snapshot = gpuSnapshot({ seq: 1, t: 0 }, [{ index: 0 }]);
    expect(snapshotSchema.safeParse({ ...snapshot, payload: applied.payload }).success).toBe(true);
  });
});

import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, Registry } from '../../platform/index.js';
import { createKmsgFollower, type KmsgFollowerOptions } from './kmsg.js';
import { EventRecorder, FakeKmsgDevice, LogRecorder } from './testing.js';
import type { NodeKernelEvent } from './types.js';

const AER = 'pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0';
const XID_MESSAGE = 'NVRM: Xid (PCI:0000:91:00): 13, pid=1, Graphics Exception';
const XID = `[ 5.000000] ${XID_MESSAGE}`;
const IOMMU = 'pci 0000:3c:00.0: Removing from iommu group 7';
/**
 * Records a tenant can get into /dev/kmsg, with their priority (facility × 8 + level): written
 * from user space (facility 1 or more), or printed by the kernel with the tenant's text in it.
 */
const FORGED_RECORDS: ReadonlyArray<[string, number]> = [
  ['myapp: NVRM: Xid (PCI:0000:3b:00): 79', 14],
  ['NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.', 12],
  ["process '/tmp/NVRM: Xid (PCI:0000:3b:00): 48, DBE' started with executable stack", 4],
  ['pci 0000:3b:00.0: Removing from iommu group 27', 12],
  ["process '/tmp/pci 0000:3b:00.0: Removing from iommu group 27' started with executable stack", 4],
  ["process '/tmp/x\npci 0000:3b:00.0: Removing from iommu group 27' started with executable stack", 4],
  ['NVRM: Xid (PCI:[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5e0c1a40 error 6', 6],
  ['Out of memory: Killed process 4242 (NVRM: Xid (PCI:) total-vm:1000kB, anon-rss:10kB', 3],
  ['NVRM: API mismatch: the client has the version 1\nNVRM: Xid (PCI:0000:3b:00): 79, x, but', 3],
];

/** The FakeClock's start: lines without a time of their own are stamped when read. */
const READ_AT = '2026-01-01T00:00:00.000Z';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'npu-fault-kmsg-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A running follower and what it reports to; `stop` aborts it and waits for it to end. */
function follow(path: string, options: Partial<KmsgFollowerOptions> = {}, device?: FakeKmsgDevice) {
  const clock = new FakeClock();
  const recorder = new EventRecorder();
  const logs = new LogRecorder();
  const registry = new Registry();
  const controller = new AbortController();
  const source = createKmsgFollower(
    { path, ...options },
    {
      onEvent: recorder.onEvent,
      clock,
      log: logs.log,
      registry,
      ...(device ? { openRecordDevice: device.open } : {}),
    },
  );
  const running = source.start(controller.signal);
  return {
    source,
    clock,
    recorder,
    logs,
    registry,
    running,
    stop: async (): Promise<void> => {
      controller.abort();
      await running;
    },
  };
}

/** The value of a counter (0 when the label set was never counted). */
async function counter(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = registry.getSingleMetric(`npu_fault_agent_${name}`);
  if (!metric) return 0;
  const { values } = await metric.get();
  const match = values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value));
  return match?.value ?? 0;
}

describe('createKmsgFollower on a log file', () => {
  it('reports lines appended after the start, not the ones already there', async () => {
    const path = join(dir, 'kern.log');
    writeFileSync(path, `${XID}\n`);
    const f = follow(path);
    await f.logs.waitFor('kernel log open');
    appendFileSync(path, `[ 6.000000] eth0: link up\n${AER}\n`);
    const [event] = await f.recorder.next(1);
    expect(event).toEqual({ kind: 'aer', busId: '0000:3B:00.0', severity: 'fatal', at: READ_AT, line: AER });
    expect(f.source.name).toBe('kmsg');
    await f.stop();
    expect(f.recorder.events).toHaveLength(1);
    expect(await counter(f.registry, 'kernel_events_total', { kind: 'aer' })).toBe(1);
  });

  it('reads the lines already there too with fromStart, keeping a line’s own time', async () => {
    const path = join(dir, 'kern.log');
    writeFileSync(path, `2025-01-21T02:21:33,498559+00:00 ${IOMMU}\n`);
    const f = follow(path, { fromStart: true });
    const [event] = await f.recorder.next(1);
    expect(event).toMatchObject({ kind: 'removed', busId: '0000:3C:00.0', at: '2025-01-21T02:21:33.498Z' });
    await f.stop();
  });

  it('reads on past garbage, invalid UTF-8, a huge line without end and a line cut across writes', async () => {
    const path = join(dir, 'kern.log');
    writeFileSync(path, '');
    const f = follow(path);
    await f.logs.waitFor('kernel log open');
    appendFileSync(path, Buffer.from([0xff, 0xfe, 0x00, 0x0a, 0xc3]));
    appendFileSync(path, `\n${'x'.repeat(200_000)}`);
    appendFileSync(path, `\n6,1,2,-;${AER.slice(0, 20)}`);
    appendFileSync(path, `${AER.slice(20)} \\xZZ\n`);
    appendFileSync(path, `${XID}\n`);
    const events = await f.recorder.next(2);
    expect(events.map((e) => [e.kind, e.busId])).toEqual([
      ['aer', '0000:3B:00.0'],
      ['xid', '0000:91:00.0'],
    ]);
    await f.stop();
  });

  it('retries a missing path with backoff, and reads it from its start once it exists', async () => {
    const path = join(dir, 'later.log');
    const f = follow(path, { retry: { initialMs: 1000, maxMs: 4000 } });
    await f.logs.waitFor('cannot read the kernel log; retrying');
    await f.clock.advance(1000);
    await f.logs.waitFor('cannot read the kernel log; retrying', 2);
    expect(f.logs.messages('cannot read the kernel log; retrying').map((l) => l.retryInMs)).toEqual([
      1000, 2000,
    ]);
    writeFileSync(path, `${XID}\n`);
    await f.clock.advance(2000);
    const [event] = await f.recorder.next(1);
    expect(event).toMatchObject({ kind: 'xid', xid: 13, busId: '0000:91:00.0' });
    expect(await counter(f.registry, 'kmsg_read_errors_total', { reason: 'open' })).toBe(2);
    await f.stop();
  });

  it('reads a file truncated in place again from its start', async () => {
    const path = join(dir, 'kern.log');
    writeFileSync(path, `${'[ 1.0] filler line\n'.repeat(50)}`);
    const f = follow(path);
    await f.logs.waitFor('kernel log open');
    truncateSync(path, 0);
    appendFileSync(path, `${IOMMU}\n`);
    const [event] = await f.recorder.next(1);
    expect(event).toMatchObject({ kind: 'removed', busId: '0000:3C:00.0' });
    await f.stop();
  });

  it('follows a rotated file into the new one, from its start', async () => {
    const path = join(dir, 'kern.log');
    writeFileSync(path, '');
    const f = follow(path);
    await f.logs.waitFor('kernel log open');
    appendFileSync(path, `${XID}\n`);
    await f.recorder.next(1);
    writeFileSync(join(dir, 'new.log'), `${IOMMU}\n`);
    renameSync(join(dir, 'new.log'), path);
    const events = await f.recorder.next(2);
    expect(events.map((e) => e.kind)).toEqual(['xid', 'removed']);
    await f.logs.waitFor('kernel log open', 2);
    appendFileSync(path, `${AER}\n`);
    expect((await f.recorder.next(3)).map((e) => e.kind)).toEqual(['xid', 'removed', 'aer']);
    await f.stop();
  });

  it('ignores and counts the lines that say they are user space’s; reads the kernel’s', async () => {
    const path = join(dir, 'kern.log');
    writeFileSync(path, '');
    const f = follow(path);
    await f.logs.waitFor('kernel log open');
    const forged = [
      `user  :warn  : [ 6.000000] ${IOMMU}`,
      `<14>[ 6.000000] ${XID_MESSAGE}`,
      `14,1,2,-;${XID_MESSAGE}`,
      `Feb  5 15:41:33 host myapp[12]: ${AER}`,
      `[ 6.000001] process '/tmp/${IOMMU}' started with executable stack`,
      `[ 6.000002] NVRM: API mismatch: the client has the version 1, but`,
      `             ${XID_MESSAGE}`,
    ];
    appendFileSync(path, `${forged.join('\n')}\nkern  :warn  : [ 6.000003] ${AER}\n`);
    const [event] = await f.recorder.next(1);
    expect(event).toMatchObject({ kind: 'aer', busId: '0000:3B:00.0' });
    await f.stop();
    expect(f.recorder.events).toHaveLength(1);
    expect(await counter(f.registry, 'kmsg_records_ignored_total', { reason: 'facility' })).toBe(4);
  });

  it('a consumer that throws is logged and the follower goes on', async () => {
    const path = join(dir, 'kern.log');
    writeFileSync(path, '');
    const recorder = new EventRecorder();
    const logs = new LogRecorder();
    const controller = new AbortController();
    let calls = 0;
    const running = createKmsgFollower(
      { path },
      {
        onEvent: (event) => {
          calls++;
          if (calls === 1) throw new Error('consumer bug');
          recorder.onEvent(event);
        },
        clock: new FakeClock(),
        log: logs.log,
        registry: new Registry(),
      },
    ).start(controller.signal);
    await logs.waitFor('kernel log open');
    appendFileSync(path, `${XID}\n${AER}\n`);
    await recorder.next(1);
    expect(logs.messages('kernel event consumer failed')).toHaveLength(1);
    controller.abort();
    await running;
  });
});

describe('createKmsgFollower on a FIFO', () => {
  it('reads lines from writers that come and go', async () => {
    const path = join(dir, 'kmsg.fifo');
    execFileSync('mkfifo', [path]);
    const f = follow(path);
    await f.logs.waitFor('kernel log open');
    await writeFile(path, `${XID}\n`);
    await f.recorder.next(1);
    await writeFile(path, `6,9,10,-;${AER}\n SUBSYSTEM=pci\n`);
    const events = await f.recorder.next(2);
    expect(events.map((e) => [e.kind, e.busId])).toEqual([
      ['xid', '0000:91:00.0'],
      ['aer', '0000:3B:00.0'],
    ]);
    await f.stop();
  });
});

describe('createKmsgFollower on /dev/kmsg (a fake device at a character-device path)', () => {
  const DEVICE_PATH = '/dev/null';

  it('skips the ring’s backlog and reports records written after the start', async () => {
    const device = new FakeKmsgDevice();
    device.write(XID_MESSAGE);
    device.write('eth0: link up');
    const f = follow(DEVICE_PATH, {}, device);
    await device.opened();
    device.write(AER, 3);
    const [event] = await f.recorder.next(1);
    expect(event).toEqual({ kind: 'aer', busId: '0000:3B:00.0', severity: 'fatal', at: READ_AT, line: AER });
    expect(device.opens).toEqual({ blocking: 1, nonBlocking: 1 });
    expect(await counter(f.registry, 'kmsg_records_skipped_total')).toBe(2);
    await f.stop();
    expect(f.recorder.events).toHaveLength(1);
  });

  it('reports the backlog too with fromStart', async () => {
    const device = new FakeKmsgDevice();
    device.write(XID_MESSAGE);
    const f = follow(DEVICE_PATH, { fromStart: true }, device);
    const [event] = await f.recorder.next(1);
    expect(event).toMatchObject({ kind: 'xid', xid: 13 });
    expect(device.opens.nonBlocking).toBe(0);
    await f.stop();
  });

  it('counts an overrun (EPIPE) and reads on', async () => {
    const device = new FakeKmsgDevice();
    const f = follow(DEVICE_PATH, {}, device);
    await device.opened();
    device.overrun();
    device.write(IOMMU);
    const [event] = await f.recorder.next(1);
    expect(event).toMatchObject({ kind: 'removed', busId: '0000:3C:00.0' });
    expect(await counter(f.registry, 'kmsg_read_errors_total', { reason: 'overrun' })).toBe(1);
    expect(device.opens.blocking).toBe(1);
    await f.stop();
  });

  it('re-opens after a read error without repeating or losing a record', async () => {
    const device = new FakeKmsgDevice();
    device.write('backlog 1');
    device.write('backlog 2');
    const f = follow(DEVICE_PATH, { retry: { initialMs: 500, maxMs: 500 } }, device);
    await device.opened();
    device.write(XID_MESSAGE);
    await f.recorder.next(1);
    device.failNextRead('EIO');
    await f.logs.waitFor('cannot read the kernel log; retrying');
    device.write(AER);
    await f.clock.advance(500);
    const events = await f.recorder.next(2);
    expect(events.map((e) => e.kind)).toEqual(['xid', 'aer']);
    expect(device.opens).toEqual({ blocking: 2, nonBlocking: 1 });
    expect(await counter(f.registry, 'kmsg_read_errors_total', { reason: 'read' })).toBe(1);
    // The backlog twice (at start, and again at the re-open) and the Xid record once.
    expect(await counter(f.registry, 'kmsg_records_skipped_total')).toBe(5);
    await f.stop();
  });

  it('retries a device it may not open', async () => {
    const device = new FakeKmsgDevice();
    device.failNextOpen('EACCES');
    const f = follow(DEVICE_PATH, {}, device);
    await f.logs.waitFor('cannot read the kernel log; retrying');
    expect(f.logs.messages('cannot read the kernel log; retrying')[0]).toMatchObject({ reason: 'open' });
    await f.clock.advance(1000);
    await device.opened();
    device.write(IOMMU);
    await f.recorder.next(1);
    await f.stop();
  });

  it('counts a read that is no record as garbage, and does not scan it (it names no facility)', async () => {
    const device = new FakeKmsgDevice();
    const f = follow(DEVICE_PATH, {}, device);
    await device.opened();
    device.writeRaw('\u0000\u0001 not a record');
    device.writeRaw(`${IOMMU}\n`);
    device.write(IOMMU, 1004);
    device.write(AER);
    const [event] = await f.recorder.next(1);
    expect(event).toMatchObject({ kind: 'aer', busId: '0000:3B:00.0' });
    expect(await counter(f.registry, 'kmsg_read_errors_total', { reason: 'garbage' })).toBe(2);
    // `<1004>` written by user space: facility 125, a record of four digits.
    expect(await counter(f.registry, 'kmsg_records_ignored_total', { reason: 'facility' })).toBe(1);
    await f.stop();
    expect(f.recorder.events).toHaveLength(1);
  });

  it('reports no event for forged records, counts the user-space ones and logs none of them', async () => {
    const device = new FakeKmsgDevice();
    const f = follow(DEVICE_PATH, {}, device);
    await device.opened();
    for (const [text, priority] of FORGED_RECORDS) device.write(text, priority);
    device.write(XID_MESSAGE);
    const [event] = await f.recorder.next(1);
    expect(event).toMatchObject({ kind: 'xid', xid: 13, busId: '0000:91:00.0' });
    await f.stop();
    expect(f.recorder.events).toHaveLength(1);
    const userRecords = FORGED_RECORDS.filter(([, priority]) => priority >= 8).length;
    expect(await counter(f.registry, 'kmsg_records_ignored_total', { reason: 'facility' })).toBe(userRecords);
    expect(await counter(f.registry, 'kernel_events_total', { kind: 'xid' })).toBe(1);
    expect(JSON.stringify(f.logs.lines)).not.toContain('Removing from iommu group 27');
    expect(JSON.stringify(f.logs.lines)).not.toContain('(PCI:0000:3b:00)');
  });

  it('still reports the real lines of each kind as kernel records', async () => {
    const device = new FakeKmsgDevice();
    const f = follow(DEVICE_PATH, {}, device);
    await device.opened();
    device.write('NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.', 3);
    device.write(
      'NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:2330) installed in this system has\nNVRM: fallen off the bus and is not responding to commands.',
      3,
    );
    device.write(AER, 3);
    device.write(IOMMU, 6);
    const events = await f.recorder.next(6);
    expect(events.map((e) => [e.kind, e.busId, e.xid ?? e.severity])).toEqual([
      ['xid', '0000:3B:00.0', 79],
      ['removed', '0000:3B:00.0', undefined],
      ['xid', '0000:B3:00.0', 79],
      ['removed', '0000:B3:00.0', undefined],
      ['aer', '0000:3B:00.0', 'fatal'],
      ['removed', '0000:3C:00.0', undefined],
    ]);
    expect(await counter(f.registry, 'kmsg_records_ignored_total', { reason: 'facility' })).toBe(0);
    await f.stop();
  });

  it('stops at once while a read waits for the next record', async () => {
    const device = new FakeKmsgDevice();
    const f = follow(DEVICE_PATH, {}, device);
    await device.opened();
    await f.stop();
    expect(f.logs.messages('stopped following the kernel log')).toHaveLength(1);
  });
});

describe('createKmsgFollower: node-problem messages to onNodeEvent', () => {
  const DEVICE_PATH = '/dev/null';
  const HUNG = 'INFO: task python3:1234 blocked for more than 122 seconds.';
  const READ_ONLY = 'EXT4-fs (nvme0n1p1): Remounting filesystem read-only';

  /** A follower with an onNodeEvent that records; `nodeEvents(n)` waits for n of them. */
  function followNodes(
    path: string,
    device?: FakeKmsgDevice,
    onNodeEvent?: (event: NodeKernelEvent) => void,
  ) {
    const clock = new FakeClock();
    const recorder = new EventRecorder();
    const logs = new LogRecorder();
    const registry = new Registry();
    const controller = new AbortController();
    const nodes: NodeKernelEvent[] = [];
    const running = createKmsgFollower(
      { path },
      {
        onEvent: recorder.onEvent,
        onNodeEvent: (event) => {
          nodes.push(event);
          onNodeEvent?.(event);
        },
        clock,
        log: logs.log,
        registry,
        ...(device ? { openRecordDevice: device.open } : {}),
      },
    ).start(controller.signal);
    return {
      recorder,
      logs,
      registry,
      nodes,
      nodeEvents: async (count: number): Promise<NodeKernelEvent[]> => {
        await logs.waitFor('kernel node event', count);
        return [...nodes];
      },
      stop: async (): Promise<void> => {
        controller.abort();
        await running;
      },
    };
  }

  it('reports the kernel’s own node messages, not user space’s, and keeps them from onEvent', async () => {
    const device = new FakeKmsgDevice();
    const f = followNodes(DEVICE_PATH, device);
    await device.opened();
    device.write(HUNG, 11);
    device.write(HUNG, 3);
    device.write(READ_ONLY, 2);
    device.write(XID_MESSAGE, 3);
    const events = await f.nodeEvents(2);
    expect(events).toEqual([
      {
        kind: 'hung-task',
        subject: 'python3:1234',
        detail: 'task python3:1234 blocked for more than 122 s',
        at: READ_AT,
        line: HUNG,
      },
      {
        kind: 'fs-readonly',
        subject: 'nvme0n1p1',
        detail: 'nvme0n1p1 remounted read-only (ext4)',
        at: READ_AT,
        line: READ_ONLY,
      },
    ]);
    const [device0] = await f.recorder.next(1);
    expect(device0).toMatchObject({ kind: 'xid', xid: 13 });
    expect(await counter(f.registry, 'kernel_node_events_total', { kind: 'hung-task' })).toBe(1);
    expect(await counter(f.registry, 'kernel_node_events_total', { kind: 'fs-readonly' })).toBe(1);
    expect(await counter(f.registry, 'kmsg_records_ignored_total', { reason: 'facility' })).toBe(1);
    expect(await counter(f.registry, 'kernel_events_total', { kind: 'xid' })).toBe(1);
    // Every kind at debug: any can come by the hundred (the kernel check logs when a problem holds).
    const levels = f.logs.messages('kernel node event').map((line) => [line.kind, line.level]);
    expect(levels).toEqual([
      ['hung-task', 'debug'],
      ['fs-readonly', 'debug'],
    ]);
    await f.stop();
    expect(f.recorder.events).toHaveLength(1);
  });

  it('keeps the time a log file’s line carries', async () => {
    const path = join(dir, 'kern.log');
    writeFileSync(path, '');
    const f = followNodes(path);
    await f.logs.waitFor('kernel log open');
    appendFileSync(path, `2025-01-21T02:21:33,498559+00:00 ${HUNG}\n[ 5.0] eth0: link up\n`);
    const [event] = await f.nodeEvents(1);
    expect(event).toMatchObject({ kind: 'hung-task', at: '2025-01-21T02:21:33.498Z' });
    await f.stop();
  });

  it('logs a consumer that throws and reads on', async () => {
    const device = new FakeKmsgDevice();
    let calls = 0;
    const f = followNodes(DEVICE_PATH, device, () => {
      calls++;
      if (calls === 1) throw new Error('consumer broke');
    });
    await device.opened();
    device.write(HUNG, 3);
    device.write(READ_ONLY, 2);
    await f.nodeEvents(2);
    expect(f.nodes.map((event) => event.kind)).toEqual(['hung-task', 'fs-readonly']);
    expect(f.logs.messages('kernel node event consumer failed')).toHaveLength(1);
    await f.stop();
  });

  it('without onNodeEvent the same messages are not read (the device events stay as they were)', async () => {
    const device = new FakeKmsgDevice();
    const f = follow(DEVICE_PATH, {}, device);
    await device.opened();
    device.write(HUNG, 3);
    device.write(XID_MESSAGE, 3);
    await f.recorder.next(1);
    expect(await counter(f.registry, 'kernel_node_events_total', { kind: 'hung-task' })).toBe(0);
    expect(f.logs.messages('kernel node event')).toEqual([]);
    await f.stop();
  });
});

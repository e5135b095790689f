import { afterEach, describe, expect, it } from '@jest/globals';
import { lstat, mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { followStatus } from './follow-status.js';
import type { StatusFollower } from './follower.js';
import { atomicWrite, device, document, nodeEntry, waitFor } from './testing.js';
import type { FollowError, StatusUpdate } from './types.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(): Promise<{ dir: string; follow(): StatusFollower }> {
  const dir = await mkdtemp(join(tmpdir(), 'consumer-file-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return {
    dir,
    follow() {
      const follower = followStatus({ transport: 'file', dir, node: 'n1', debounceMs: 5 });
      cleanups.push(() => follower.close());
      return follower;
    },
  };
}

const changed = (f: StatusFollower, predicate: (u: StatusUpdate) => boolean, what: string) =>
  waitFor<StatusUpdate>((l) => f.onChange(l), predicate, what);
const failedWith = (f: StatusFollower, kind: string) =>
  waitFor<FollowError>(
    (l) => f.onError(l),
    (e) => e.kind === kind,
    `a ${kind} error`,
  );
const files = (doc: object): Record<string, string> => ({
  'fault.json': JSON.stringify(doc),
  version: '3.0',
});

describe('file transport', () => {
  it('lays the directory out as the kubelet does, and follows it through repeated ..data swaps', async () => {
    const { dir, follow } = await setup();
    await atomicWrite(dir, files(document(new Date())));
    const entries = await readdir(dir);
    expect(entries.filter((e) => /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$/.test(e))).toHaveLength(1);
    expect((await lstat(join(dir, '..data'))).isSymbolicLink()).toBe(true);
    expect(await readlink(join(dir, 'fault.json'))).toBe(join('..data', 'fault.json'));

    const follower = follow();
    expect((await follower.ready()).health).toBe('healthy');
    const statuses = ['degraded', 'failed', 'healthy', 'unknown', 'failed', 'healthy'] as const;
    for (const [i, status] of statuses.entries()) {
      const next = changed(follower, (u) => u.health === status, `swap ${i} to ${status}`);
      const nodes = status === 'healthy' ? [] : [nodeEntry('n1', [device(`npu${i}`, status)])];
      await atomicWrite(dir, files(document(new Date(), nodes)));
      const update = await next;
      if (status !== 'healthy') expect(update.entry?.npus[0]?.id).toBe(`npu${i}`);
    }
    // the old timestamped directories were removed as the writer does
    expect((await readdir(dir)).filter((e) => e.startsWith('..2'))).toHaveLength(1);
  });

  it('ignores a rewrite with the same content and keeps the last good document through bad ones', async () => {
    const { dir, follow } = await setup();
    const first = document(new Date(), [nodeEntry('n1', [device('npu1', 'degraded')])]);
    await atomicWrite(dir, files(first));
    const follower = follow();
    await follower.ready();
    const changes: StatusUpdate[] = [];
    follower.onChange((u) => changes.push(u));

    await atomicWrite(dir, files(first)); // same bytes
    const partial = failedWith(follower, 'invalid');
    await atomicWrite(dir, { 'fault.json': JSON.stringify(first).slice(0, 50), version: '3.0' });
    expect((await partial).message).toMatch(/not JSON/);
    expect(follower.current()?.health).toBe('degraded');

    const refused = failedWith(follower, 'version');
    await atomicWrite(dir, files({ ...first, version: '4.0' }));
    expect((await refused).message).toMatch(/"4.0" is not 3.x/);

    const missing = failedWith(follower, 'missing');
    await rm(join(dir, 'fault.json'));
    await atomicWrite(dir, { version: '3.0' });
    await missing;
    expect(follower.current()?.health).toBe('degraded');

    const back = changed(follower, (u) => u.health === 'failed', 'recovery');
    await atomicWrite(dir, files(document(new Date(), [nodeEntry('n1', [device('npu1', 'failed')])])));
    await back;
    expect(changes.map((c) => c.health)).toEqual(['failed']);
  });

  it('starts before the volume has content and picks it up when it appears', async () => {
    const { dir, follow } = await setup();
    const follower = follow();
    const errors: FollowError[] = [];
    follower.onError((e) => errors.push(e));
    const first = follower.ready();
    await atomicWrite(dir, files(document(new Date())));
    expect((await first).health).toBe('healthy');
  });
});

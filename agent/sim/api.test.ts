import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildNode } from '../../core/sim/index.js';
import { FakeClock, createLogger } from '../../platform/index.js';
import { postJson, serve, type TestServer } from '../../platform/testing.js';
import { createSimApi, readFaultToken } from './api.js';
import { FaultBoard, SIM_FAULTS_PATH } from './faults.js';

const TOKEN = 'a-fault-token-of-32-characters!!';
const open: TestServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

/** The fault API of a simulated 910B node on a loopback port, and its board. */
async function start(faultToken?: string) {
  const clock = new FakeClock();
  const node = buildNode('atlas-1', '910B', 1);
  const board = new FaultBoard(node, clock.now());
  const app = createSimApi({
    node,
    board,
    onKernelEvent: () => undefined,
    clock,
    log: createLogger({ level: 'silent' }),
    ...(faultToken === undefined ? {} : { faultToken }),
  });
  const server = await serve((req, res) => app(req, res), SIM_FAULTS_PATH);
  open.push(server);
  return { server, board };
}

const inject = (url: string, token: string | null, headers: Record<string, string> = {}) =>
  postJson(url, { kind: 'offline', device: 'npu3' }, { token, headers });

describe('the fault API with a fault token', () => {
  it('refuses every request without the bearer token (401, one line, WWW-Authenticate), injecting nothing', async () => {
    const { server, board } = await start(TOKEN);
    const missing = await inject(server.url, null);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
    expect(missing.json).toEqual({
      error: { code: 'missing_token', message: 'the fault API needs Authorization: Bearer <fault token>' },
    });
    // A wrong token of the same length, a prefix of it, a longer one, another scheme.
    for (const token of [TOKEN.replace(/.$/, '?'), TOKEN.slice(0, 16), `${TOKEN}x`])
      expect((await inject(server.url, token)).json).toEqual({
        error: { code: 'invalid_token', message: 'the bearer token is not the fault token' },
      });
    expect((await inject(server.url, null, { authorization: `Basic ${TOKEN}` })).status).toBe(401);
    for (const method of ['GET', 'DELETE'])
      expect((await postJson(server.url, '', { token: 'wrong-token', method })).status).toBe(401);
    expect(board.list()).toEqual([]);
  });

  it('takes requests with the token', async () => {
    const { server, board } = await start(TOKEN);
    const injected = await inject(server.url, TOKEN);
    expect(injected.status).toBe(201);
    expect(injected.json).toMatchObject({ kind: 'offline', device: 'npu3' });
    expect(board.list()).toHaveLength(1);
    const listed = await postJson(server.url, '', { token: TOKEN, method: 'GET' });
    expect(listed.json).toMatchObject({ node: 'atlas-1', faults: [{ kind: 'offline' }] });
  });
});

describe('the fault API without a token (loopback only: agent/config.ts refuses it elsewhere)', () => {
  it('takes requests without credentials', async () => {
    const { server } = await start();
    expect((await inject(server.url, null)).status).toBe(201);
  });
});

describe('readFaultToken', () => {
  const dir = mkdtempSync(join(tmpdir(), 'npu-fault-sim-token-'));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };

  it('reads the token, dropping the surrounding whitespace', async () => {
    await expect(readFaultToken(file('good', `${TOKEN}\n`))).resolves.toBe(TOKEN);
  });

  it('refuses a short token, one with whitespace inside, or a missing file, in one line naming the setting', async () => {
    const short = file('short', 'short-token\n');
    await expect(readFaultToken(short)).rejects.toThrow(
      `sim.faultTokenFile: ${short} must hold one token of at least 16 characters, no whitespace`,
    );
    await expect(readFaultToken(file('two', `${TOKEN} ${TOKEN}`))).rejects.toThrow(/must hold one token/);
    await expect(readFaultToken(join(dir, 'absent'))).rejects.toThrow(
      `sim.faultTokenFile: cannot read ${join(dir, 'absent')}: ENOENT`,
    );
    rmSync(dir, { recursive: true, force: true });
  });
});

/**
 * The simulated node's fault-injection API, served on the agent's local port only when the
 * sim collector is enabled:
 * - `GET /v1/sim/faults`: every fault injected, `{ node, kind, devices, faults: [...] }`;
 * - `POST /v1/sim/faults` `{ kind, device?, seconds?, celsius?, xid?, count? }`: 201 and the fault;
 * - `DELETE /v1/sim/faults/<id>`: ends one fault; `DELETE /v1/sim/faults`: ends them all.
 * Errors are one-line JSON answers naming the field (400), 404 for an unknown fault.
 *
 * With a fault token (`--sim-fault-token-file`, required unless the agent listens on loopback
 * only: agent/config.ts) every request must carry `Authorization: Bearer <token>`, else 401:
 * whoever reaches the port could otherwise report any device of the node failed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { SimNode } from '../../core/sim/index.js';
import {
  AppError,
  HttpError,
  httpFailureOf,
  sendHttpFailure,
  type Clock,
  type Logger,
} from '../../platform/index.js';
import type { KernelEventLike } from '../sampler/index.js';
import { SIM_FAULTS_PATH, simFaultRequestSchema, SimFaultError, type FaultBoard } from './faults.js';

const MAX_BODY_BYTES = 16 * 1024;

/** What the API acts on. */
export interface SimApiDeps {
  node: SimNode;
  board: FaultBoard;
  /** An `xid` fault is logged by the "kernel": it enters the agent like a kmsg line would. */
  onKernelEvent: (event: KernelEventLike) => void;
  clock: Clock;
  log: Logger;
  /** The bearer token every request must carry (readFaultToken); undefined: none asked. */
  faultToken?: string;
}

/** Shortest fault token taken: a guessable one would protect nothing. */
export const MIN_FAULT_TOKEN_LENGTH = 16;

/** The fault token in `file` (surrounding whitespace dropped); throws one line naming the setting. */
export async function readFaultToken(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new Error(`sim.faultTokenFile: cannot read ${file}: ${code}`, { cause: error });
  }
  const token = text.trim();
  if (token.length < MIN_FAULT_TOKEN_LENGTH || /\s/.test(token))
    throw new Error(
      `sim.faultTokenFile: ${file} must hold one token of at least ${MIN_FAULT_TOKEN_LENGTH} characters, no whitespace`,
    );
  return token;
}

/**
 * Refuses (401) a request without `Authorization: Bearer <token>`. The comparison is of
 * SHA-256 digests in constant time: neither the token's length nor its matching prefix shows
 * in the answer's timing.
 */
function requireToken(token: string): express.RequestHandler {
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
  const expected = digest(token);
  return (req, _res, next) => {
    const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(req.headers.authorization ?? '');
    if (!match)
      throw new AppError('missing_token', 'the fault API needs Authorization: Bearer <fault token>', {
        status: 401,
      });
    if (!timingSafeEqual(digest(match[1] as string), expected))
      throw new AppError('invalid_token', 'the bearer token is not the fault token', { status: 401 });
    next();
  };
}

/** The fault API as an express app (mounted before the agent's local API). */
export function createSimApi(deps: SimApiDeps): express.Express {
  const { node, board, clock, log } = deps;
  const app = express();
  app.disable('x-powered-by');
  if (deps.faultToken !== undefined) app.use(requireToken(deps.faultToken));
  app.use(SIM_FAULTS_PATH, express.json({ limit: MAX_BODY_BYTES }));
  app.get(SIM_FAULTS_PATH, (_req, res) => {
    res.json({
      node: node.name,
      kind: node.kind,
      devices: node.devices.map((d) => d.id),
      faults: board.list(),
    });
  });
  app.post(SIM_FAULTS_PATH, (req, res) => {
    const parsed = simFaultRequestSchema.safeParse(req.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue && issue.path.length > 0 ? issue.path.join('.') : 'body';
      throw new HttpError(400, `${field}: ${issue?.message ?? 'invalid'}`);
    }
    let fault;
    try {
      fault = board.add(parsed.data, clock.now());
    } catch (error) {
      if (error instanceof SimFaultError) throw new HttpError(400, error.message);
      throw error;
    }
    log.info({ fault }, 'simulated fault injected');
    if (fault.kind === 'xid') {
      const device = node.devices.find((d) => d.id === fault.device);
      deps.onKernelEvent({
        kind: 'xid',
        busId: device?.busId ?? null,
        xid: fault.xid ?? 79,
        at: new Date(fault.from).toISOString(),
        line: `NVRM: Xid (PCI:${device?.busId ?? '?'}): ${fault.xid ?? 79}, simulated`,
      });
    }
    res.status(201).json(fault);
  });
  app.delete(SIM_FAULTS_PATH, (_req, res) => {
    res.json({ ended: board.endAll(clock.now()) });
  });
  app.delete(`${SIM_FAULTS_PATH}/:id`, (req, res) => {
    const id = Number(req.params.id);
    if (!Number.isInteger(id) || !board.end(id, clock.now()))
      throw new HttpError(404, `no open fault ${String(req.params.id).slice(0, 32)}`);
    res.json({ ended: 1 });
  });
  app.all(SIM_FAULTS_PATH, () => {
    throw new HttpError(405, 'GET, POST or DELETE');
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendHttpFailure(res, httpFailureOf(error, MAX_BODY_BYTES), {
      log,
      what: 'sim fault',
      retryAfterSeconds: 1,
      error,
      allow: 'GET, POST, DELETE',
    });
  });
  return app;
}

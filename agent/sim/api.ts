/**
 * The simulated node's fault-injection API, served on the agent's local port only when the
 * sim collector is enabled:
 * - `GET /v1/sim/faults`: every fault injected, `{ node, kind, devices, faults: [...] }`;
 * - `POST /v1/sim/faults` `{ kind, device?, seconds?, celsius?, xid?, count? }`: 201 and the fault;
 * - `DELETE /v1/sim/faults/<id>`: ends one fault; `DELETE /v1/sim/faults`: ends them all.
 * Errors are one-line JSON answers naming the field (400), 404 for an unknown fault.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { SimNode } from '../../core/sim/index.js';
import { HttpError, httpFailureOf, sendHttpFailure, type Clock, type Logger } from '../../platform/index.js';
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
}

/** The fault API as an express app (mounted before the agent's local API). */
export function createSimApi(deps: SimApiDeps): express.Express {
  const { node, board, clock, log } = deps;
  const app = express();
  app.disable('x-powered-by');
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

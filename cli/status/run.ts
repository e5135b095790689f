/**
 * Shows the status once, or follows it (`--watch`). On a terminal a watch clears the screen
 * and redraws at every change and every second (ages move); on a pipe it appends a rendering
 * only when the document changed beyond its heartbeat (`timestamp`), so a log of it shows
 * changes, not one copy a second.
 *
 * Exit 0 shown, 1 missing / unknown major / invalid / the API refused (one line), 1 stale
 * with --fail-stale.
 */
import { STATUS_CONFIGMAP_NAME, type PublishedDocument } from '../../contracts/index.js';
import { EXIT_DATA, type CliIO } from '../io.js';
import { KubeCommandError } from '../kube.js';
import { isStale, staleWarning } from './age.js';
import type { StatusOptions } from './args.js';
import { decodeStatus, type Decoded } from './decode.js';
import type { StatusApi, StatusConfigMap } from './read.js';
import { renderStatus } from './render.js';

/** How often a watch on a terminal redraws with nothing new (ages move). */
export const REDRAW_MS = 1000;

/** What runStatus needs besides the options. */
export interface StatusDeps {
  api: StatusApi;
  io: CliIO;
  /** Milliseconds since the epoch. */
  now: () => number;
  /** Colour allowed: stdout is a terminal and NO_COLOR is unset. */
  color: boolean;
  /** Ends a watch (Ctrl-C). */
  signal: AbortSignal;
  /** Calls `fn` every `ms` until the returned function is called (the terminal redraw). */
  every: (ms: number, fn: () => void) => () => void;
}

const CLEAR_SCREEN = '\x1b[H\x1b[2J';

/** Shows the status once, or follows it with `options.watch`. */
export async function runStatus(options: StatusOptions, deps: StatusDeps): Promise<number> {
  const { api, io } = deps;
  const where = `${options.namespace}/${STATUS_CONFIGMAP_NAME}`;
  const missing = `no status published in ${where}: is the controller running?`;
  const fail = (line: string): number => {
    io.stderr(`npu-fault status: ${line}\n`);
    return EXIT_DATA;
  };
  const render = (document: PublishedDocument): string =>
    renderStatus(document, {
      output: options.output,
      node: options.node,
      now: deps.now(),
      color: deps.color,
      staleAfterMs: options.staleAfterMs,
    });
  let first: StatusConfigMap | undefined;
  try {
    first = await api.read();
  } catch (error) {
    if (error instanceof KubeCommandError) return fail(error.message);
    throw error;
  }
  if (!first) return fail(missing);
  const decoded = decodeStatus(first.data, where);
  if ('error' in decoded) return fail(decoded.error);
  if (!options.watch) {
    io.stdout(render(decoded.document));
    if (!isStale(decoded.document, deps.now(), options.staleAfterMs)) return 0;
    io.stderr(`npu-fault status: ${staleWarning(decoded.document, deps.now(), options.staleAfterMs)}\n`);
    return options.failStale ? EXIT_DATA : 0;
  }
  return await followStatus(options, deps, first, { where, missing, render });
}

async function followStatus(
  options: StatusOptions,
  deps: StatusDeps,
  first: StatusConfigMap,
  text: { where: string; missing: string; render: (document: PublishedDocument) => string },
): Promise<number> {
  const { io } = deps;
  const tty = io.isTTY;
  let current: Decoded = decodeStatus(first.data, text.where);
  let lastShown: string | undefined;
  let warnedStale = false;
  const show = (): void => {
    if ('error' in current) {
      const line = `npu-fault status: ${current.error}\n`;
      if (tty) io.stdout(`${CLEAR_SCREEN}${line}`);
      else if (line !== lastShown) io.stderr(line);
      lastShown = line;
      return;
    }
    const document = current.document;
    if (tty) io.stdout(`${CLEAR_SCREEN}${text.render(document)}`);
    else {
      // On a pipe: only changes beyond the heartbeat are appended.
      const key = JSON.stringify({ ...document, timestamp: '' });
      if (key !== lastShown) io.stdout(`${lastShown === undefined ? '' : '\n'}${text.render(document)}`);
      lastShown = key;
    }
    const stale = isStale(document, deps.now(), options.staleAfterMs);
    if (stale && !warnedStale)
      io.stderr(`npu-fault status: ${staleWarning(document, deps.now(), options.staleAfterMs)}\n`);
    warnedStale = stale;
  };
  show();
  const stopRedraw = tty ? deps.every(REDRAW_MS, show) : deps.every(REDRAW_MS, checkStaleOnly);
  function checkStaleOnly(): void {
    if ('error' in current) return;
    const stale = isStale(current.document, deps.now(), options.staleAfterMs);
    if (stale && !warnedStale)
      io.stderr(`npu-fault status: ${staleWarning(current.document, deps.now(), options.staleAfterMs)}\n`);
    warnedStale = stale;
  }
  try {
    await deps.api.follow(
      first.resourceVersion,
      (configMap) => {
        current = configMap ? decodeStatus(configMap.data, text.where) : { error: text.missing };
        show();
      },
      deps.signal,
    );
  } catch (error) {
    if (error instanceof KubeCommandError) {
      io.stderr(`npu-fault status: ${error.message}\n`);
      return EXIT_DATA;
    }
    throw error;
  } finally {
    stopRedraw();
  }
  return 0;
}
